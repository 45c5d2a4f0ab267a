/* commands.h - the `remat` subcommands; each lives in tools/cmd_<name>.c. */
#ifndef REMAT_TOOLS_COMMANDS_H
#define REMAT_TOOLS_COMMANDS_H

#include "core/base/version.h" /* REMAT_VERSION */

#ifdef __cplusplus
extern "C" {
#endif

int remat_cmd_run(int argc, char **argv);
int remat_cmd_simulate(int argc, char **argv);
int remat_cmd_search(int argc, char **argv);
int remat_cmd_tune(int argc, char **argv);
int remat_cmd_verify(int argc, char **argv);
int remat_cmd_plot(int argc, char **argv);
int remat_cmd_demo(int argc, char **argv);
int remat_cmd_import_torch(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
