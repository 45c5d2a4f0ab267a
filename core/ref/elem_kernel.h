/* elem_kernel.h - the two pieces every element-wise reference kernel (neuron.c, batchnorm.c,
 * elementwise.c) is built from. Internal to core/ref/; callers use ref_kernels.h.
 *
 * 1. Activation access. A kernel reads and writes an activation element (a layer
 *    output or its gradient) only through act_ld / act_st of act.h, with a storage
 *    kind (b16: fp32 or bf16) that is a compile-time constant at every call; its bf16
 *    storage twin is one more REMAT_ELEM_CLONES line in the kernel's file. State that
 *    is always fp32 (the neuron's h, v and gv, the dropout mask) is plain float arrays.
 *
 * 2. Per-path copies. A kernel's arithmetic is ONE always_inline body; the macro
 *    REMAT_ELEM_CLONES(name, params, args, call) wraps it in three functions compiled for
 *    baseline x86-64 (SSE2), AVX2 + FMA and AVX-512 by function attributes, and a
 *    dispatcher `name` that runs the copy of the path remat_ref_simd_get() reports
 *    (simd.h), read once per call, as the GEMM does. GCC auto-vectorises each copy for
 *    its instruction set (the bodies are written for it: restrict pointers, ivdep,
 *    branch-free selects, no early exits).
 *
 * Why the copies give the same bits (the element-wise contract is per element): the
 * build has -ffp-contract=off and no -ffast-math, so each copy performs exactly the
 * IEEE single-precision operations the body writes (add, sub, mul, div, compare,
 * select, int conversion), in the written order, one lane per element; the vector
 * width changes nothing. AVX2 + FMA only makes fused instructions AVAILABLE: without
 * contraction GCC emits none the source does not write, and it never substitutes the
 * approximate reciprocals (vrcpps, vrcp14ps) for a division without -ffast-math.
 * (Where two NaNs meet, which one an operation returns is the compiler's operand
 * order, which may differ between copies: a NaN's sign and payload are not part of
 * the contract; a NaN stays a NaN.)
 * tests/elementwise_simd_test.cc checks the bits of every path the CPU runs, and
 * tests/elementwise_isa_test.sh that the copies hold vector code and none of those
 * instructions.
 */
#ifndef REMAT_REF_ELEM_KERNEL_H
#define REMAT_REF_ELEM_KERNEL_H

#include <stdint.h>

#include "core/ref/act.h"
#include "core/ref/simd.h"

#define REMAT_ELEM_INLINE static inline __attribute__((always_inline))

#if defined(__x86_64__) || defined(__i386__)
#define REMAT_ELEM_TARGET_AVX2 __attribute__((target("avx2,fma")))
/* The AVX-512 path's instruction sets (simd.h): F, plus DQ for the 64-bit multiplies
 * and conversions of the dropout generator, BW and VL (Skylake-SP and later, Zen 4). */
#define REMAT_ELEM_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,prefer-vector-width=512")))
#else
#define REMAT_ELEM_TARGET_AVX2
#define REMAT_ELEM_TARGET_AVX512
#endif

/* Defines `static void name params` that runs `call` on the current path, from three
 * copies name_scalar, name_avx2, name_avx512 (noinline, so each keeps its own code, and
 * objdump shows it under its name). The four arguments:
 *   name    the dispatcher's name (the copies get _scalar, _avx2, _avx512 appended);
 *   params  its parameter list in parentheses, with types: (float *out, int64_t n);
 *   args    the names of those parameters in parentheses, in order: (out, n); the
 *           dispatcher passes them on to the copy it picks;
 *   call    the statement each copy runs: an expression of those names, usually a call
 *           of the always_inline body. */
#define REMAT_ELEM_CLONES(name, params, args, call)                                       \
    static __attribute__((noinline)) void name##_scalar params { call; }                  \
    static __attribute__((noinline)) REMAT_ELEM_TARGET_AVX2 void name##_avx2 params {     \
        call;                                                                             \
    }                                                                                     \
    static __attribute__((noinline)) REMAT_ELEM_TARGET_AVX512 void name##_avx512 params { \
        call;                                                                             \
    }                                                                                     \
    static void name params {                                                             \
        switch (remat_ref_simd_get()) {                                                   \
        case REMAT_SIMD_AVX512: name##_avx512 args; break;                                \
        case REMAT_SIMD_AVX2: name##_avx2 args; break;                                    \
        default: name##_scalar args; break;                                               \
        }                                                                                 \
    }

#endif
