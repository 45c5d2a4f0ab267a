/* torch_rescale.c - a recorded PyTorch step at another batch size, from two recordings
 * (torch_rescale.h).
 *
 * A size s_a at N_a and s_b at N_b is proportional when s_a / N_a = s_b / N_b. With
 * g = gcd(N_a, N_b), n_a = N_a / g and n_b = N_b / g coprime, that holds exactly when
 * n_a divides s_a, n_b divides s_b and s_a / n_a = s_b / n_b = q (no product that can
 * overflow); the size at N is then q * N / g, a whole number when g divides q * N. */
#include <stdio.h>
#include <string.h>

#include "core/base/types.h"
#include "core/io/ext_record.h"
#include "core/model/model.h"
#include "sim/torch_rescale.h"

#define BAD(...) remat_error_set(err, REMAT_ERR_INPUT, __VA_ARGS__)

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* 0: the same at both sizes; 1: proportional to N; -1: neither. */
static int linear_kind(int64_t sa, int64_t sb, int64_t na, int64_t nb) {
    if (sa == sb) return 0;
    if (sa <= 0 || sb <= 0 || sa % na || sb % nb || sa / na != sb / nb) return -1;
    return 1;
}

/* "allocation 812 (storage 301, step 1, backward, module 'layer1.0.conv1')" */
static void describe_event(const remat_ext_trace *t, int64_t i, char *buf, size_t len) {
    const remat_ext_record *r = t->record;
    const remat_rec_event *e = &r->events[i];
    const remat_ext_event *x = &t->devices[0].events[i];
    const char *name = e->module >= 0 ? remat_ext_label(t, r->modules[e->module].label) : "";
    snprintf(buf, len, "%s %lld (storage %lld, step %d, %s%s%s%s)", x->action == REMAT_EXT_ALLOC ? "allocation" : "free",
             (long long)i, (long long)e->storage, (int)e->step, remat_rec_phase_name(e->phase),
             name[0] ? ", module '" : "", name, name[0] ? "'" : "");
}

/* The model texts of both, normalised at N = 1 (cJSON's printing), compared. */
static remat_status same_model(const remat_ext_record *ra, const remat_ext_record *rb, const char *pa, const char *pb,
                               remat_error *err) {
    int ea = !ra->model || !ra->model[0], eb = !rb->model || !rb->model[0];
    if (ea || eb) {
        if (ea == eb) return REMAT_OK;
        return BAD("%s: /record: model: %s recorded with a model file and %s without; expected both or neither", pb,
                   ea ? pb : pa, ea ? pa : pb);
    }
    remat_model ma, mb, sa, sb;
    remat_status st = remat_model_parse(ra->model, strlen(ra->model), pa, &ma, err);
    if (st != REMAT_OK) return st;
    st = remat_model_parse(rb->model, strlen(rb->model), pb, &mb, err);
    if (st != REMAT_OK) {
        remat_model_free(&ma);
        return st;
    }
    st = remat_model_rescale(&ma, 0, 1, &sa, err);
    if (st == REMAT_OK) {
        st = remat_model_rescale(&mb, 0, 1, &sb, err);
        if (st == REMAT_OK) {
            if (strcmp(sa.text, sb.text))
                st = BAD("%s: /record: model: not the model file of %s (they differ in more than N); expected the "
                         "same network recorded at two batch sizes",
                         pb, pa);
            remat_model_free(&sb);
        }
        remat_model_free(&sa);
    }
    remat_model_free(&ma);
    remat_model_free(&mb);
    return st;
}

static remat_status same_record(const remat_ext_trace *a, const remat_ext_trace *b, const char *pa, const char *pb,
                                remat_error *err) {
    const remat_ext_record *ra = a->record, *rb = b->record;
    if (!ra || !rb || a->n_devices < 1 || b->n_devices < 1)
        return BAD("%s: /record: expected a recorded PyTorch step (remat_torch.record) in both traces", !ra ? pa : pb);
    if (ra->N == rb->N)
        return BAD("%s: /record: N: both recordings have N = %lld; expected two different batch sizes", pb,
                   (long long)ra->N);
    if (ra->T != rb->T || ra->steps != rb->steps || ra->rng_state_bytes != rb->rng_state_bytes ||
        strcmp(ra->execution, rb->execution) || strcmp(ra->loss, rb->loss))
        return BAD("%s: /record: T, steps, loss or execution differ from %s (T %lld/%lld, steps %lld/%lld, %s/%s); "
                   "expected the same step recorded at another N",
                   pb, pa, (long long)rb->T, (long long)ra->T, (long long)rb->steps, (long long)ra->steps, rb->execution,
                   ra->execution);
    if (ra->n_modules != rb->n_modules)
        return BAD("%s: /record/modules: %d modules, %s has %d; expected the same network", pb, (int)rb->n_modules, pa,
                   (int)ra->n_modules);
    for (int32_t i = 0; i < ra->n_modules; i++) {
        const remat_rec_module *x = &ra->modules[i], *y = &rb->modules[i];
        if (x->layer != y->layer || x->block != y->block || x->is_block != y->is_block ||
            x->bn_buffer_bytes != y->bn_buffer_bytes ||
            strcmp(remat_ext_label(a, x->label), remat_ext_label(b, y->label)))
            return BAD("%s: /record/modules: module %d ('%s') is not module %d of %s ('%s'); expected the same network",
                       pb, (int)i, remat_ext_label(b, y->label), (int)i, pa, remat_ext_label(a, x->label));
    }
    return same_model(ra, rb, pa, pb, err);
}

/* The recording up to its chunk probes (time chunks: not rescaled, a kernel may take another path on T/k steps
 * of another batch; the rescaled trace has none, so /k plans on it are refused): events and marks before the
 * first chunks_begin mark. */
static void before_chunk_probes(const remat_ext_trace *t, int64_t *n_events, int64_t *n_marks) {
    const remat_ext_record *r = t->record;
    *n_events = t->devices[0].n_events;
    *n_marks = r->n_marks;
    for (int64_t m = 0; m < r->n_marks; m++)
        if (r->marks[m].kind == REMAT_REC_CHUNKS_BEGIN) {
            *n_events = r->marks[m].event;
            *n_marks = m;
            return;
        }
}

remat_status remat_torch_linear_check(const remat_ext_trace *a, const char *origin_a, const remat_ext_trace *b,
                                      const char *origin_b, remat_torch_linear *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    remat_status st = same_record(a, b, origin_a, origin_b, err);
    if (st != REMAT_OK) return st;
    const remat_ext_record *ra = a->record, *rb = b->record;
    const remat_ext_device *da = &a->devices[0], *db = &b->devices[0];
    const int64_t Na = ra->N, Nb = rb->N, g = gcd64(Na, Nb), na = Na / g, nb = Nb / g;
    int64_t n, nm, n_b, nm_b;
    before_chunk_probes(a, &n, &nm);
    before_chunk_probes(b, &n_b, &nm_b);
    if (n != n_b || nm != nm_b)
        return BAD("%s: /devices/0/events: %lld events and %lld marks at N = %lld, %s has %lld and %lld at N = %lld: "
                   "the two recordings did not run the same allocations; expected the same step at two batch sizes",
                   origin_b, (long long)n_b, (long long)nm_b, (long long)Nb, origin_a, (long long)n, (long long)nm,
                   (long long)Na);
    snprintf(out->origin_a, sizeof out->origin_a, "%s", origin_a);
    snprintf(out->origin_b, sizeof out->origin_b, "%s", origin_b);
    snprintf(out->execution, sizeof out->execution, "%s", ra->execution);
    out->N_a = Na;
    out->N_b = Nb;
    out->n_events = n;
    out->n_marks = nm;
    out->bytes = remat_xmalloc((size_t)(n + 1) * sizeof *out->bytes, err);
    out->per_sample = remat_xmalloc((size_t)(n + 1), err);
    out->numel = remat_xmalloc((size_t)(nm + 1) * sizeof *out->numel, err);
    out->numel_ps = remat_xmalloc((size_t)(nm + 1), err);
    out->model_text = remat_xmalloc(strlen(ra->model ? ra->model : "") + 1, err);
    if (!out->bytes || !out->per_sample || !out->numel || !out->numel_ps ||
        !out->model_text) {
        remat_torch_linear_free(out);
        return REMAT_ERR_NOMEM;
    }
    strcpy(out->model_text, ra->model ? ra->model : "");
    char what[512];
    for (int64_t i = 0; i < n && st == REMAT_OK; i++) {
        const remat_ext_event *x = &da->events[i], *y = &db->events[i];
        const remat_rec_event *p = &ra->events[i], *q = &rb->events[i];
        if (x->action != y->action || p->storage != q->storage || p->step != q->step || p->module != q->module ||
            p->tstep != q->tstep || p->phase != q->phase) {
            describe_event(b, i, what, sizeof what);
            st = BAD("%s: /devices/0/events: event %lld is %s at N = %lld, but in %s at N = %lld it is another event "
                     "(the two steps allocate in another order: a kernel chose another path at this batch size?); "
                     "expected the same step at two batch sizes",
                     origin_b, (long long)i, what, (long long)Nb, origin_a, (long long)Na);
            break;
        }
        int k = linear_kind(x->size, y->size, na, nb);
        if (k < 0) {
            describe_event(b, i, what, sizeof what);
            st = BAD("%s: /devices/0/events/size: %s is %lld B at N = %lld and %lld B at N = %lld in %s: neither the "
                     "same at both batch sizes nor proportional to N, so the step is not rescaled (exact only when "
                     "every allocation is constant or linear in N)",
                     origin_b, what, (long long)y->size, (long long)Nb, (long long)x->size, (long long)Na, origin_a);
            break;
        }
        out->bytes[i] = x->size;
        out->per_sample[i] = (uint8_t)k;
        if (k && x->action == REMAT_EXT_ALLOC) out->proportional++;
        else if (x->action == REMAT_EXT_ALLOC) out->constant++;
    }
    for (int64_t m = 0; m < nm && st == REMAT_OK; m++) {
        const remat_rec_mark *x = &ra->marks[m], *y = &rb->marks[m];
        if (x->kind != y->kind || x->module != y->module || x->step != y->step || x->tstep != y->tstep ||
            x->event != y->event || x->storage != y->storage) {
            st = BAD("%s: /record/marks: mark %lld (%s) is not mark %lld of %s (%s); expected the same step at two "
                     "batch sizes",
                     origin_b, (long long)m, remat_rec_mark_name(y->kind) ? remat_rec_mark_name(y->kind) : "?",
                     (long long)m, origin_a, remat_rec_mark_name(x->kind) ? remat_rec_mark_name(x->kind) : "?");
            break;
        }
        int k = linear_kind(x->numel, y->numel, na, nb);
        if (k < 0) {
            st = BAD("%s: /record/marks/numel: mark %lld (%s of module '%s') counts %lld elements at N = %lld and "
                     "%lld at N = %lld in %s: neither the same nor proportional to N, so the step is not rescaled",
                     origin_b, (long long)m, remat_rec_mark_name(y->kind),
                     y->module >= 0 && y->kind != REMAT_REC_PHASE ? remat_ext_label(b, rb->modules[y->module].label)
                                                                  : "-",
                     (long long)y->numel, (long long)Nb, (long long)x->numel, (long long)Na, origin_a);
            break;
        }
        out->numel[m] = x->numel;
        out->numel_ps[m] = (uint8_t)k;
    }
    if (st == REMAT_OK) {
        /* live_before_bytes = c + p * N: the parameters and optimiser state, and the batch */
        int64_t dl = rb->live_before_bytes - ra->live_before_bytes, dn = Nb - Na;
        int64_t p = dl / dn, pa = remat_mul_capped(p, Na, INT64_MAX);
        if (dl % dn || p < 0 || pa < 0 || ra->live_before_bytes - pa < 0)
            st = BAD("%s: /record: live_before_bytes: %lld B at N = %lld and %lld B at N = %lld in %s: not a constant "
                     "plus a whole number of bytes per sample; expected the storages older than the recording "
                     "(parameters, optimiser state, the batch) constant or proportional to N",
                     origin_b, (long long)rb->live_before_bytes, (long long)Nb, (long long)ra->live_before_bytes,
                     (long long)Na, origin_a);
        out->live_per_n = p;
        out->live_const = ra->live_before_bytes - pa;
    }
    if (st != REMAT_OK) remat_torch_linear_free(out);
    return st;
}

/* s (at N_a) at N: *out, or 0 when not a whole number of bytes or too large. */
static int at_n(int64_t s, int per_sample, int64_t Na, int64_t N, int64_t *out) {
    if (!per_sample) return *out = s, 1;
    if (s < 0) return *out = s, 1; /* -1: not counted */
    int64_t g = gcd64(s, Na), q = s / g, d = Na / g; /* s / Na = q / d, reduced */
    if (N % d) return 0;
    int64_t v = remat_mul_capped(q, N / d, REMAT_EXT_MAX_TOTAL_BYTES);
    if (v < 0) return 0;
    *out = v;
    return 1;
}

remat_status remat_torch_linear_apply(const remat_torch_linear *L, int64_t N, remat_ext_trace *t, remat_error *err) {
    remat_ext_record *r = t->record;
    int64_t n_cut = -1, nm_cut = -1;
    if (r && t->n_devices >= 1) before_chunk_probes(t, &n_cut, &nm_cut);
    if (!r || t->n_devices < 1 || n_cut != L->n_events || nm_cut != L->n_marks)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "remat_torch_linear_apply: not the trace of the check");
    t->devices[0].n_events = r->n_events = n_cut; /* the chunk probes are not rescaled */
    r->n_marks = nm_cut;
    if (N < 1 || N > REMAT_EXT_MAX_TOTAL_BYTES / 2)
        return BAD("--N: %lld: expected a positive batch size", (long long)N);
    remat_ext_device *d = &t->devices[0];
    for (int64_t i = 0; i < L->n_events; i++) {
        int64_t v;
        if (!at_n(L->bytes[i], L->per_sample[i], L->N_a, N, &v)) {
            char what[512];
            describe_event(t, i, what, sizeof what);
            return BAD("--N: %lld: %s of %s holds %lld B at N = %lld, which is not a whole number of bytes at N = "
                       "%lld (or too large); expected another N",
                       (long long)N, what, L->origin_a, (long long)L->bytes[i], (long long)L->N_a, (long long)N);
        }
        d->events[i].size = v;
    }
    for (int64_t m = 0; m < L->n_marks; m++) {
        int64_t v = -1;
        if (!at_n(L->numel[m], L->numel_ps[m], L->N_a, N, &v))
            return BAD("--N: %lld: mark %lld of %s counts %lld elements at N = %lld, not a whole number at N = %lld; "
                       "expected another N",
                       (long long)N, (long long)m, L->origin_a, (long long)L->numel[m], (long long)L->N_a, (long long)N);
        r->marks[m].numel = v;
        r->marks[m].nnz = -1; /* spike counts are the data's, not sizes: not known at another N */
    }
    int64_t lb = remat_mul_capped(L->live_per_n, N, REMAT_EXT_MAX_TOTAL_BYTES);
    if (lb < 0 || lb > REMAT_EXT_MAX_TOTAL_BYTES - L->live_const)
        return BAD("--N: %lld: the storages older than the recording would exceed %lld B; expected a smaller N",
                   (long long)N, (long long)REMAT_EXT_MAX_TOTAL_BYTES);
    char where[300];
    snprintf(where, sizeof where, "%s at N = %lld: /devices/0", L->origin_a, (long long)N);
    remat_status st = remat_ext_check_sizes(d, where, err);
    if (st != REMAT_OK) return st;
    char *text = NULL;
    if (L->model_text[0]) {
        remat_model m, s;
        st = remat_model_parse(L->model_text, strlen(L->model_text), L->origin_a, &m, err);
        if (st != REMAT_OK) return st;
        st = remat_model_rescale(&m, 0, N, &s, err);
        remat_model_free(&m);
        if (st != REMAT_OK) return st;
        text = s.text;
        s.text = NULL;
        remat_model_free(&s);
    } else if (!(text = remat_xmalloc(1, err))) {
        return REMAT_ERR_NOMEM;
    } else {
        text[0] = 0;
    }
    remat_xfree(r->model);
    r->model = text;
    r->N = N;
    snprintf(r->execution, sizeof r->execution, "%.160s at N = %lld and N = %lld, rescaled to N = %lld", L->execution,
             (long long)L->N_a, (long long)L->N_b, (long long)N);
    r->live_before_bytes = L->live_const + lb;
    return REMAT_OK;
}

void remat_torch_linear_free(remat_torch_linear *L) {
    if (!L) return;
    remat_xfree(L->bytes);
    remat_xfree(L->per_sample);
    remat_xfree(L->numel);
    remat_xfree(L->numel_ps);
    remat_xfree(L->model_text);
    memset(L, 0, sizeof *L);
}
