/* des.h - the simulator's discrete-event layer: timed allocation events on
 * streams, an event queue ordered by (time, seq), and the replay of an event
 * stream through the allocator models of core/alloc/alloc_model.h (the same code the
 * executor places tensors with: there is no second allocator here).
 *
 *   remat_des_replay_opts o = remat_des_replay_opts_default();
 *   o.caching = cfg;
 *   remat_des_iter_peaks peaks[n_iters];
 *   remat_des_replay(trace, times, &o, peaks, n_iters, &err);   // times: NULL = recorded order
 *
 * Streams. Ops of the program run on streams: everything on the compute stream
 * by default; with `copy_stream` compress/decompress ops go to a copy stream
 * (remat_des_schedule). The schedule gives every event a time on the new
 * timeline; the queue then hands events to the allocator models in (time, seq)
 * order, seq being the event's position in the program. With one stream the
 * times are the recorded ones and the order is the program order.
 */
#ifndef REMAT_SIM_DES_H
#define REMAT_SIM_DES_H

#include <stdint.h>

#include "core/alloc/alloc_model.h"
#include "core/base/status.h"
#include "core/io/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- event queue: binary min-heap on (time, seq) ------------------------- */
typedef struct remat_des_item {
    double time;
    int64_t seq;   /* tie break; also the index of the event it stands for */
} remat_des_item;

typedef struct remat_des_queue {
    remat_des_item *items;
    int64_t n, cap;
} remat_des_queue;

void remat_des_queue_init(remat_des_queue *q);
void remat_des_queue_free(remat_des_queue *q);
/* O(log n); REMAT_ERR_NOMEM when it cannot grow. */
remat_status remat_des_queue_push(remat_des_queue *q, double time, int64_t seq, remat_error *err);
/* Removes the smallest (time, seq) into *out; returns 0 when empty. O(log n). */
int remat_des_queue_pop(remat_des_queue *q, remat_des_item *out);

/* ---- streams and the schedule -------------------------------------------- */
typedef enum remat_des_stream { REMAT_DES_STREAM_COMPUTE = 0, REMAT_DES_STREAM_COPY = 1, REMAT_DES_STREAM_COUNT } remat_des_stream;

typedef struct remat_des_schedule_result {
    double *event_time;      /* [n_events] owned: time of each event on the new timeline */
    double *iter_time;       /* [n_iters] owned: step time of each iteration on the new timeline */
    double stream_busy[REMAT_DES_STREAM_COUNT]; /* seconds of work per stream */
    int64_t delayed_frees;   /* frees that waited for the copy stream */
} remat_des_schedule_result;

/* Re-times a program recorded on one stream (trace t: ops and events with
 * virtual times, program order = time order, ties by index) with copy_stream = 1:
 * compress ops run on the copy stream as soon as the compute stream has issued
 * them and the copy stream is free, and the compute stream does not wait for
 * them; decompress ops run on the copy stream and the compute stream waits for
 * them (their result is needed at once); a free issued while copy-stream work
 * is outstanding takes effect when that work ends (stream-ordered frees, like
 * PyTorch's record_stream). Allocations take effect when issued.
 * copy_stream = 0 reproduces the recorded times. Free with remat_des_schedule_free. */
remat_status remat_des_schedule(const remat_trace *t, int copy_stream, remat_des_schedule_result *out,
                                remat_error *err);
void remat_des_schedule_free(remat_des_schedule_result *r);

/* ---- replay through the allocator models --------------------------------- */
typedef struct remat_des_iter_peaks {
    int64_t peak_live_bytes;       /* EXACT model, from the first event of the iteration */
    int64_t peak_allocated_bytes;  /* CACHING model: rounded blocks in use */
    int64_t peak_reserved_bytes;   /* CACHING model: segments */
    int64_t end_of_forward_live;   /* after the loss forward: live bytes (-1: no loss in the step) */
    int64_t end_of_forward_reserved; /* ... and reserved bytes */
    int64_t events;
} remat_des_iter_peaks;

typedef struct remat_des_replay_opts {
    remat_caching_config caching;
    int run_exact, run_caching;   /* which models to drive (both by default) */
} remat_des_replay_opts;

remat_des_replay_opts remat_des_replay_opts_default(void);

/* Where the executor restarts its peak measurement in step `it`: after the frees
 * that open the step (the previous step's batch and input gradient), i.e. the
 * index of the first event of the step's slice that is not a free. */
int64_t remat_des_iter_reset_point(const remat_trace *t, int it);

/* Where the executor measures the end of forward in step `it`: just after the
 * first free of the loss phase (the network output, once the loss has read it).
 * The index of that event, or -1 when the step has none. */
int64_t remat_des_iter_eof_point(const remat_trace *t, int it);

/* Replays every event of t through fresh allocator models. event_time NULL: in
 * recorded order (a flat loop, no queue); otherwise through the queue in
 * (event_time[i], i) order. Peaks restart at each step's reset point
 * (remat_des_iter_reset_point), as the executor restarts them. iters gets
 * t->n_iters entries (n_iters must be >= that; events before iteration 0's first
 * event count into iteration 0). Errors: an event stream that frees a dead tensor
 * or allocates a live one (REMAT_ERR_INPUT naming the event). */
remat_status remat_des_replay(const remat_trace *t, const double *event_time, const remat_des_replay_opts *o,
                              remat_des_iter_peaks *iters, int n_iters, remat_error *err);

/* The tight loop alone, for the benchmark: every event of ev[0..n) into model m
 * in array order; returns the model's final peak (live for EXACT, reserved for
 * CACHING) or -1 with err set. */
int64_t remat_des_replay_flat(remat_alloc_model *m, remat_alloc_kind kind, const remat_event *ev, int64_t n,
                              remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
