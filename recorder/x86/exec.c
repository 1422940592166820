/*
 * x86rec-exec: preloaded (LD_PRELOAD) into every program `vmlab record` runs under
 * qemu-x86_64, so that programs it executes are recorded too.
 *
 * QEMU's linux-user mode does not follow execve: it hands the call to the host kernel, and the
 * new program would run natively, unseen. This library wraps the C library's exec family,
 * posix_spawn(p) and system() so that the new program runs under a new qemu-x86_64 with the
 * recorder plugin (x86rec.c) instead: a new process image of the same recording. A `#!` script
 * is run as its interpreter would be (QEMU runs only ELF files). Statically linked programs,
 * programs that make the execve system call themselves and the C library's own spawns (popen)
 * are not followed.
 *
 * The recording's settings come from the environment, set by `vmlab record`:
 * VMLAB_REC_QEMU (the emulator), VMLAB_REC_PLUGIN (x86rec.so), VMLAB_REC_DIR (the raw files'
 * folder) and VMLAB_REC_PRELOAD (this library). They are read once at load and passed on with
 * `-E`, so a program that clears its environment is still followed; LD_PRELOAD itself is taken
 * out of the host environment of the new emulator (which must not load this library) and given
 * to its guest with `-E`.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static char *qemu, *plugin, *dir, *preload;

__attribute__((constructor)) static void load_settings(void)
{
    const char *v;
    if ((v = getenv("VMLAB_REC_QEMU"))) qemu = strdup(v);
    if ((v = getenv("VMLAB_REC_PLUGIN"))) plugin = strdup(v);
    if ((v = getenv("VMLAB_REC_DIR"))) dir = strdup(v);
    if ((v = getenv("VMLAB_REC_PRELOAD"))) preload = strdup(v);
}

static int recording(void) { return qemu && plugin && dir && preload; }

/* The emulator's command line for running `path` with `argv`: a NULL-terminated array from
 * malloc (strings too; never freed: the caller execs or exits soon). */
static char **emulator_argv(const char *path, char *const argv[], const char *interp,
                            const char *interp_arg)
{
    size_t argc = 0;
    while (argv && argv[argc]) {
        argc++;
    }
    char **out = calloc(argc + 32, sizeof *out);
    char maps[PATH_MAX], plugin_arg[PATH_MAX * 2];
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(maps, sizeof maps, "%s/m%d-%lld%09ld.maps", dir, (int)getpid(),
             (long long)ts.tv_sec, ts.tv_nsec);
    snprintf(plugin_arg, sizeof plugin_arg, "%s,dir=%s,maps=%s", plugin, dir, maps);
    size_t n = 0;
    out[n++] = qemu;
    out[n++] = "-d";
    out[n++] = "page";
    out[n++] = "-D";
    out[n++] = strdup(maps);
    out[n++] = "-plugin";
    out[n++] = strdup(plugin_arg);
    const char *vars[][2] = { { "LD_PRELOAD", preload }, { "VMLAB_REC_QEMU", qemu },
                              { "VMLAB_REC_PLUGIN", plugin }, { "VMLAB_REC_DIR", dir },
                              { "VMLAB_REC_PRELOAD", preload } };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        out[n++] = "-E";
        if (asprintf(&out[n++], "%s=%s", vars[i][0], vars[i][1]) < 0) {
            return NULL;
        }
    }
    if (interp) {
        /* A script: its interpreter runs with the script's path as an argument. */
        out[n++] = "-0";
        out[n++] = (char *)interp;
        out[n++] = (char *)interp;
        if (interp_arg) {
            out[n++] = (char *)interp_arg;
        }
        out[n++] = (char *)path;
    } else {
        out[n++] = "-0";
        out[n++] = argc ? argv[0] : (char *)path;
        out[n++] = (char *)path;
    }
    for (size_t i = 1; i < argc; i++) {
        out[n++] = argv[i];
    }
    out[n] = NULL;
    return out;
}

/* `envp` without LD_PRELOAD (the emulator's own environment must not load this library). */
static char **host_env(char *const envp[])
{
    size_t n = 0;
    while (envp && envp[n]) {
        n++;
    }
    char **out = calloc(n + 1, sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(envp[i], "LD_PRELOAD=", 11) != 0) {
            out[k++] = envp[i];
        }
    }
    out[k] = NULL;
    return out;
}

/* For a `#!` script, its interpreter and optional argument (static buffers). Returns 0 when
 * `path` is not a script. */
static int shebang(const char *path, char **interp, char **arg)
{
    static char line[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    if (n < 3 || line[0] != '#' || line[1] != '!') {
        return 0;
    }
    line[n] = 0;
    char *end = strchr(line, '\n');
    if (end) {
        *end = 0;
    }
    char *p = line + 2;
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    *interp = p;
    while (*p && *p != ' ' && *p != '\t') {
        p++;
    }
    *arg = NULL;
    if (*p) {
        *p++ = 0;
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (*p) {
            *arg = p;
        }
    }
    return **interp != 0;
}

/* The recorded replacement of execve: errors as execve would give them, then the emulator. */
static int exec_recorded(const char *path, char *const argv[], char *const envp[])
{
    if (access(path, X_OK) != 0) {
        return -1; /* errno as execve would set it */
    }
    char *interp = NULL, *arg = NULL;
    int script = shebang(path, &interp, &arg);
    char **args = emulator_argv(path, argv, script ? interp : NULL, script ? arg : NULL);
    if (!args) {
        errno = ENOMEM;
        return -1;
    }
    return (int)syscall(SYS_execve, qemu, args, host_env(envp));
}

int execve(const char *path, char *const argv[], char *const envp[])
{
    if (!recording()) {
        return (int)syscall(SYS_execve, path, argv, envp);
    }
    return exec_recorded(path, argv, envp);
}

int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

/* PATH search as the C library does it: every directory, the first executable wins, EACCES
 * remembered. */
int execvpe(const char *file, char *const argv[], char *const envp[])
{
    if (strchr(file, '/')) {
        return execve(file, argv, envp);
    }
    const char *search = getenv("PATH");
    if (!search) {
        search = "/bin:/usr/bin";
    }
    char buf[PATH_MAX];
    int denied = 0;
    for (const char *p = search;; p++) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)len, p, len ? "/" : "", file);
        execve(buf, argv, envp);
        if (errno == EACCES) {
            denied = 1;
        }
        if (!colon) {
            break;
        }
        p = colon;
    }
    errno = denied ? EACCES : ENOENT;
    return -1;
}

int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

/* The variadic forms collect their arguments (and execle its environment). */
#define COLLECT(first, ap, args)                                                               \
    size_t count = 1;                                                                          \
    va_start(ap, first);                                                                       \
    while (va_arg(ap, char *)) {                                                               \
        count++;                                                                               \
    }                                                                                          \
    va_end(ap);                                                                                \
    char *args[count + 1];                                                                     \
    args[0] = (char *)(first);                                                                 \
    va_start(ap, first);                                                                       \
    for (size_t i = 1; i <= count; i++) {                                                      \
        args[i] = va_arg(ap, char *);                                                          \
    }

int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    COLLECT(arg, ap, args);
    va_end(ap);
    return execve(path, args, environ);
}

int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    COLLECT(arg, ap, args);
    va_end(ap);
    return execvpe(file, args, environ);
}

int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    COLLECT(arg, ap, args);
    char **envp = va_arg(ap, char **);
    va_end(ap);
    return execve(path, args, envp);
}

typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);

static int spawn_recorded(const char *name, pid_t *pid, const char *path,
                          const posix_spawn_file_actions_t *actions,
                          const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    spawn_fn real = (spawn_fn)dlsym(RTLD_NEXT, name);
    if (!recording()) {
        return real(pid, path, actions, attr, argv, envp);
    }
    char resolved[PATH_MAX];
    if (!strchr(path, '/')) {
        /* posix_spawnp: resolve the name the way execvp would. */
        const char *search = getenv("PATH");
        search = search ? search : "/bin:/usr/bin";
        int found = 0;
        for (const char *p = search; !found;) {
            const char *colon = strchr(p, ':');
            size_t len = colon ? (size_t)(colon - p) : strlen(p);
            snprintf(resolved, sizeof resolved, "%.*s%s%s", (int)len, p, len ? "/" : "", path);
            found = access(resolved, X_OK) == 0;
            if (!colon) {
                break;
            }
            p = colon + 1;
        }
        if (!found) {
            return ENOENT;
        }
        path = resolved;
    } else if (access(path, X_OK) != 0) {
        return errno;
    }
    char *interp = NULL, *arg = NULL;
    int script = shebang(path, &interp, &arg);
    char **args = emulator_argv(path, argv, script ? interp : NULL, script ? arg : NULL);
    if (!args) {
        return ENOMEM;
    }
    spawn_fn plain = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
    return plain(pid, qemu, actions, attr, args, host_env(envp));
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return spawn_recorded("posix_spawn", pid, path, actions, attr, argv, envp);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return spawn_recorded("posix_spawnp", pid, file, actions, attr, argv, envp);
}

/* system(3): the C library spawns /bin/sh through an internal call this library cannot see,
 * so it is redone here with fork and the recorded execve (signal dispositions as POSIX asks:
 * SIGINT and SIGQUIT ignored, SIGCHLD blocked in the caller while it waits). */
int system(const char *command)
{
    if (!command) {
        return 1;
    }
    struct sigaction ignore = { .sa_handler = SIG_IGN }, old_int, old_quit;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    sigset_t chld, old_mask;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old_mask);
    pid_t pid = fork();
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        char *const argv[] = { "sh", "-c", (char *)command, NULL };
        execve("/bin/sh", argv, environ);
        _exit(127);
    }
    int status = -1;
    if (pid > 0) {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    return status;
}
