/* vmlab-mark: emits one phase marker for the recorder. `vmlab-mark boot` is the end of the
 * boot (BOOT_END_MARK: the recorder writes the trace's BootEnd record); `vmlab-mark ID`
 * emits marker ID (decimal or 0x hex, below 0x10000). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phases.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: vmlab-mark boot|ID\n");
        return 2;
    }
    if (!strcmp(argv[1], "boot")) {
        mark(BOOT_END_MARK);
        return 0;
    }
    char *end;
    unsigned long id = strtoul(argv[1], &end, 0);
    if (*end || id >= 0x10000) {
        fprintf(stderr, "vmlab-mark: bad id %s\n", argv[1]);
        return 2;
    }
    mark((unsigned)id);
    return 0;
}
