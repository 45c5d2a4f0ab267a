/* simd.c - the run-time choice of the reference backend's instruction-set path (simd.h).
 *
 * Detection: GCC/clang's __builtin_cpu_supports, which reads CPUID and checks that the
 * OS saves the wider registers (XCR0), so "supported" means "will not fault". On
 * anything but x86 only the scalar path exists.
 * The current path is one atomic int, resolved once (pthread_once) from REMAT_SIMD or
 * the widest path; each GEMM call reads it once, at its start.
 */
#include "core/ref/simd.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const simd_names[REMAT_SIMD_COUNT] = {"scalar", "avx2", "avx512"};

const char *remat_ref_simd_name(remat_simd p) {
    return (int)p >= 0 && p < REMAT_SIMD_COUNT ? simd_names[p] : "?";
}

int remat_ref_simd_parse(const char *s, remat_simd *out) {
    for (int p = 0; s && p < REMAT_SIMD_COUNT; p++)
        if (!strcmp(s, simd_names[p])) {
            *out = (remat_simd)p;
            return 0;
        }
    return -1;
}

int remat_ref_simd_supported(remat_simd p) {
    switch (p) {
    case REMAT_SIMD_SCALAR: return 1;
#if defined(__x86_64__) || defined(__i386__)
    case REMAT_SIMD_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case REMAT_SIMD_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
    default: return 0;
    }
}

remat_simd remat_ref_simd_best(void) {
    for (int p = REMAT_SIMD_COUNT - 1; p > 0; p--)
        if (remat_ref_simd_supported((remat_simd)p)) return (remat_simd)p;
    return REMAT_SIMD_SCALAR;
}

static int g_path = -1;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Checks REMAT_SIMD; *out is the path to use when it returns REMAT_OK. */
static remat_status env_path(remat_simd *out, remat_error *err) {
    const char *s = getenv("REMAT_SIMD");
    *out = remat_ref_simd_best();
    if (!s || !*s) return REMAT_OK;
    remat_simd p;
    if (remat_ref_simd_parse(s, &p) != 0)
        return remat_error_set(err, REMAT_ERR_INPUT, "REMAT_SIMD: '%s': expected scalar, avx2 or avx512", s);
    if (!remat_ref_simd_supported(p))
        return remat_error_set(err, REMAT_ERR_INPUT, "REMAT_SIMD: '%s': expected a path this CPU supports (widest: %s)",
                               s, remat_ref_simd_name(*out));
    *out = p;
    return REMAT_OK;
}

static void init_path(void) {
    remat_simd p;
    remat_error err = {0};
    if (env_path(&p, &err) != REMAT_OK) fprintf(stderr, "remat: warning: %s; using %s\n", err.msg, remat_ref_simd_name(p));
    __atomic_store_n(&g_path, (int)p, __ATOMIC_RELAXED);
}

remat_simd remat_ref_simd_get(void) {
    pthread_once(&g_once, init_path);
    return (remat_simd)__atomic_load_n(&g_path, __ATOMIC_RELAXED);
}

int remat_ref_simd_set(remat_simd p) {
    pthread_once(&g_once, init_path);
    if (!remat_ref_simd_supported(p)) return -1;
    __atomic_store_n(&g_path, (int)p, __ATOMIC_RELAXED);
    return 0;
}

remat_status remat_ref_simd_from_env(remat_error *err) {
    remat_simd p;
    remat_status st = env_path(&p, err);
    if (st == REMAT_OK) remat_ref_simd_set(p);
    return st;
}
