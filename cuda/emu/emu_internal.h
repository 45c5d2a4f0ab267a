/* emu_internal.h - what the emulator's files share: the stream queue, the device
 * allocations, the launch runner and the fatal report. Not part of any API. */
#ifndef REMAT_CUDA_EMU_INTERNAL_H
#define REMAT_CUDA_EMU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <functional>

#include "cuda/emu/cuda_runtime.h"

namespace remat_emu {

/* Prints "remat: CUDA emulator: <what>" and aborts: a bug the emulator caught that a
 * GPU would turn into a fault, a hang or a wrong result. */
[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Queues work in stream order (every stream shares one queue: the backend uses one). */
void enqueue(std::function<void()> op);
/* Runs everything queued (a synchronising call). */
void drain();

/* Whether [p, p + bytes) lies inside one cudaMalloc allocation. */
bool is_device(const void *p, size_t bytes);
/* Whether p lies inside a cudaMallocHost allocation (pinned: asynchronous copies). */
bool is_pinned(const void *p, size_t bytes);

/* Sets the sticky-until-read error of cudaGetLastError. */
void set_last_error(cudaError_t e);

/* Runs one launch now, block by block (scheduler.cc). */
void run_grid(const char *kernel, dim3 grid, dim3 block, void (*run)(void *), void *closure);

}  // namespace remat_emu

#endif
