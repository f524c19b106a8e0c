/*
 * mxa analyze ablation --q Q.npy --k K.npy --v V.npy: every attention
 * configuration of the paper's Tables 2 and 3 on the same inputs, against
 * fp32 attention: NMSE, cosine, max error, and the row sums of the weights.
 * Sets of inputs (comma-separated lists) are pooled: NMSE = sum of squared
 * errors over sum of squares of the fp32 outputs of every set.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "svg.h"

#define MAX_SETS 64

typedef struct ablation {
    const char *name, *table, *bar;
    int hadamard, pnq, format, smooth;
    mxa_rule rule;
} ablation;

#define NCONF 8

static void configs(ablation c[NCONF])
{
    const mxa_rule uos = mxa_rule_uos(), ocp = mxa_rule_ocp(), tfs = mxa_rule_tfs();
    c[0] = (ablation){"MXAttention (Hadamard + UOS + PNQ)", "3: Full", "MXAttention", 1, 1, MXA_FORMAT_MXFP4, 0, uos};
    c[1] = (ablation){"w/o UOS (Hadamard + OCP + PNQ)", "3: w/o UOS", "w/o UOS", 1, 1, MXA_FORMAT_MXFP4, 0, ocp};
    c[2] = (ablation){"w/o PNQ and UOS (Hadamard + OCP, direct)", "3: w/o PNQ and UOS", "w/o PNQ+UOS", 1, 0, MXA_FORMAT_MXFP4, 0, ocp};
    c[3] = (ablation){"OCP MXFP4 (ocp-direct)", "2, 3: MXFP4 (OCP)", "OCP", 0, 0, MXA_FORMAT_MXFP4, 0, ocp};
    c[4] = (ablation){"TFS (Hadamard + TFS + PNQ)", "TFS, q = 6", "TFS", 1, 1, MXA_FORMAT_MXFP4, 0, tfs};
    c[5] = (ablation){"UOS + PNQ, no rotation", "extra", "UOS+PNQ, no rot.", 0, 1, MXA_FORMAT_MXFP4, 0, uos};
    c[6] = (ablation){"NVFP4 (direct)", "2: NVFP4", "NVFP4", 0, 0, MXA_FORMAT_NVFP4, 0, uos};
    c[7] = (ablation){"NVFP4 + smoothing (direct)", "2: NVFP4 + SageAttention", "NVFP4+smooth", 0, 0, MXA_FORMAT_NVFP4, 1, uos};
}

typedef struct pooled {
    double err2, ref2, a2, dot, max_abs, sum_rows, min_row, max_row;
    int64_t rows;
} pooled;

static void pool(pooled *p, const float *a, const float *ref, int64_t n, const float *row_sums, int64_t rows)
{
    for (int64_t i = 0; i < n; i++) {
        const double x = a[i], y = ref[i], e = x - y;
        p->err2 += e * e;
        p->ref2 += y * y;
        p->a2 += x * x;
        p->dot += x * y;
        if (fabs(e) > p->max_abs || isnan(e)) p->max_abs = fabs(e);
    }
    for (int64_t r = 0; row_sums && r < rows; r++) {
        if (isnan(row_sums[r])) continue;
        p->sum_rows += row_sums[r];
        p->min_row = fmin(p->min_row, row_sums[r]);
        p->max_row = fmax(p->max_row, row_sums[r]);
        p->rows++;
    }
}

static double nmse_of(const pooled *p) { return p->ref2 > 0 ? p->err2 / p->ref2 : p->err2; }

/* One configuration on one set: the reference (with row sums) or a device. */
static int run_one(mxa_device *dev, const mxa_attention_desc *desc, int bc, const an_tensor *q, const an_tensor *k,
                   const an_tensor *v, float *o, float *row_sums)
{
    mxa_tensor tq, tk, tv, to;
    mxa_status st;
    if ((st = mxa_tensor_init(&tq, MXA_F32, q->shape[0], q->shape[1], q->shape[2], q->shape[3], q->data)) ||
        (st = mxa_tensor_init(&tk, MXA_F32, k->shape[0], k->shape[1], k->shape[2], k->shape[3], k->data)) ||
        (st = mxa_tensor_init(&tv, MXA_F32, v->shape[0], v->shape[1], v->shape[2], v->shape[3], v->data)) ||
        (st = mxa_tensor_init(&to, MXA_F32, q->shape[0], q->shape[1], q->shape[2], q->shape[3], o)))
        return cli_library_error(q->path, st);
    mxa_attention_desc d = *desc;
    d.bc = bc;
    st = dev ? mxa_attention(dev, &d, &tq, &tk, &tv, &to, NULL, NULL)
             : mxa_reference_attention(&d, bc, &tq, &tk, &tv, &to, NULL, row_sums);
    return st ? cli_library_error(q->path, st) : CLI_OK;
}

enum { O_Q, O_K, O_V, O_BC, O_CAUSAL, O_SCALE, O_DEVICE, O_SVG, O_CSV, O_JSON, O_COUNT };

int analyze_ablation(int argc, char **argv)
{
    cli_option o[O_COUNT] = {
        [O_Q] = {"--q", "Q.npy[,...]", "queries (one or more comma-separated sets)", NULL},
        [O_K] = {"--k", "K.npy[,...]", "keys, one per query file", NULL},
        [O_V] = {"--v", "V.npy[,...]", "values, one per query file", NULL},
        [O_BC] = {"--bc", "N", "key-tile size (default 64)", NULL},
        [O_CAUSAL] = {"--causal", NULL, "causal mask, bottom-right aligned", NULL},
        [O_SCALE] = {"--scale", "X", "softmax scale (default 1/sqrt(D))", NULL},
        [O_DEVICE] = {"--device", "ID", "run on this device instead of the reference (no row sums then)", NULL},
        [O_SVG] = {"--svg", "FILE", "write a bar chart of the NMSE of each configuration", NULL},
        [O_CSV] = {"--csv", "FILE", "write the tables as CSV", NULL},
        [O_JSON] = {"--json", "FILE", "write the tables as JSON", NULL},
    };
    cli_spec spec = {"analyze ablation", "--q Q.npy --k K.npy --v V.npy [options]",
                     "Accuracy against fp32 attention of every configuration of the paper's Tables 2 and 3:\n"
                     "MXAttention, w/o UOS, w/o PNQ and UOS, OCP MXFP4, TFS, NVFP4 and NVFP4 + smoothing.",
                     o, O_COUNT, 0, 0, {NULL}, 0};
    int rc = cli_parse(&spec, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if (!o[O_Q].value || !o[O_K].value || !o[O_V].value) {
        cli_error("analyze ablation: --q, --k and --v are required");
        return CLI_USAGE;
    }
    long bc = 64;
    float scale = 0.0f;
    if (o[O_BC].value && (rc = cli_int("--bc", o[O_BC].value, 32, 4096, 32, &bc))) return rc;
    if (o[O_SCALE].value && (rc = cli_positive_float("--scale", o[O_SCALE].value, &scale))) return rc;
    if ((rc = an_check_files(&o[O_Q], 3, NULL, 0, &o[O_SVG], 3))) return rc;

    char qs[8192], ks[8192], vs[8192];
    const char *qp[MAX_SETS], *kp[MAX_SETS], *vp[MAX_SETS];
    snprintf(qs, sizeof qs, "%s", o[O_Q].value);
    snprintf(ks, sizeof ks, "%s", o[O_K].value);
    snprintf(vs, sizeof vs, "%s", o[O_V].value);
    const int nq = an_split(qs, qp, MAX_SETS, "--q"), nk = an_split(ks, kp, MAX_SETS, "--k"),
              nv = an_split(vs, vp, MAX_SETS, "--v");
    if (nq < 0 || nk < 0 || nv < 0) return CLI_USAGE;
    if (nq != nk || nk != nv) {
        cli_error("--q, --k and --v list different numbers of files (%d, %d, %d)", nq, nk, nv);
        return CLI_USAGE;
    }
    ablation cf[NCONF];
    configs(cf);
    pooled pl[NCONF];
    for (int c = 0; c < NCONF; c++) pl[c] = (pooled){0, 0, 0, 0, 0, 0, INFINITY, -INFINITY, 0};
    an_report *r = an_report_new("ablation");
    an_table *tp = r ? an_table_add(r, "sets", "Per input set", 0, "set\tconfiguration\tNMSE\tcosine\tmax abs error") : NULL;
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    an_tensor q = {0}, k = {0}, v = {0};
    float *ref = NULL, *out = NULL, *sums = NULL;
    rc = CLI_FAIL;
    if (!tp) {
        cli_error("analyze ablation: out of memory");
        goto out;
    }
    if (o[O_DEVICE].value && cli_open_device(o[O_DEVICE].value, &rt, &dev)) goto out;
    for (int s = 0; s < nq; s++) {
        if (an_load(qp[s], &q) || an_load(kp[s], &k) || an_load(vp[s], &v)) goto out;
        const int64_t n = an_numel(&q), rows = n / q.shape[3];
        free(ref);
        free(out);
        free(sums);
        ref = malloc((size_t)n * sizeof(float));
        out = malloc((size_t)n * sizeof(float));
        sums = malloc((size_t)rows * sizeof(float));
        if (!ref || !out || !sums) {
            cli_error("analyze ablation: out of memory");
            goto out;
        }
        mxa_attention_desc d;
        mxa_attention_desc_init(&d, MXA_RECIPE_FP32);
        d.causal = o[O_CAUSAL].value != NULL;
        d.scale = scale;
        if (run_one(dev, &d, (int)bc, &q, &k, &v, ref, NULL)) goto out;
        for (int c = 0; c < NCONF; c++) {
            mxa_attention_desc_init(&d, MXA_RECIPE_MXATTENTION);
            d.hadamard = cf[c].hadamard;
            d.rule = cf[c].rule;
            d.placement = cf[c].pnq ? MXA_PLACEMENT_PNQ : MXA_PLACEMENT_DIRECT;
            d.format = (mxa_format)cf[c].format;
            d.smooth = cf[c].smooth;
            d.causal = o[O_CAUSAL].value != NULL;
            d.scale = scale;
            if (run_one(dev, &d, (int)bc, &q, &k, &v, out, dev ? NULL : sums)) goto out;
            pooled one = {0, 0, 0, 0, 0, 0, INFINITY, -INFINITY, 0};
            pool(&one, out, ref, n, NULL, 0);
            pool(&pl[c], out, ref, n, dev ? NULL : sums, rows);
            if (an_row(tp, "%s\t%s\t%.6e\t%.8f\t%.6e", qp[s], cf[c].name, nmse_of(&one),
                       one.dot / sqrt(one.a2 * one.ref2), one.max_abs))
                goto out;
        }
        an_tensor_free(&q);
        an_tensor_free(&k);
        an_tensor_free(&v);
    }
    an_table *tm = an_table_add(r, "ablation",
                                "Accuracy vs fp32 attention (pooled over the input sets; paper Tables 2-3 configurations)", 1,
                                "configuration\tpaper row\tNMSE\tcosine\tmax abs error\tOCP NMSE gap closed\trow sum mean\trow sum min\trow sum max");
    if (!tm) {
        cli_error("analyze ablation: out of memory");
        goto out;
    }
    const double ocp = nmse_of(&pl[3]);
    double nmse[NCONF];
    const char *labels[NCONF];
    for (int c = 0; c < NCONF; c++) {
        char rs[3][24] = {"n/a", "n/a", "n/a"};
        if (pl[c].rows) {
            snprintf(rs[0], sizeof rs[0], "%.6f", pl[c].sum_rows / (double)pl[c].rows);
            snprintf(rs[1], sizeof rs[1], "%.6f", pl[c].min_row);
            snprintf(rs[2], sizeof rs[2], "%.6f", pl[c].max_row);
        }
        nmse[c] = nmse_of(&pl[c]);
        labels[c] = cf[c].bar;
        if (an_row(tm, "%s\t%s\t%.4e\t%.8f\t%.4e\t%.1f%%\t%s\t%s\t%s", cf[c].name, cf[c].table, nmse[c],
                   pl[c].dot / sqrt(pl[c].a2 * pl[c].ref2), pl[c].max_abs, ocp > 0 ? 100.0 * (1.0 - nmse[c] / ocp) : NAN,
                   rs[0], rs[1], rs[2]))
            goto out;
    }
    an_report_print(r);
    printf("\nOCP NMSE gap closed = 1 - NMSE / NMSE(OCP MXFP4); fp32 attention is the reference (Bc %ld, %s).\n", bc,
           dev ? o[O_DEVICE].value : "the library's reference implementation");
    if (o[O_SVG].value) {
        char err[256];
        svg_axes ax = {"Attention output NMSE vs fp32 (lower is better)", "", "NMSE", 1};
        if (svg_bars(o[O_SVG].value, &ax, labels, nmse, NCONF, err, sizeof err)) {
            cli_error("%s: %s", o[O_SVG].value, err);
            goto out;
        }
    }
    if ((o[O_CSV].value && an_report_write_csv(r, o[O_CSV].value)) ||
        (o[O_JSON].value && an_report_write_json(r, o[O_JSON].value)))
        goto out;
    rc = CLI_OK;
out:
    an_tensor_free(&q);
    an_tensor_free(&k);
    an_tensor_free(&v);
    free(ref);
    free(out);
    free(sums);
    cli_close_device(rt, dev);
    an_report_free(r);
    return rc;
}
