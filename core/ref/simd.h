/* simd.h - which instruction-set path the reference backend's GEMM and element-wise
 * kernels (neuron, add, dropout, batch norm, pooling) run, chosen at run time (the
 * build targets baseline x86-64; the AVX2 and AVX-512 code is compiled per function for its instruction sets
 * and only called where the CPU has them).
 *
 * Every path gives the same bits (gemm_kernel.h: one fused multiply-add chain per
 * element, k ascending; elem_kernel.h: the same IEEE operations per element); the
 * path changes the speed only.
 *  - scalar: baseline x86-64 (SSE2): fmaf() chains, the element-wise loops 4 wide;
 *  - avx2:   AVX2 + FMA, 6 x 16 GEMM tiles, the element-wise loops 8 wide;
 *  - avx512: AVX-512 F, BW, DQ and VL (Skylake-SP and later, Zen 4), 12 x 32 GEMM
 *            tiles, the element-wise loops 16 wide.
 * The default is the widest path the CPU supports, unless the environment variable
 * REMAT_SIMD (scalar | avx2 | avx512) names another one it supports; it is read once,
 * at the first GEMM or query. remat_ref_simd_set() changes the path for later calls.
 */
#ifndef REMAT_REF_SIMD_H
#define REMAT_REF_SIMD_H

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { REMAT_SIMD_SCALAR = 0, REMAT_SIMD_AVX2 = 1, REMAT_SIMD_AVX512 = 2, REMAT_SIMD_COUNT = 3 } remat_simd;

/* "scalar", "avx2", "avx512" ("?" for anything else). */
const char *remat_ref_simd_name(remat_simd p);
/* 0 and *out set when s names a path; -1 otherwise. */
int remat_ref_simd_parse(const char *s, remat_simd *out);
/* 1 when this CPU and OS can run path p (CPUID and the enabled register state). */
int remat_ref_simd_supported(remat_simd p);
/* The widest supported path. */
remat_simd remat_ref_simd_best(void);
/* The path the GEMMs use now (see above for the default). */
remat_simd remat_ref_simd_get(void);
/* Uses path p from now on: 0, or -1 (and no change) when p is not supported. */
int remat_ref_simd_set(remat_simd p);
/* Applies REMAT_SIMD strictly: REMAT_OK when unset or naming a supported path (then in
 * use); REMAT_ERR_INPUT with one line "REMAT_SIMD: <field>: <expected>" otherwise.
 * (The lazy default only warns on stderr and keeps the widest path.) */
remat_status remat_ref_simd_from_env(remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
