/* cmd_verify.c - placeholder until the owning issue lands (replace this file). */
#include <stdio.h>

#include "tools/commands.h"

int remat_cmd_verify(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "remat verify: not built in this version\n");
    return 2;
}
