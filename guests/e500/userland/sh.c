/* sh: only `sh -c "prog arg..."`: splits the command on spaces and execs it from /bin. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "-c") != 0) {
        fprintf(stderr, "usage: sh -c 'prog arg...'\n");
        return 2;
    }
    char *args[32];
    int n = 0;
    for (char *t = strtok(argv[2], " "); t && n < 31; t = strtok(NULL, " ")) {
        args[n++] = t;
    }
    args[n] = NULL;
    if (n == 0) {
        return 0;
    }
    char path[256];
    snprintf(path, sizeof path, "%s%s", args[0][0] == '/' ? "" : "/bin/", args[0]);
    execv(path, args);
    perror(path);
    return 127;
}
