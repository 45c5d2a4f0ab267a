/* report.c - human and JSON output of `remat verify`. */
#include "verify/report.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "core/base/types.h"
#include "core/io/json_write.h"
#include "core/model/plan_notation.h"

static const char *fmt_bytes(int64_t b, char *buf, size_t len) {
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (fabs(v) >= 1024.0 && i < 4) {
        v /= 1024.0;
        i++;
    }
    if (i == 0)
        snprintf(buf, len, "%" PRId64 " B", b);
    else
        snprintf(buf, len, "%.2f %s (%" PRId64 " B)", v, u[i], b);
    return buf;
}

static void upper(const char *s, char *buf, size_t len) {
    size_t i = 0;
    for (; s[i] && i + 1 < len; i++) buf[i] = (s[i] >= 'a' && s[i] <= 'z') ? (char)(s[i] - 32) : s[i];
    buf[i] = '\0';
}

const char *remat_verify_plan_desc(const remat_model *m, const remat_plan *p, char *buf, size_t len) {
    remat_plan_notation(p, m, buf, len);
    return buf;
}

static const char *kind_name(remat_verify_diff_kind k) {
    switch (k) {
    case REMAT_VERIFY_SAME: return "same";
    case REMAT_VERIFY_DIFFERENT: return "different";
    case REMAT_VERIFY_SHAPE: return "shape";
    case REMAT_VERIFY_ONLY_A: return "only-baseline";
    case REMAT_VERIFY_ONLY_B: return "only-plan";
    }
    return "?";
}

static const char *k_fail_names[REMAT_VERIFY_FAIL_BITS] = {"mismatch",      "lossy",           "recompute-mismatch",
                                                           "saves-nothing", "peak-not-reduced", "reserved-higher"};

void remat_verify_print_tensors(FILE *f, const remat_verify_cmp *cmp, const char *name_a, const char *name_b,
                                int table) {
    char sh[96], idx[96];
    if (table == REMAT_VERIFY_TABLE_NONE) return;
    int same = cmp->n - cmp->n_different;
    if (table == REMAT_VERIFY_TABLE_ALL || cmp->n_different)
        fprintf(f, "  %-34s %-18s %10s %14s  %s\n", "tensor", "shape", "differ", "max|diff|", "first difference");
    for (int i = 0; i < cmp->n; i++) {
        const remat_verify_diff *d = &cmp->d[i];
        if (table != REMAT_VERIFY_TABLE_ALL && d->kind == REMAT_VERIFY_SAME) continue;
        remat_verify_shape_str(d->ndim, d->shape, sh, sizeof sh);
        if (d->kind == REMAT_VERIFY_DIFFERENT || d->kind == REMAT_VERIFY_SAME) {
            char md[32];
            if (isnan(d->max_abs_diff))
                snprintf(md, sizeof md, "nan");
            else
                snprintf(md, sizeof md, "%.6g", d->max_abs_diff);
            remat_verify_index_str(d, idx, sizeof idx);
            if (d->first_flat >= 0) {
                size_t l = strlen(idx);
                snprintf(idx + l, sizeof idx - l, " 0x%08x vs 0x%08x", d->first_a, d->first_b);
            }
            fprintf(f, "  %-34s %-18s %10" PRId64 " %14s  %s\n", d->name, sh, d->n_diff, md, idx);
        } else {
            if (d->kind == REMAT_VERIFY_SHAPE)
                fprintf(f, "  %-34s %-18s %10" PRId64 " %14s  shape or type differs\n", d->name, sh, d->n_diff, "-");
            else
                fprintf(f, "  %-34s %-18s %10" PRId64 " %14s  only in the %s\n", d->name, sh, d->n_diff, "-",
                        d->kind == REMAT_VERIFY_ONLY_A ? name_a : name_b);
        }
    }
    if (table != REMAT_VERIFY_TABLE_ALL)
        fprintf(f, "  %d of %d tensors bit-identical%s\n", same, cmp->n,
                same ? " (not listed; --all-tensors lists every tensor)" : "");
}

static void header(FILE *f, const remat_verify_context *cx) {
    char desc[256];
    remat_verify_plan_desc(cx->model, cx->plan, desc, sizeof desc);
    fprintf(f, "remat verify: model %s (T=%" PRId64 ", N=%" PRId64 "), plan %s", cx->model->name, cx->model->T,
            cx->model->N, desc);
    if (cx->plan_path && cx->plan_path[0] && strcmp(cx->plan_path, desc) != 0) fprintf(f, " (%s)", cx->plan_path);
    fprintf(f, ", backend %s", cx->backend ? cx->backend : "ref");
    if (cx->threads > 0) fprintf(f, " (%d thread%s)", cx->threads, cx->threads == 1 ? "" : "s");
    fprintf(f, ", seed %" PRIu64 "\n", cx->seed);
}

/* "38.3% less" or "15.4% more" for a saving s = 1 - plan/base. */
static const char *less_more(double s, char *buf, size_t len) {
    snprintf(buf, len, "%.1f%% %s", 100.0 * (s < 0 ? -s : s), s < 0 ? "more" : "less");
    return buf;
}

void remat_verify_print_human(FILE *f, const remat_verify_context *cx, const remat_verify_result *r) {
    char b1[64], b2[64];
    header(f, cx);
    remat_verify_print_tensors(f, &r->cmp, "baseline", "plan run", cx->tensors);
    char lm[32];
    fprintf(f, "  end of forward   %s -> %s (%s)\n", fmt_bytes(r->base.end_of_forward_bytes, b1, sizeof b1),
            fmt_bytes(r->plan.end_of_forward_bytes, b2, sizeof b2),
            less_more(remat_verify_saving(r->base.end_of_forward_bytes, r->plan.end_of_forward_bytes), lm, sizeof lm));
    fprintf(f, "  peak live        %s -> %s (%s)\n", fmt_bytes(r->base.peak_live_bytes, b1, sizeof b1),
            fmt_bytes(r->plan.peak_live_bytes, b2, sizeof b2),
            less_more(remat_verify_saving(r->base.peak_live_bytes, r->plan.peak_live_bytes), lm, sizeof lm));
    fprintf(f, "  peak reserved    %s -> %s (%s; the caching allocator model: what runs out on a GPU)\n",
            fmt_bytes(r->base.peak_reserved_bytes, b1, sizeof b1), fmt_bytes(r->plan.peak_reserved_bytes, b2, sizeof b2),
            less_more(remat_verify_saving(r->base.peak_reserved_bytes, r->plan.peak_reserved_bytes), lm, sizeof lm));
    fprintf(f, "  step time        %.4f s -> %.4f s\n", r->base.step_time_s, r->plan.step_time_s);
    fprintf(f, "  recomputed layer forwards %d (plan implies %d), distinct layers %d (%d), compressions %" PRId64
               " (%d)\n",
            r->plan.recomputed_layers, r->expect.recomputed_layers, r->plan.recomputed_layer_set,
            r->expect.recomputed_layer_set, r->plan.compressions, r->expect.compressed_segments);
    if (r->compress_checked)
        fprintf(f,
                "  losslessness     executor: %" PRId64 " of %" PRId64 " compressions checked, %" PRId64
                " differ; backend: %" PRId64 " encodings decoded by the host, %" PRId64 " wrong; %" PRId64
                " round trips, %" PRId64 " wrong\n",
                r->plan.compressions_checked, r->plan.compressions, r->plan.compression_mismatches,
                r->compress.compressions, r->compress.format_bad, r->compress.decompressions,
                r->compress.roundtrip_bad);
    else
        fprintf(f, "  losslessness     not checked (--no-compress-check)\n");
    if (r->compress.first_problem[0]) fprintf(f, "  first compression problem: %s\n", r->compress.first_problem);
    remat_verify_print_verdict(f, cx, r);
}

void remat_verify_print_verdict(FILE *f, const remat_verify_context *cx, const remat_verify_result *r) {
    char up[32];
    unsigned counted = remat_verify_counted(r->failures, cx->equivalence_only);
    upper(remat_verify_verdict(counted), up, sizeof up);
    int same = r->cmp.n - r->cmp.n_different;
    if (!counted && r->failures) { /* equivalence only, and the plan saves no memory */
        fprintf(f, "verdict: %s: %d tensors bit-identical (equivalence only: the memory check says %s, not "
                   "counted)\n",
                up, same, remat_verify_verdict(r->failures));
        return;
    }
    if (!counted) {
        fprintf(f, "verdict: %s: %d tensors bit-identical; the plan saves %.1f%% of the live peak and %.1f%% of the "
                   "reserved peak, %.1f%% at the end of forward\n",
                up, same, 100.0 * remat_verify_saving(r->base.peak_live_bytes, r->plan.peak_live_bytes),
                100.0 * remat_verify_saving(r->base.peak_reserved_bytes, r->plan.peak_reserved_bytes),
                100.0 * remat_verify_saving(r->base.end_of_forward_bytes, r->plan.end_of_forward_bytes));
        return;
    }
    fprintf(f, "verdict: %s:", up);
    const char *sep = " ";
    if (r->cmp.n_different) {
        const char *first = "";
        for (int i = 0; i < r->cmp.n; i++)
            if (r->cmp.d[i].kind != REMAT_VERIFY_SAME) {
                first = r->cmp.d[i].name;
                break;
            }
        fprintf(f, "%s%d of %d tensors differ (first: %s)", sep, r->cmp.n_different, r->cmp.n, first);
        sep = "; ";
    }
    if (r->failures & REMAT_VERIFY_FAIL_LOSSY) {
        fprintf(f, "%sa compressed input did not come back bit for bit", sep);
        sep = "; ";
    }
    if (r->failures & REMAT_VERIFY_FAIL_RECOMPUTE) {
        fprintf(f, "%sthe executor recomputed %d layer forwards (%d layers) with %" PRId64
                   " compressions, the plan implies %d (%d) with %d",
                sep, r->plan.recomputed_layers, r->plan.recomputed_layer_set, r->plan.compressions,
                r->expect.recomputed_layers, r->expect.recomputed_layer_set, r->expect.compressed_segments);
        sep = "; ";
    }
    if (r->failures & REMAT_VERIFY_FAIL_NO_SAVING) {
        fprintf(f, "%sthe plan saves nothing (neither the end-of-forward bytes nor the peak are lower)", sep);
        sep = "; ";
    }
    if (r->failures & REMAT_VERIFY_FAIL_PEAK) {
        fprintf(f, "%sthe plan does not lower the peak (%.1f%% less at the end of forward only)", sep,
                100.0 * remat_verify_saving(r->base.end_of_forward_bytes, r->plan.end_of_forward_bytes));
        sep = "; ";
    }
    if (r->failures & REMAT_VERIFY_FAIL_RESERVED) {
        char b1[64], b2[64];
        fprintf(f, "%sthe plan reserves more than plain backpropagation (%s against %s: %.1f%% of the live peak saved, "
                   "none of what runs out)",
                sep, fmt_bytes(r->plan.peak_reserved_bytes, b1, sizeof b1), fmt_bytes(r->base.peak_reserved_bytes, b2, sizeof b2),
                100.0 * remat_verify_saving(r->base.peak_live_bytes, r->plan.peak_live_bytes));
        sep = "; ";
    }
    if (!r->cmp.n_different) fprintf(f, "%sall %d tensors bit-identical", sep, r->cmp.n);
    fputc('\n', f);
}

static void json_step(FILE *f, const remat_step_result *s) {
    fprintf(f,
            "{\"loss\": ");
    remat_json_number(f, s->loss);
    fprintf(f,
            ", \"end_of_forward_bytes\": %" PRId64 ", \"peak_live_bytes\": %" PRId64 ", \"peak_reserved_bytes\": %" PRId64
            ", \"step_time_s\": ",
            s->end_of_forward_bytes, s->peak_live_bytes, s->peak_reserved_bytes);
    remat_json_number(f, s->step_time_s);
    fprintf(f,
            ", \"recomputed_layers\": %d, \"recomputed_layer_set\": %d, \"compressions\": %" PRId64
            ", \"compressed_bytes\": %" PRId64 "}",
            s->recomputed_layers, s->recomputed_layer_set, s->compressions, s->compressed_bytes);
}

static void json_context(FILE *f, const remat_verify_context *cx) {
    fprintf(f, "\"model\": ");
    remat_json_string(f, cx->model->name);
    fprintf(f, ", \"model_path\": ");
    remat_json_string(f, cx->model->path);
    fprintf(f, ", \"backend\": ");
    remat_json_string(f, cx->backend ? cx->backend : "ref");
    fprintf(f, ", \"seed\": %" PRIu64 ", \"threads\": %d", cx->seed, cx->threads);
}

void remat_verify_json_tensors(FILE *f, const remat_verify_cmp *cmp) {
    char sh[96];
    fputc('[', f);
    for (int i = 0; i < cmp->n; i++) {
        const remat_verify_diff *d = &cmp->d[i];
        fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
        remat_json_string(f, d->name);
        fprintf(f, ", \"dtype\": \"%s\", \"shape\": %s, \"elements\": %" PRId64 ", \"status\": \"%s\", \"differing\": %" PRId64
                   ", \"max_abs_diff\": ",
                d->dtype == REMAT_VERIFY_I32 ? "int32" : "float32",
                remat_verify_shape_str(d->ndim, d->shape, sh, sizeof sh), d->elems, kind_name(d->kind), d->n_diff);
        if (d->kind == REMAT_VERIFY_SAME || d->kind == REMAT_VERIFY_DIFFERENT)
            remat_json_number(f, d->max_abs_diff);
        else
            fputs("null", f);
        fprintf(f, ", \"first_index\": ");
        if (d->first_flat < 0) {
            fputs("null", f);
        } else {
            fputc('[', f);
            for (int k = 0; k < d->ndim; k++) fprintf(f, "%s%" PRId64, k ? ", " : "", d->first_index[k]);
            fprintf(f, "], \"first_bits\": [\"0x%08x\", \"0x%08x\"]", d->first_a, d->first_b);
        }
        fputc('}', f);
    }
    fputc(']', f);
}

void remat_verify_print_json(FILE *f, const remat_verify_context *cx, const remat_verify_result *r) {
    unsigned counted = remat_verify_counted(r->failures, cx->equivalence_only);
    fprintf(f, "{\"verdict\": ");
    remat_json_string(f, remat_verify_verdict(counted));
    fprintf(f, ", \"passed\": %s, \"equivalence_only\": %s, \"memory_verdict\": ", counted ? "false" : "true",
            cx->equivalence_only ? "true" : "false");
    remat_json_string(f, remat_verify_verdict(r->failures & REMAT_VERIFY_FAIL_MEMORY));
    fprintf(f, ", \"tensors_identical\": %s, \"failures\": [", r->cmp.n_different ? "false" : "true");
    const char *sep = "";
    for (int b = 0; b < REMAT_VERIFY_FAIL_BITS; b++)
        if (r->failures & (1u << b)) {
            fprintf(f, "%s\"%s\"", sep, k_fail_names[b]);
            sep = ", ";
        }
    fprintf(f, "], ");
    json_context(f, cx);
    char desc[256];
    fprintf(f, ", \"plan\": ");
    remat_json_string(f, cx->plan_path ? cx->plan_path : "");
    fprintf(f, ", \"plan_desc\": ");
    remat_json_string(f, remat_verify_plan_desc(cx->model, cx->plan, desc, sizeof desc));
    fprintf(f, ", \"tensors\": ");
    remat_verify_json_tensors(f, &r->cmp);
    fprintf(f, ",\n \"baseline\": ");
    json_step(f, &r->base);
    fprintf(f, ",\n \"plan_run\": ");
    json_step(f, &r->plan);
    fprintf(f, ",\n \"expected\": {\"recomputed_layers\": %d, \"recomputed_layer_set\": %d, \"compressions\": %d}",
            r->expect.recomputed_layers, r->expect.recomputed_layer_set, r->expect.compressed_segments);
    fprintf(f, ",\n \"saving\": {\"end_of_forward\": ");
    remat_json_number(f, remat_verify_saving(r->base.end_of_forward_bytes, r->plan.end_of_forward_bytes));
    fprintf(f, ", \"peak_live\": ");
    remat_json_number(f, remat_verify_saving(r->base.peak_live_bytes, r->plan.peak_live_bytes));
    fprintf(f, ", \"peak_reserved\": ");
    remat_json_number(f, remat_verify_saving(r->base.peak_reserved_bytes, r->plan.peak_reserved_bytes));
    fprintf(f, "},\n \"compression_check\": {\"enabled\": %s, \"executor_checked\": %" PRId64
               ", \"executor_mismatches\": %" PRId64 ", \"backend_encodings\": %" PRId64 ", \"backend_format_bad\": %" PRId64
               ", \"backend_roundtrips\": %" PRId64 ", \"backend_roundtrip_bad\": %" PRId64 ", \"first_problem\": ",
            r->compress_checked ? "true" : "false", r->plan.compressions_checked, r->plan.compression_mismatches,
            r->compress.compressions, r->compress.format_bad, r->compress.decompressions, r->compress.roundtrip_bad);
    if (r->compress.first_problem[0])
        remat_json_string(f, r->compress.first_problem);
    else
        fputs("null", f);
    fprintf(f, "}}\n");
}

/* ---- grid ---- */

/* Rows that break the determinism contract (shown first in the table). */
static int row_broken(const remat_verify_grid_row *r) { return (r->failures & REMAT_VERIFY_FAIL_EQUIVALENCE) != 0; }

int remat_verify_grid_failed(const remat_verify_grid_row *rows, int n, int equivalence_only) {
    int bad = 0;
    for (int i = 0; i < n; i++) bad += remat_verify_counted(rows[i].failures, equivalence_only) != 0;
    return bad;
}

static void grid_row(FILE *f, int width, const remat_verify_grid_row *r) {
    fprintf(f, "  %-*s  %-18s %7.1f%% %7.1f%% %8.4f s", width, r->plan, remat_verify_verdict(r->failures),
            100.0 * r->peak_saving, 100.0 * r->eof_saving, r->step_time_s);
    if (r->first_diff[0]) fprintf(f, "  first difference: %s", r->first_diff);
    fputc('\n', f);
}

/* The grid's verdict: the most serious counted failure of any row. */
static const char *grid_verdict(const remat_verify_grid_row *rows, int n, int equivalence_only) {
    unsigned all = 0;
    for (int i = 0; i < n; i++) all |= remat_verify_counted(rows[i].failures, equivalence_only);
    return remat_verify_verdict(all);
}

void remat_verify_grid_print_human(FILE *f, const remat_verify_context *cx, const remat_verify_grid_summary *s,
                                   const remat_verify_grid_row *rows, int n, int all_rows) {
    fprintf(f, "remat verify --grid: model %s (T=%" PRId64 ", N=%" PRId64 "), backend %s, seed %" PRIu64 "\n",
            cx->model->name, cx->model->T, cx->model->N, cx->backend ? cx->backend : "ref", cx->seed);
    if (s->sampled)
        fprintf(f, "  %d of %" PRId64 " valid plans, a random sample (sample seed %" PRIu64 ")\n", n, s->grid_size,
                s->sample_seed);
    else
        fprintf(f, "  all %d plans of the grid (%" PRId64 " valid plans; the baseline is the reference)\n", n,
                s->grid_size);
    int width = 8;
    for (int i = 0; i < n; i++) {
        int l = (int)strlen(rows[i].plan);
        if (l > width) width = l;
    }
    if (width > 90) width = 90;
    fprintf(f, "  %-*s  %-18s %8s %8s %10s\n", width, "plan", "verdict", "peak", "eof", "step time");
    int counts[REMAT_VERIFY_FAIL_BITS + 1] = {0}; /* [BITS]: identical */
    for (int i = 0; i < n; i++) {
        int b = 0;
        while (b < REMAT_VERIFY_FAIL_BITS && !(rows[i].failures & (1u << b))) b++;
        counts[b]++;
    }
    if (all_rows || n <= REMAT_VERIFY_GRID_ROWS) {
        for (int i = 0; i < n; i++) grid_row(f, width, &rows[i]);
    } else {
        int shown = 0;
        for (int i = 0; i < n; i++)
            if (row_broken(&rows[i])) {
                grid_row(f, width, &rows[i]);
                shown++;
            }
        /* the largest peak savings (ties: grid order) */
        int top[REMAT_VERIFY_GRID_TOP], nt = 0;
        for (int i = 0; i < n; i++) {
            if (row_broken(&rows[i])) continue;
            int at = nt;
            while (at > 0 && rows[top[at - 1]].peak_saving < rows[i].peak_saving) at--;
            if (at >= REMAT_VERIFY_GRID_TOP) continue;
            if (nt < REMAT_VERIFY_GRID_TOP) nt++;
            for (int k = nt - 1; k > at; k--) top[k] = top[k - 1];
            top[at] = i;
        }
        fprintf(f, "  ... largest peak savings:\n");
        for (int k = 0; k < nt; k++) grid_row(f, width, &rows[top[k]]);
        fprintf(f, "  (%d rows not shown: --all-rows or --json prints every row)\n", n - shown - nt);
    }
    fprintf(f, "  %d identical, %d mismatch, %d lossy, %d recompute-mismatch, %d saves-nothing, %d peak-not-reduced, "
               "%d reserved-higher; baseline step %.4f s, %.2f s in all\n",
            counts[6], counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], s->baseline_step_time_s,
            s->total_wall_s);
    remat_verify_grid_print_verdict(f, cx, rows, n);
}

void remat_verify_grid_print_verdict(FILE *f, const remat_verify_context *cx, const remat_verify_grid_row *rows,
                                     int n) {
    int bad = remat_verify_grid_failed(rows, n, cx->equivalence_only);
    int broken = remat_verify_grid_failed(rows, n, 1), memory = 0;
    for (int i = 0; i < n; i++) memory += (rows[i].failures & REMAT_VERIFY_FAIL_EQUIVALENCE) == 0 && rows[i].failures != 0;
    char up[32];
    upper(grid_verdict(rows, n, cx->equivalence_only), up, sizeof up);
    if (broken)
        fprintf(f, "verdict: %s: %d of %d plans break the determinism contract\n", up, broken, n);
    else if (bad)
        fprintf(f, "verdict: %s: all %d plans bit-identical, but %d save no memory or do not lower the peak "
                   "(--equivalence-only counts equivalence alone)\n",
                up, n, memory);
    else if (memory)
        fprintf(f, "verdict: %s: all %d plans bit-identical to plain backpropagation (equivalence only: %d save no "
                   "memory or do not lower the peak, not counted)\n",
                up, n, memory);
    else
        fprintf(f, "verdict: %s: all %d plans bit-identical to plain backpropagation, each saves memory\n", up, n);
}

void remat_verify_grid_print_json(FILE *f, const remat_verify_context *cx, const remat_verify_grid_summary *s,
                                  const remat_verify_grid_row *rows, int n) {
    int bad = remat_verify_grid_failed(rows, n, cx->equivalence_only);
    fprintf(f, "{\"verdict\": \"%s\", \"passed\": %s, \"equivalence_only\": %s, ",
            grid_verdict(rows, n, cx->equivalence_only), bad ? "false" : "true", cx->equivalence_only ? "true" : "false");
    json_context(f, cx);
    fprintf(f, ", \"grid_size\": %" PRId64 ", \"sampled\": %s, \"sample_seed\": %" PRIu64 ", \"verified\": %d"
               ", \"failed\": %d",
            s->grid_size, s->sampled ? "true" : "false", s->sample_seed, n, bad);
    if (s->slice_n > 0)
        fprintf(f, ", \"slice\": \"%d/%d\", \"T\": %" PRId64 ", \"N\": %" PRId64, s->slice_i, s->slice_n, cx->model->T,
                cx->model->N);
    if (!s->no_times) {
        fprintf(f, ", \"total_wall_s\": ");
        remat_json_number(f, s->total_wall_s);
        fprintf(f, ", \"baseline_step_time_s\": ");
        remat_json_number(f, s->baseline_step_time_s);
    }
    fprintf(f, ", \"plans\": [");
    for (int i = 0; i < n; i++) {
        const remat_verify_grid_row *r = &rows[i];
        fprintf(f, "%s\n  {\"plan\": ", i ? "," : "");
        remat_json_string(f, r->plan);
        fprintf(f, ", \"verdict\": \"%s\", \"differing_tensors\": %d, \"first_difference\": ",
                remat_verify_verdict(r->failures), r->n_different);
        if (r->first_diff[0])
            remat_json_string(f, r->first_diff);
        else
            fputs("null", f);
        fprintf(f, ", \"peak_saving\": ");
        remat_json_number(f, r->peak_saving);
        fprintf(f, ", \"end_of_forward_saving\": ");
        remat_json_number(f, r->eof_saving);
        if (!s->no_times) {
            fprintf(f, ", \"step_time_s\": ");
            remat_json_number(f, r->step_time_s);
            fprintf(f, ", \"wall_s\": ");
            remat_json_number(f, r->wall_s);
        }
        if (s->slice_n > 0) fprintf(f, ", \"index\": %d, \"failures\": %u", r->index, r->failures);
        fputc('}', f);
    }
    fprintf(f, "]}\n");
}

/* ---- compressors ---- */

void remat_verify_compress_print_human(FILE *f, const remat_verify_compress_report *r) {
    fprintf(f, "remat verify --compressors: seed %" PRIu64 ", large bit round trip %" PRId64 " elements%s\n", r->seed,
            r->large_elems, r->large_elems ? "" : " (skipped)");
    for (int i = 0; i < r->n; i++) {
        const remat_verify_compress_group *g = &r->g[i];
        fprintf(f, "  %-7s %-44s %7" PRId64 " checks  %s", g->compressor, g->what, g->cases,
                g->failures ? "FAIL" : "ok");
        if (g->seconds >= 0.05) fprintf(f, "  (%.2f s)", g->seconds);
        if (g->failures) fprintf(f, "  %" PRId64 " failed, first: %s", g->failures, g->first_failure);
        fputc('\n', f);
    }
    if (r->failures)
        fprintf(f, "verdict: FAIL: %" PRId64 " of %" PRId64 " checks failed\n", r->failures, r->cases);
    else
        fprintf(f, "verdict: PASS: %" PRId64 " checks, every round trip bit-identical, every bad value refused\n",
                r->cases);
}

void remat_verify_compress_print_json(FILE *f, const remat_verify_compress_report *r) {
    fprintf(f,
            "{\"verdict\": \"%s\", \"passed\": %s, \"seed\": %" PRIu64 ", \"large_elems\": %" PRId64
            ", \"checks\": %" PRId64 ", \"failures\": %" PRId64 ", \"groups\": [",
            r->failures ? "fail" : "pass", r->failures ? "false" : "true", r->seed, r->large_elems, r->cases,
            r->failures);
    for (int i = 0; i < r->n; i++) {
        const remat_verify_compress_group *g = &r->g[i];
        fprintf(f, "%s\n  {\"compressor\": \"%s\", \"what\": ", i ? "," : "", g->compressor);
        remat_json_string(f, g->what);
        fprintf(f, ", \"checks\": %" PRId64 ", \"failures\": %" PRId64 ", \"seconds\": ", g->cases, g->failures);
        remat_json_number(f, g->seconds);
        fprintf(f, ", \"first_failure\": ");
        if (g->first_failure[0])
            remat_json_string(f, g->first_failure);
        else
            fputs("null", f);
        fputc('}', f);
    }
    fprintf(f, "]}\n");
}

/* ---- two dumps ---- */

/* The plan attribute (a plan file's text) on one line, cut to fit. */
static const char *plan_line(const char *text, char *buf, size_t len) {
    size_t o = 0;
    int space = 0;
    for (const char *p = text; *p && o + 4 < len; p++) {
        int ws = *p == ' ' || *p == '\n' || *p == '\r' || *p == '\t';
        if (ws) {
            space = o > 0;
            continue;
        }
        if (space) buf[o++] = ' ';
        space = 0;
        buf[o++] = *p;
    }
    buf[o] = '\0';
    if (!o) snprintf(buf, len, "(none: plain backpropagation)");
    return buf;
}

void remat_verify_dump_print_human(FILE *f, const char *path_a, const char *path_b,
                                   const remat_verify_dump_result *r, int table) {
    char pa[128], pb[128];
    fprintf(f, "remat verify: dumps %s vs %s\n", path_a, path_b);
    fprintf(f, "  plan of the first:  %s\n", plan_line(r->plan_a, pa, sizeof pa));
    fprintf(f, "  plan of the second: %s\n", plan_line(r->plan_b, pb, sizeof pb));
    remat_verify_print_tensors(f, &r->cmp, "first", "second", table);
    if (r->model_differs) fprintf(f, "  attribute model differs (the dumps are of different model files)\n");
    if (r->seed_differs) fprintf(f, "  attribute seed differs: %s vs %s\n", r->seed_a, r->seed_b);
    if (r->backend_differs) fprintf(f, "  attribute backend differs: %s vs %s\n", r->backend_a, r->backend_b);
    if (r->identical) {
        fprintf(f, "verdict: IDENTICAL: %d tensors bit-identical\n", r->cmp.n);
        return;
    }
    fprintf(f, "verdict: MISMATCH:");
    const char *sep = " ";
    if (r->cmp.n_different) {
        for (int i = 0; i < r->cmp.n; i++)
            if (r->cmp.d[i].kind != REMAT_VERIFY_SAME) {
                fprintf(f, " %d of %d tensors differ (first: %s)", r->cmp.n_different, r->cmp.n, r->cmp.d[i].name);
                break;
            }
        sep = "; ";
    }
    if (r->model_differs || r->seed_differs || r->backend_differs)
        fprintf(f, "%sthe dumps are of different runs (model, seed or backend)", sep);
    fputc('\n', f);
}

void remat_verify_dump_print_json(FILE *f, const char *path_a, const char *path_b,
                                  const remat_verify_dump_result *r) {
    fprintf(f, "{\"verdict\": \"%s\", \"passed\": %s, \"a\": ", r->identical ? "identical" : "mismatch",
            r->identical ? "true" : "false");
    remat_json_string(f, path_a);
    fprintf(f, ", \"b\": ");
    remat_json_string(f, path_b);
    fprintf(f, ", \"plan_a\": ");
    remat_json_string(f, r->plan_a);
    fprintf(f, ", \"plan_b\": ");
    remat_json_string(f, r->plan_b);
    fprintf(f, ", \"model_differs\": %s, \"seed_differs\": %s, \"backend_differs\": %s, \"tensors\": ",
            r->model_differs ? "true" : "false", r->seed_differs ? "true" : "false",
            r->backend_differs ? "true" : "false");
    remat_verify_json_tensors(f, &r->cmp);
    fprintf(f, "}\n");
}
