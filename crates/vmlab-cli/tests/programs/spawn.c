/*
 * Runs `echo spawned` through posix_spawnp and waits for it, for the recorder tests
 * (crates/vmlab-cli/tests/record.rs): the C library clones with CLONE_VM | CLONE_VFORK, which
 * QEMU turns into a fork, and the recorder's exec library must run the child under the recorder.
 */
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

int main(void)
{
    char *argv[] = { "echo", "spawned", 0 };
    pid_t pid;
    if (posix_spawnp(&pid, "echo", 0, 0, argv, environ) != 0) {
        return 2;
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}
