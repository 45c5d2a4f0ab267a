/* clock.h - the one wall clock of remat.
 *
 * Every timing the tools report (search and tune seconds, verify progress, the
 * reference backend's now(), gnuplot and FIFO time limits, benchmarks) reads this
 * clock, so that two numbers printed by remat are always comparable.
 *
 *   double t0 = remat_now_s();
 *   ...work...
 *   fprintf(stderr, "took %.3f s\n", remat_now_s() - t0);
 */
#ifndef REMAT_BASE_CLOCK_H
#define REMAT_BASE_CLOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds on CLOCK_MONOTONIC (nanosecond resolution, arbitrary origin): never goes
 * backwards and does not jump with the date; only differences mean anything. Never
 * fails (on a POSIX system CLOCK_MONOTONIC always exists). Thread-safe. */
double remat_now_s(void);

/* Seconds of CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID): what a
 * one-thread step costs without the time other jobs of a shared machine take from it.
 * The reference backend's now() reads it instead of the wall clock when REMAT_CLOCK is
 * "thread-cpu" and it runs one thread (core/exec/backend.h). */
double remat_thread_cpu_s(void);

#ifdef __cplusplus
}
#endif

#endif /* REMAT_BASE_CLOCK_H */
