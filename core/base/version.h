/* version.h - remat's release version: what `remat --version` prints and what every
 * trace records as the version of its writer (bumped with each release of the
 * formats or the command line). */
#ifndef REMAT_BASE_VERSION_H
#define REMAT_BASE_VERSION_H

#define REMAT_VERSION "0.4.0"

#endif
