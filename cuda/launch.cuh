/* launch.cuh - REMAT_LAUNCH(grid, block, smem, stream, kernel)(args...): a kernel
 * launch, `kernel<<<grid, block, smem, stream>>>(args...)` under nvcc, and a queued
 * launch on the CPU emulator (cuda/emu/device.h) when the .cu files are compiled by the
 * host compiler (REMAT_CUDA_EMU). The kernel comes last so that a template's commas
 * need no parentheses. Follow it with cudaCheckLaunch(), as every launch.
 */
#ifndef REMAT_CUDA_LAUNCH_CUH
#define REMAT_CUDA_LAUNCH_CUH

#if defined(REMAT_CUDA_EMU)
#define REMAT_LAUNCH(grid, block, smem, stream, ...) \
    remat_emu::make_launcher(#__VA_ARGS__, (grid), (block), (smem), (stream), &__VA_ARGS__)
#else
#define REMAT_LAUNCH(grid, block, smem, stream, ...) __VA_ARGS__<<<(grid), (block), (smem), (stream)>>>
#endif

#endif
