/* cmd_tune.c - placeholder until the owning issue lands (replace this file). */
#include <stdio.h>

#include "tools/commands.h"

int remat_cmd_tune(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "remat tune: not built in this version\n");
    return 2;
}
