/* ext_report.c - printing the allocator check of an imported stream (ext_report.h). */
#include "tools/ext_report.h"

#include <stdio.h>
#include <string.h>

#include "core/io/json_write.h"
#include "plots/figure.h"

static double pct(int64_t a, int64_t b) { return b ? 100.0 * (double)a / (double)b : 100.0; }

static void print_human(const remat_ext_replay *r) {
    char b1[64], b2[64];
    printf("allocator check, device %d (caching model: %s)\n", (int)r->device, r->config);
    printf("  placed at the recorded address: %lld of %lld allocations (%.1f %%); small pool %lld of %lld, large pool "
           "%lld of %lld\n",
           (long long)r->placed_at_recorded_address, (long long)r->allocations,
           pct(r->placed_at_recorded_address, r->allocations), (long long)r->pool_placed[0],
           (long long)r->pool_allocations[0], (long long)r->pool_placed[1], (long long)r->pool_allocations[1]);
    if (r->first_mismatch_event >= 0) {
        printf("  first disagreement: event %lld, %lld B: model 0x%llx, PyTorch 0x%llx; %lld free blocks large enough",
               (long long)r->first_mismatch_event, (long long)r->first_mismatch_size,
               (unsigned long long)r->first_mismatch_predicted, (unsigned long long)r->first_mismatch_recorded,
               (long long)r->first_mismatch_free_count);
        for (int64_t k = 0; k < r->first_mismatch_free_count && k < REMAT_EXT_REPLAY_SHOW_FREE; k++)
            printf("%s0x%llx %lld B", k ? ", " : " (smallest first: ", (unsigned long long)r->first_mismatch_free_addr[k],
                   (long long)r->first_mismatch_free_size[k]);
        printf("%s\n", r->first_mismatch_free_count ? ")" : "");
    }
    printf("  reserved at the end: predicted %s, recorded %s (%s)\n",
           remat_cli_fmt_bytes(r->reserved_end_predicted, b1, sizeof b1),
           remat_cli_fmt_bytes(r->reserved_end_recorded, b2, sizeof b2),
           r->reserved_end_predicted == r->reserved_end_recorded ? "exact" : "differs");
    printf("  peak reserved: predicted %s, recorded %s\n",
           remat_cli_fmt_bytes(r->peak_reserved_predicted, b1, sizeof b1),
           remat_cli_fmt_bytes(r->peak_reserved_recorded, b2, sizeof b2));
    printf("  segment events: %lld recorded, reserved bytes equal after %lld of them; segment_alloc: %lld recorded, "
           "%lld matched by a model segment of the same size; the model created %lld segments\n",
           (long long)r->segment_events_recorded, (long long)r->segment_events_reserved_matched,
           (long long)r->segment_allocs_recorded, (long long)r->segment_allocs_matched,
           (long long)r->segments_created_predicted);
    if (r->notes[0]) {
        for (const char *p = r->notes; *p;) {
            const char *nl = strchr(p, '\n');
            int n = nl ? (int)(nl - p) : (int)strlen(p);
            printf("  not modelled / note: %.*s\n", n, p);
            p += n + (nl ? 1 : 0);
        }
    }
}

static void print_json_device(const remat_ext_replay *r) {
    printf("{\"device\":%d,\"allocations\":%lld,\"placed_at_recorded_address\":%lld,"
           "\"reserved_end_predicted\":%lld,\"reserved_end_recorded\":%lld,"
           "\"peak_reserved_predicted\":%lld,\"peak_reserved_recorded\":%lld,\"fragmentation_at_peak\":%lld,"
           "\"pools\":{\"small\":{\"allocations\":%lld,\"placed_at_recorded_address\":%lld},"
           "\"large\":{\"allocations\":%lld,\"placed_at_recorded_address\":%lld}},",
           (int)r->device, (long long)r->allocations, (long long)r->placed_at_recorded_address,
           (long long)r->reserved_end_predicted, (long long)r->reserved_end_recorded,
           (long long)r->peak_reserved_predicted, (long long)r->peak_reserved_recorded,
           (long long)r->fragmentation_at_peak, (long long)r->pool_allocations[0], (long long)r->pool_placed[0],
           (long long)r->pool_allocations[1], (long long)r->pool_placed[1]);
    if (r->first_mismatch_event >= 0)
        printf("\"first_mismatch\":{\"event\":%lld,\"size\":%lld,\"predicted_addr\":%lld,\"recorded_addr\":%lld,"
               "\"free_blocks\":%lld},",
               (long long)r->first_mismatch_event, (long long)r->first_mismatch_size,
               (long long)r->first_mismatch_predicted, (long long)r->first_mismatch_recorded,
               (long long)r->first_mismatch_free_count);
    else
        printf("\"first_mismatch\":null,");
    printf("\"segment_events_recorded\":%lld,\"segment_events_reserved_matched\":%lld,"
           "\"segment_allocs_recorded\":%lld,\"segment_allocs_matched\":%lld,\"segments_created_predicted\":%lld,"
           "\"unknown_frees\":%lld,\"config\":",
           (long long)r->segment_events_recorded, (long long)r->segment_events_reserved_matched,
           (long long)r->segment_allocs_recorded, (long long)r->segment_allocs_matched,
           (long long)r->segments_created_predicted, (long long)r->unknown_frees);
    remat_json_string(stdout, r->config);
    printf(",\"notes\":[");
    int first = 1;
    for (const char *p = r->notes; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(n < 511 ? n : 511), p);
        if (!first) putchar(',');
        remat_json_string(stdout, line);
        first = 0;
        p += n + (nl ? 1 : 0);
    }
    printf("]}");
}

/* "<origin>: " in front of err's message (the entry or setting it names follows). */
static int fail_in(const char *cmd, const char *origin, remat_error *err) {
    if (origin && err->status == REMAT_ERR_INPUT && strncmp(err->msg, origin, strlen(origin)) != 0) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        size_t o = strlen(origin);
        if (o + 3 < sizeof err->msg) {
            memcpy(err->msg, origin, o);
            memcpy(err->msg + o, ": ", 2);
            size_t n = strlen(msg), room = sizeof err->msg - o - 3;
            memcpy(err->msg + o + 2, msg, n < room ? n : room);
            err->msg[o + 2 + (n < room ? n : room)] = 0;
        }
    }
    return remat_cli_fail(cmd, err);
}

int remat_ext_report(const char *cmd, const char *origin, const remat_ext_trace *t, int device,
                     const cli_list *what_if, int json, int strict, int (*before_print)(void *ctx), void *ctx) {
    remat_error err = {0};
    if (device >= t->n_devices) {
        fprintf(stderr, "remat %s: --device: expected 0..%d, got %d\n", cmd, t->n_devices - 1, device);
        return 2;
    }
    /* what-if configurations: each over the recorded settings */
    int n_cfg = what_if ? what_if->n : 0;
    remat_caching_config cfgs[CLI_LIST_MAX], recorded;
    if (n_cfg && remat_caching_config_parse(t->allocator_config, &recorded, &err) != REMAT_OK)
        return fail_in(cmd, "--allocator-config", &err);
    for (int k = 0; k < n_cfg; k++)
        if (remat_caching_config_parse_over(what_if->items[k], &recorded, &cfgs[k], &err) != REMAT_OK)
            return fail_in(cmd, "--allocator-config", &err);
    int n_dev = 0;
    for (int32_t di = 0; di < t->n_devices; di++) n_dev += device >= 0 ? di == device : t->devices[di].n_events > 0;
    remat_ext_replay *res = n_dev ? remat_xcalloc((size_t)n_dev, sizeof *res, &err) : NULL;
    remat_ext_replay *wi = n_cfg ? remat_xcalloc((size_t)n_cfg, sizeof *wi, &err) : NULL;
    if ((n_dev && !res) || (n_cfg && !wi)) {
        remat_xfree(res);
        remat_xfree(wi);
        return remat_cli_fail(cmd, &err);
    }
    remat_status st = REMAT_OK;
    int k = 0, first_dev = -1;
    for (int32_t di = 0; di < t->n_devices && st == REMAT_OK; di++) {
        if (device >= 0 ? di != device : t->devices[di].n_events == 0) continue;
        if (first_dev < 0) first_dev = di;
        st = remat_ext_replay_run(t, di, NULL, 0, &res[k++], &err);
    }
    /* what-ifs from a fresh start, with the recorded settings first for comparison */
    remat_ext_replay base;
    memset(&base, 0, sizeof base);
    if (n_cfg && st == REMAT_OK && first_dev >= 0) st = remat_ext_replay_run(t, first_dev, NULL, 1, &base, &err);
    for (int c = 0; c < n_cfg && st == REMAT_OK && first_dev >= 0; c++)
        st = remat_ext_replay_run(t, first_dev, &cfgs[c], 1, &wi[c], &err);
    int rc = 0;
    if (st != REMAT_OK) {
        rc = fail_in(cmd, origin, &err);
    } else if (before_print && (rc = before_print(ctx)) != 0) {
        /* nothing printed: the caller said why */
    } else {
        for (int i = 0; i < n_dev; i++)
            if (strict && (res[i].placed_at_recorded_address != res[i].allocations ||
                           res[i].reserved_end_predicted != res[i].reserved_end_recorded))
                rc = 1;
        char b1[64], b2[64];
        if (json) {
            printf("{\"devices\":[");
            for (int i = 0; i < n_dev; i++) {
                if (i) putchar(',');
                print_json_device(&res[i]);
            }
            printf("],\"what_if\":[");
            for (int c = -1; c < n_cfg && n_cfg && first_dev >= 0; c++) {
                const remat_ext_replay *w = c < 0 ? &base : &wi[c];
                printf("%s{\"settings\":", c >= 0 ? "," : "");
                remat_json_string(stdout, c < 0 ? "recorded" : what_if->items[c]);
                printf(",\"device\":%d,\"config\":", (int)w->device);
                remat_json_string(stdout, w->config);
                printf(",\"peak_reserved_predicted\":%lld,\"fragmentation_at_peak\":%lld,"
                       "\"peak_allocated_predicted\":%lld,\"reserved_end_predicted\":%lld}",
                       (long long)w->peak_reserved_predicted, (long long)w->fragmentation_at_peak,
                       (long long)w->peak_allocated_predicted, (long long)w->reserved_end_predicted);
            }
            printf("]}\n");
        } else {
            for (int i = 0; i < n_dev; i++) print_human(&res[i]);
            if (!n_dev) printf("allocator check: no device has events to replay\n");
            if (n_cfg && n_dev) {
                printf("what-if, device %d: the same stream from a fresh start (no cached segments; the blocks live at\n"
                       "the start allocated anew) under other allocator settings:\n", (int)base.device);
                printf("  %-44s %14s %22s %14s\n", "settings", "peak reserved", "fragmentation at peak", "reserved end");
                for (int c = -1; c < n_cfg; c++) {
                    const remat_ext_replay *w = c < 0 ? &base : &wi[c];
                    char b3[64];
                    printf("  %-44.44s %14s %22s %14s\n", c < 0 ? "as recorded" : what_if->items[c],
                           remat_fmt_bytes_short(w->peak_reserved_predicted, b1, sizeof b1),
                           remat_fmt_bytes_short(w->fragmentation_at_peak, b2, sizeof b2),
                           remat_fmt_bytes_short(w->reserved_end_predicted, b3, sizeof b3));
                }
                printf("  (fragmentation at peak: reserved minus allocated block bytes when allocated peaks)\n");
            }
        }
    }
    remat_xfree(res);
    remat_xfree(wi);
    return rc;
}
