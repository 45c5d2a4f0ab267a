/* gemm_kernel.h - the interface between the GEMM driver (core/ref/gemm.c) and its
 * micro-kernels (gemm_scalar.c, gemm_avx2.c, gemm_avx512.c). Internal to the reference
 * backend and its tests; callers use ref_kernels.h and simd.h.
 *
 * A micro-kernel computes one MR x NR tile of C from packed panels:
 *
 *     c[r*ldc + j] = (load ? c[r*ldc + j] : +0.0f);
 *     for k = 0 .. kc-1:  c[r*ldc + j] = fma(ap[k*MR + r], bp[k*NR + j], c[r*ldc + j])
 *
 * with a single-rounding fused multiply-add, k ascending, nothing else: no partial
 * sums, no reassociation. That chain is the whole contract; MR, NR and the blocking are
 * the kernel's choice and change no bit (the driver never splits K across threads and
 * continues a chain over K blocks by storing and reloading C, which is exact).
 * ap: kc*MR floats, bp: kc*NR floats, c: MR rows ldc floats apart, no alignment needed.
 */
#ifndef REMAT_GEMM_KERNEL_H
#define REMAT_GEMM_KERNEL_H

#include <stdint.h>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*remat_gemm_tile_fn)(int64_t kc, const float *ap, const float *bp, float *c, int64_t ldc, int load);

typedef struct remat_gemm_kernel {
    const char *name;
    int mr, nr;          /* the tile; mr * nr <= REMAT_GEMM_MAX_TILE */
    int64_t kc, mc, nc;  /* cache blocking: K block, M block (multiple of mr), N block (multiple of nr) */
    remat_gemm_tile_fn tile;
    /* Optional (NULL: none): the same chain for the tile's first nr/2 columns only, on the
     * same packed panels (bp still nr floats per k); for edge tiles that narrow. */
    remat_gemm_tile_fn tile_half;
} remat_gemm_kernel;

#define REMAT_GEMM_MAX_TILE (16 * 32)

/* The kernels. Only call one whose path remat_ref_simd_supported() reports (simd.h):
 * the AVX2 and AVX-512 ones are compiled for those instruction sets only. */
extern const remat_gemm_kernel remat_gemm_kernel_scalar;
extern const remat_gemm_kernel remat_gemm_kernel_avx2;
extern const remat_gemm_kernel remat_gemm_kernel_avx512;
/* Tests only (//core:gemm_avx512_emulated): gemm_avx512.c's kernel on SIMDe's portable
 * AVX-512 intrinsics; needs AVX2 + FMA. */
extern const remat_gemm_kernel remat_gemm_kernel_avx512_emulated;

typedef enum { REMAT_GEMM_NT, REMAT_GEMM_NN, REMAT_GEMM_TN } remat_gemm_layout;

/* The GEMMs of ref_kernels.h (nt: C (+)= A B^T, nn: A B, tn: A^T B) on a given kernel,
 * with remat_ref_get_threads() threads. Same bits for every kernel. */
void remat_gemm_with(const remat_gemm_kernel *k, remat_gemm_layout layout, float *C, const float *A, const float *B,
                     int64_t M, int64_t N, int64_t K, int accumulate);

/* The same GEMM on the current path, each operand stored as float or, where its flag is
 * set, as bf16 (uint16_t bit patterns: core/base/bf16.h). bf16 inputs are widened
 * exactly; a bf16 C is read widened (accumulate) and its finished chain is stored
 * rounded to nearest even, once: the result is the float GEMM's, rounded. */
void remat_gemm_typed(remat_gemm_layout layout, void *C, int c16, const void *A, int a16, const void *B, int b16,
                      int64_t M, int64_t N, int64_t K, int accumulate);

/* A GEMM described in full, for kernels that feed the driver their own operands
 * (conv.c's implicit GEMM). C(i,j), i < M, j < N, is the float (or, with c16, bf16)
 * at C + (j / c_group) * c_group_stride + i * ldc + j % c_group: rows ldc apart, the
 * columns in groups of c_group (one sample's pixels), each group c_group_stride apart;
 * c_group 0 means one group (C(i,j) at i * ldc + j). A(i,k) is at A + i*a_rs + k*a_cs
 * (bf16 with a16), B(k,j) at B + k*b_rs + j*b_cs, unless pack_a / pack_b is set: then
 * the driver asks the packer for its panels instead of reading A / B.
 *
 * A packer writes one panel: dst[k * width + r] = X(first + r, k0 + k) for r < count
 * and 0 for count <= r < width, k < kc, where X(r, k) is A(r, k) for pack_a and
 * B(k, r) for pack_b. It must write exactly those floats: the chain of every element
 * is then the contract's, on the operands the packer describes. It is called from
 * every thread of the call at once (ctx is shared, read only), and with width 1,
 * count 1, kc 1 when packing buffers cannot be allocated. */
typedef void (*remat_gemm_pack_fn)(const void *ctx, float *dst, int width, int64_t first, int64_t count, int64_t k0,
                                   int64_t kc);

/* For packers: n floats copied (zeroed) with SIMD moves, for short runs (a panel row):
 * core/BUILD keeps GCC from turning such loops into C library calls. */
static inline void remat_gemm_copy_floats(float *dst, const float *src, int64_t n) {
    int64_t i = 0;
#if defined(__SSE2__)
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(dst + i, _mm_loadu_ps(src + i));
    if (i + 2 <= n) _mm_storel_pi((__m64 *)(dst + i), _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(src + i))), i += 2;
    if (i < n) dst[i] = src[i];
#else
    for (; i < n; i++) dst[i] = src[i];
#endif
}
static inline void remat_gemm_zero_floats(float *dst, int64_t n) {
    int64_t i = 0;
#if defined(__SSE2__)
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(dst + i, _mm_setzero_ps());
    if (i + 2 <= n) _mm_storel_pi((__m64 *)(dst + i), _mm_setzero_ps()), i += 2;
    if (i < n) dst[i] = 0.0f;
#else
    for (; i < n; i++) dst[i] = 0.0f;
#endif
}

/* For packers: a strided operand into a panel, dst[k * ld + r] = X(r, k) =
 * src[r * rs + k * cs] (a bf16 src, with b16, widened exactly) for r < count, k < kc,
 * and 0 for count <= r < width (width <= ld): the floats a packer must write, moved
 * with SIMD transposes where cs == 1 (the driver's own packing uses the same code). */
void remat_gemm_pack_strided(float *dst, int64_t ld, int64_t width, const void *src, int b16, int64_t rs, int64_t cs,
                             int64_t count, int64_t kc);

typedef struct remat_gemm_desc {
    void *C;
    int c16;
    int64_t ldc, c_group, c_group_stride;
    const void *A;
    int a16;
    int64_t a_rs, a_cs;
    remat_gemm_pack_fn pack_a;
    const void *pack_a_ctx;
    const void *B;
    int b16;
    int64_t b_rs, b_cs;
    remat_gemm_pack_fn pack_b;
    const void *pack_b_ctx;
    int64_t M, N, K;
    int accumulate;
} remat_gemm_desc;

/* The GEMM of d on the current path / on kernel k, remat_ref_get_threads() threads. */
void remat_gemm_desc_run(const remat_gemm_desc *d);
void remat_gemm_desc_run_with(const remat_gemm_kernel *k, const remat_gemm_desc *d);
/* The tile (MR x NR) of the current path's micro-kernel: for callers that choose between
 * two orientations of one product (conv.c's weight gradient); it changes no bit. */
void remat_gemm_current_tile(int *mr, int *nr);
/* The block [m0, m1) x [n0, n1) of d's GEMM (clipped to M x N) on the current path, on
 * the calling thread only (for a caller that splits its work over threads itself:
 * conv.c's input gradient). Which elements share a call changes no element's chain. */
void remat_gemm_desc_run_block(const remat_gemm_desc *d, int64_t m0, int64_t m1, int64_t n0, int64_t n1);

#ifdef __cplusplus
}
#endif
#endif
