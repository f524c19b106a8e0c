/*
 * mxa analyze rowsum --q Q.npy --k K.npy [--v V.npy]: the row sums of the
 * attention weights that direct placement induces, against PNQ (paper §3,
 * §4.2, §5.5.2, Fig. 7).
 *
 * Direct placement normalizes by l = sum_t beta_t sum_j P~ while the output
 * is built from P^ = MXFP4(P~), so row r's weights sum to
 *   s_r = sum_t beta_t sum_j P^ / sum_t beta_t sum_j P~,  beta_t = exp(m_t - m_final).
 * The online-softmax tile loop of SPEC §2 is rerun here with the library's
 * quantizer (mxa_quantize) so that every element of P~ can be classified by
 * its rounding outcome; s_r - 1 then splits exactly into the contributions
 * of zeroing (P^ = 0), saturation (normalized value above 6), downward and
 * upward rounding. The row sums are checked against mxa_reference_attention.
 * --materialized quantizes the normalized probabilities of each row instead
 * (the paper's Fig. 7 diagnostic).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "svg.h"

#define MAX_SETS 64
#define NCFG 4
#define HBINS 60

enum { ZERO, SAT, DOWN, UP, NPART };

typedef struct config {
    const char *name;
    int hadamard;
    mxa_rule rule;
} config;

typedef struct options {
    int bc, causal, materialized;
    float scale; /* 0: 1/sqrt(D) */
} options;

/* Per-row results of one configuration, over all input sets. */
typedef struct rows {
    float *sum;          /* the row sum of the induced weights (fp32, as the reference) */
    double *part[NPART]; /* contributions to sum - 1 */
    double *entropy;     /* of the row's unquantized weights, in nats */
    int64_t n;
} rows;

static void rows_free(rows *r)
{
    free(r->sum);
    for (int p = 0; p < NPART; p++) free(r->part[p]);
    free(r->entropy);
}

static int rows_alloc(rows *r, int64_t n)
{
    memset(r, 0, sizeof *r);
    r->sum = malloc((size_t)n * sizeof(float));
    r->entropy = malloc((size_t)n * sizeof(double));
    int ok = r->sum && r->entropy;
    for (int p = 0; p < NPART; p++) ok = ok && (r->part[p] = malloc((size_t)n * sizeof(double)));
    if (!ok) {
        rows_free(r);
        cli_error("analyze rowsum: out of memory");
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* The score of SPEC §2 step 3: 32-element block products summed in fp32. On
 * decoded MXFP4 values every block product is exact, as in the library. */
static float score(const float *q, const float *k, int64_t d)
{
    float dot = 0.0f;
    for (int64_t b = 0; b < d; b += 32) {
        float s = 0.0f;
        for (int64_t c = b; c < b + 32; c++) s += q[c] * k[c];
        dot += s;
    }
    return dot;
}

/* Classifies P~ -> P^ for one row and returns sum_j w_j (P^ - P~) by class. */
static void classify(const float *pt, const float *ph, const uint8_t *sc, int64_t n, const double *beta_of_key,
                     double part[NPART], double *denom)
{
    for (int64_t j = 0; j < n; j++) {
        if (pt[j] == 0.0f) continue;
        const double w = beta_of_key[j], diff = (double)ph[j] - pt[j];
        *denom += w * pt[j];
        if (diff == 0.0) continue;
        const double v = ldexp(pt[j], 127 - (int)sc[j / 32]);
        if (ph[j] == 0.0f) part[ZERO] += w * diff;
        else if (v > 6.0) part[SAT] += w * diff;
        else if (diff < 0) part[DOWN] += w * diff;
        else part[UP] += w * diff;
    }
}

/* One head of one input set under one configuration: rows [row0, row0 + nq). */
static int run_head(mxa_device *dev, const config *cf, const options *op, const float *q, const float *k,
                    int64_t nq, int64_t nk, int64_t d, rows *out, int64_t row0)
{
    const int64_t tiles = (nk + op->bc - 1) / op->bc, nb = (nk + 31) / 32;
    const float scale = op->scale > 0 ? op->scale : (float)(1.0 / sqrt((double)d));
    float *p = malloc((size_t)(nq * nk) * sizeof(float)), *ph = malloc((size_t)(nq * nk) * sizeof(float));
    float *mt = malloc((size_t)(nq * tiles) * sizeof(float));
    uint8_t *sc = malloc((size_t)(nq * nb));
    double *beta = malloc((size_t)nk * sizeof(double));
    int rc = CLI_FAIL;
    if (!p || !ph || !mt || !sc || !beta) {
        cli_error("analyze rowsum: out of memory");
        goto out;
    }
    for (int64_t i = 0; i < nq; i++) {
        const int64_t last = op->causal ? i + nk - nq : nk - 1;
        float *pr = p + i * nk, m = -INFINITY;
        for (int64_t j = 0; j < nk; j++) pr[j] = j <= last ? score(q + i * d, k + j * d, d) * scale : -INFINITY;
        if (op->materialized) {
            double z = 0.0;
            for (int64_t j = 0; j < nk; j++) m = fmaxf(m, pr[j]);
            for (int64_t j = 0; j < nk; j++) z += j <= last ? exp((double)pr[j] - m) : 0.0;
            for (int64_t j = 0; j < nk; j++) pr[j] = j <= last ? (float)(exp((double)pr[j] - m) / z) : 0.0f;
            continue;
        }
        for (int64_t t = 0; t < tiles; t++) { /* P~ of each tile against the running maximum */
            const int64_t j0 = t * op->bc, len = nk - j0 < op->bc ? nk - j0 : op->bc;
            float tmax = -INFINITY;
            for (int64_t j = 0; j < len; j++) tmax = fmaxf(tmax, pr[j0 + j]);
            const float m_new = tmax > m ? tmax : m;
            mt[i * tiles + t] = m_new;
            for (int64_t j = 0; j < len; j++)
                pr[j0 + j] = (m_new == -INFINITY || pr[j0 + j] == -INFINITY) ? 0.0f : expf(pr[j0 + j] - m_new);
            m = m_new;
        }
    }
    if (an_fake_quantize(dev, p, nq, nk, cf->rule, ph, sc)) goto out;
    for (int64_t i = 0; i < nq; i++) {
        const float *pt = p + i * nk, *pq = ph + i * nk;
        double part[NPART] = {0}, denom = 0.0, ent = 0.0;
        float l = 0.0f, l_hat = 0.0f, m = -INFINITY;
        if (op->materialized) {
            for (int64_t j = 0; j < nk; j++) {
                beta[j] = 1.0;
                l += pt[j];
                l_hat += pq[j];
            }
        } else {
            const float m_final = mt[i * tiles + tiles - 1];
            for (int64_t t = 0; t < tiles; t++) { /* l and l^ exactly as the reference sums them */
                const int64_t j0 = t * op->bc, len = nk - j0 < op->bc ? nk - j0 : op->bc;
                const float m_new = mt[i * tiles + t];
                for (int64_t j = 0; j < len; j++) beta[j0 + j] = m_new == -INFINITY ? 0.0 : exp((double)m_new - m_final);
                if (m_new == -INFINITY) continue;
                const float alpha = expf(m - m_new);
                float st = 0.0f, sh = 0.0f;
                for (int64_t j = 0; j < len; j++) st += pt[j0 + j];
                for (int64_t j = 0; j < len; j++) sh += pq[j0 + j];
                l = alpha * l + st;
                l_hat = alpha * l_hat + sh;
                m = m_new;
            }
        }
        classify(pt, pq, sc + i * nb, nk, beta, part, &denom);
        for (int64_t j = 0; j < nk; j++) {
            const double w = beta[j] * pt[j] / denom;
            if (w > 0) ent -= w * log(w);
        }
        const int64_t r = row0 + i;
        out->sum[r] = l > 0 ? l_hat / l : NAN;
        for (int pp = 0; pp < NPART; pp++) out->part[pp][r] = denom > 0 ? part[pp] / denom : NAN;
        out->entropy[r] = ent;
    }
    rc = CLI_OK;
out:
    free(p);
    free(ph);
    free(mt);
    free(sc);
    free(beta);
    return rc;
}

/* Rotates (when asked) and quantizes a whole tensor along D. */
static float *prepare(mxa_device *dev, const an_tensor *t, const config *cf)
{
    const int64_t n = an_numel(t), d = t->shape[3];
    float *x = malloc((size_t)n * sizeof(float)), *y = malloc((size_t)n * sizeof(float));
    if (!x || !y) {
        cli_error("analyze rowsum: out of memory");
        goto fail;
    }
    memcpy(x, t->data, (size_t)n * sizeof(float));
    if (cf->hadamard)
        for (int64_t r = 0; r < n / d; r++) an_hadamard(x + r * d, (int)d);
    if (an_fake_quantize(dev, x, n / d, d, cf->rule, y, NULL)) goto fail;
    free(x);
    return y;
fail:
    free(x);
    free(y);
    return NULL;
}

static int run_config(mxa_device *dev, const config *cf, const options *op, const an_tensor *q, const an_tensor *k,
                      int nsets, rows *out)
{
    int64_t row0 = 0;
    for (int s = 0; s < nsets; s++) {
        float *qh = prepare(dev, &q[s], cf), *kh = qh ? prepare(dev, &k[s], cf) : NULL;
        int rc = qh && kh ? CLI_OK : CLI_FAIL;
        const int64_t h = q[s].shape[1], hkv = k[s].shape[1], nq = q[s].shape[2], nk = k[s].shape[2], d = q[s].shape[3];
        for (int64_t bh = 0; !rc && bh < q[s].shape[0] * h; bh++) {
            const int64_t kvh = (bh / h) * hkv + (bh % h) / (h / hkv);
            rc = run_head(dev, cf, op, qh + bh * nq * d, kh + kvh * nk * d, nq, nk, d, out, row0);
            row0 += nq;
        }
        free(qh);
        free(kh);
        if (rc) return rc;
    }
    return CLI_OK;
}

/* Row sums from the reference for one recipe (PNQ, NVFP4), over every set. */
static int reference_sums(const mxa_attention_desc *desc, const options *op, const an_tensor *q, const an_tensor *k,
                          const an_tensor *v, int nsets, float *sums)
{
    int64_t row0 = 0;
    for (int s = 0; s < nsets; s++) {
        const int64_t n = an_numel(&q[s]);
        float *o = malloc((size_t)n * sizeof(float));
        mxa_tensor tq, tk, tv, to;
        mxa_status st;
        mxa_attention_desc dd = *desc;
        dd.causal = op->causal;
        dd.scale = op->scale;
        if (!o) {
            cli_error("analyze rowsum: out of memory");
            return CLI_FAIL;
        }
        if ((st = mxa_tensor_init(&tq, MXA_F32, q[s].shape[0], q[s].shape[1], q[s].shape[2], q[s].shape[3], q[s].data)) ||
            (st = mxa_tensor_init(&tk, MXA_F32, k[s].shape[0], k[s].shape[1], k[s].shape[2], k[s].shape[3], k[s].data)) ||
            (st = mxa_tensor_init(&tv, MXA_F32, v[s].shape[0], v[s].shape[1], v[s].shape[2], v[s].shape[3], v[s].data)) ||
            (st = mxa_tensor_init(&to, MXA_F32, q[s].shape[0], q[s].shape[1], q[s].shape[2], q[s].shape[3], o)) ||
            (st = mxa_reference_attention(&dd, op->bc, &tq, &tk, &tv, &to, NULL, sums + row0))) {
            free(o);
            return cli_library_error(q[s].path, st);
        }
        free(o);
        row0 += q[s].shape[0] * q[s].shape[1] * q[s].shape[2];
    }
    return CLI_OK;
}

static int load_sets(char *qs, char *ks, char *vs, an_tensor *q, an_tensor *k, an_tensor *v, int *nsets)
{
    const char *qp[MAX_SETS], *kp[MAX_SETS], *vp[MAX_SETS];
    const int nq = an_split(qs, qp, MAX_SETS, "--q"), nk = an_split(ks, kp, MAX_SETS, "--k");
    const int nv = vs ? an_split(vs, vp, MAX_SETS, "--v") : nk;
    if (nq < 0 || nk < 0 || nv < 0) return CLI_USAGE;
    if (nq != nk || nv != nk) {
        cli_error("--q, --k and --v list different numbers of files (%d, %d, %d)", nq, nk, nv);
        return CLI_USAGE;
    }
    *nsets = 0;
    for (int s = 0; s < nq; s++) {
        if (an_load(qp[s], &q[s])) return CLI_FAIL;
        *nsets = s + 1;
        if (an_load(kp[s], &k[s])) return CLI_FAIL;
        if (vs) {
            if (an_load(vp[s], &v[s])) return CLI_FAIL;
        } else { /* V does not enter the row sums: zeros of K's shape for the reference */
            v[s] = k[s];
            v[s].path = "zeros";
            if (!(v[s].data = calloc((size_t)an_numel(&k[s]), sizeof(float)))) {
                cli_error("analyze rowsum: out of memory");
                return CLI_FAIL;
            }
        }
        const an_tensor *a = &q[s], *b = &k[s];
        if (a->shape[0] != b->shape[0] || a->shape[3] != b->shape[3] || b->shape[1] == 0 ||
            a->shape[1] % b->shape[1] != 0 || memcmp(b->shape, v[s].shape, sizeof b->shape) != 0) {
            cli_error("%s, %s: shapes do not match ([B, H, Nq, D] and [B, Hkv, Nk, D], Hkv dividing H, v as k)",
                      a->path, b->path);
            return CLI_FAIL;
        }
        if (a->shape[3] % 32 != 0 || !an_hadamard_ok(a->shape[3])) {
            cli_error("%s: head size %lld must be 32, 64, 128 or 256", a->path, (long long)a->shape[3]);
            return CLI_FAIL;
        }
    }
    return CLI_OK;
}

typedef struct summary {
    double mean, min, max, under, part[NPART];
    int64_t n;
} summary;

static summary summarize(const rows *r, int64_t lo_rank, int64_t hi_rank, const int64_t *order)
{
    summary s = {0, INFINITY, -INFINITY, 0, {0}, 0};
    for (int64_t t = lo_rank; t < hi_rank; t++) {
        const int64_t i = order ? order[t] : t;
        if (isnan(r->sum[i])) continue;
        s.mean += r->sum[i];
        s.min = fmin(s.min, r->sum[i]);
        s.max = fmax(s.max, r->sum[i]);
        s.under += r->sum[i] < 1.0f;
        for (int p = 0; p < NPART; p++) s.part[p] += r->part[p][i];
        s.n++;
    }
    if (s.n) {
        s.mean /= (double)s.n;
        s.under /= (double)s.n;
        for (int p = 0; p < NPART; p++) s.part[p] /= (double)s.n;
    }
    return s;
}

static const double *sort_key;
static int by_key(const void *a, const void *b)
{
    const double x = sort_key[*(const int64_t *)a], y = sort_key[*(const int64_t *)b];
    return (x > y) - (x < y);
}

enum { O_Q, O_K, O_V, O_BC, O_CAUSAL, O_SCALE, O_MATERIALIZED, O_DEVICE, O_SVG, O_CSV, O_JSON, O_COUNT };

int analyze_rowsum(int argc, char **argv)
{
    cli_option o[O_COUNT] = {
        [O_Q] = {"--q", "Q.npy[,...]", "queries (one or more comma-separated sets)", NULL},
        [O_K] = {"--k", "K.npy[,...]", "keys, one per query file", NULL},
        [O_V] = {"--v", "V.npy[,...]", "values (optional: they do not enter the row sums)", NULL},
        [O_BC] = {"--bc", "N", "key-tile size of the online softmax (default 64)", NULL},
        [O_CAUSAL] = {"--causal", NULL, "causal mask, bottom-right aligned", NULL},
        [O_SCALE] = {"--scale", "X", "softmax scale (default 1/sqrt(D))", NULL},
        [O_MATERIALIZED] = {"--materialized", NULL, "quantize the normalized probabilities instead (Fig. 7 diagnostic)", NULL},
        [O_DEVICE] = {"--device", "ID", "device that quantizes (default cpu; bit-exact everywhere)", NULL},
        [O_SVG] = {"--svg", "FILE", "write the histogram of the row sums", NULL},
        [O_CSV] = {"--csv", "FILE", "write the tables as CSV", NULL},
        [O_JSON] = {"--json", "FILE", "write the tables as JSON", NULL},
    };
    cli_spec spec = {"analyze rowsum", "--q Q.npy --k K.npy [--v V.npy] [options]",
                     "Row sums of the attention weights under direct placement (MXFP4 with and without the\n"
                     "Hadamard rotation, OCP/TFS/UOS; NVFP4) against PNQ, and the split of the row-sum error into\n"
                     "zeroing, saturation, downward and upward rounding (paper §5.5.2, Fig. 7).",
                     o, O_COUNT, 0, 0, {NULL}, 0};
    int rc = cli_parse(&spec, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if (!o[O_Q].value || !o[O_K].value) {
        cli_error("analyze rowsum: --q and --k are required");
        return CLI_USAGE;
    }
    options op = {64, o[O_CAUSAL].value != NULL, o[O_MATERIALIZED].value != NULL, 0.0f};
    long bc;
    if (o[O_BC].value) {
        if ((rc = cli_int("--bc", o[O_BC].value, 32, 4096, 32, &bc))) return rc;
        op.bc = (int)bc;
    }
    if (o[O_SCALE].value && (rc = cli_positive_float("--scale", o[O_SCALE].value, &op.scale))) return rc;
    if ((rc = an_check_files(&o[O_Q], 3, NULL, 0, &o[O_SVG], 3))) return rc;

    const config cfgs[NCFG] = {{"OCP direct (no rotation)", 0, mxa_rule_ocp()},
                               {"Hadamard + OCP, direct", 1, mxa_rule_ocp()},
                               {"Hadamard + TFS, direct", 1, mxa_rule_tfs()},
                               {"Hadamard + UOS, direct", 1, mxa_rule_uos()}};
    char qs[8192], ks[8192], vs[8192];
    snprintf(qs, sizeof qs, "%s", o[O_Q].value);
    snprintf(ks, sizeof ks, "%s", o[O_K].value);
    snprintf(vs, sizeof vs, "%s", o[O_V].value ? o[O_V].value : "");
    an_tensor q[MAX_SETS], k[MAX_SETS], v[MAX_SETS];
    int nsets = 0;
    rows res[NCFG];
    float *ref = NULL, *extra[3] = {NULL, NULL, NULL};
    int64_t *order = NULL, total = 0;
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    an_report *r = an_report_new("rowsum");
    memset(res, 0, sizeof res);
    memset(q, 0, sizeof q);
    memset(k, 0, sizeof k);
    memset(v, 0, sizeof v);
    if ((rc = load_sets(qs, ks, o[O_V].value ? vs : NULL, q, k, v, &nsets))) goto out;
    rc = CLI_FAIL;
    for (int s = 0; s < nsets; s++) total += q[s].shape[0] * q[s].shape[1] * q[s].shape[2];
    if (!r || !(ref = malloc((size_t)total * sizeof(float))) || !(order = malloc((size_t)total * sizeof(int64_t)))) {
        cli_error("analyze rowsum: out of memory");
        goto out;
    }
    for (int e = 0; e < 3; e++)
        if (!(extra[e] = malloc((size_t)total * sizeof(float)))) {
            cli_error("analyze rowsum: out of memory");
            goto out;
        }
    if (cli_open_device(o[O_DEVICE].value ? o[O_DEVICE].value : "cpu", &rt, &dev)) goto out;

    an_table *tm = an_table_add(r, "rowsums", op.materialized
                                    ? "Row sums of quantized normalized probabilities (materialized P, Fig. 7 diagnostic)"
                                    : "Row sums of the induced attention weights (online softmax, direct placement vs PNQ)",
                                1, "configuration\trows\tmean\tmin\tmax\tshare < 1\tzeroing\tsaturation\tdown rounding\tup rounding\tmax |sum - reference|");
    an_table *te = an_table_add(r, "entropy", "Mean row sum by quartile of the row's attention entropy (nats)", 1,
                                "configuration\tentropy from\tentropy to\trows\tmean row sum\tshare < 1");
    an_table *th = an_table_add(r, "histogram", "Histogram of row sums", 0, "configuration\tbin from\tbin to\trows");
    if (!tm || !te || !th) {
        cli_error("analyze rowsum: out of memory");
        goto out;
    }
    double lo = 1.0, hi = 1.0;
    for (int c = 0; c < NCFG; c++) {
        if (rows_alloc(&res[c], total) || run_config(dev, &cfgs[c], &op, q, k, nsets, &res[c])) goto out;
        char check_text[32] = "n/a";
        if (!op.materialized) { /* the same row sums as the library's reference */
            mxa_attention_desc d;
            mxa_attention_desc_init(&d, MXA_RECIPE_OCP_DIRECT);
            d.hadamard = cfgs[c].hadamard;
            d.rule = cfgs[c].rule;
            if (reference_sums(&d, &op, q, k, v, nsets, ref)) goto out;
            double check = 0.0;
            for (int64_t i = 0; i < total; i++)
                if (!isnan(ref[i])) check = fmax(check, fabs((double)res[c].sum[i] - ref[i]));
            snprintf(check_text, sizeof check_text, "%.3g", check);
        }
        const summary s = summarize(&res[c], 0, total, NULL);
        lo = fmin(lo, s.min);
        hi = fmax(hi, s.max);
        if (an_row(tm, "%s\t%lld\t%.6f\t%.6f\t%.6f\t%.4f\t%+.6f\t%+.6f\t%+.6f\t%+.6f\t%s", cfgs[c].name,
                   (long long)s.n, s.mean, s.min, s.max, s.under, s.part[ZERO], s.part[SAT], s.part[DOWN], s.part[UP],
                   check_text))
            goto out;
        for (int64_t i = 0; i < total; i++) order[i] = i;
        sort_key = res[c].entropy;
        qsort(order, (size_t)total, sizeof *order, by_key);
        for (int qt = 0; qt < 4; qt++) {
            const int64_t a = total * qt / 4, b = total * (qt + 1) / 4;
            if (b <= a) continue;
            const summary e = summarize(&res[c], a, b, order);
            if (an_row(te, "%s\t%.3f\t%.3f\t%lld\t%.6f\t%.4f", cfgs[c].name, res[c].entropy[order[a]],
                       res[c].entropy[order[b - 1]], (long long)e.n, e.mean, e.under))
                goto out;
        }
    }
    if (!op.materialized) { /* recipes whose P^ is not MXFP4 or that use PNQ: reference row sums only */
        static const char *const names[3] = {"MXAttention (Hadamard + UOS + PNQ)", "NVFP4 direct", "NVFP4 + smoothing, direct"};
        mxa_attention_desc d[3];
        mxa_attention_desc_init(&d[0], MXA_RECIPE_MXATTENTION);
        mxa_attention_desc_init(&d[1], MXA_RECIPE_OCP_DIRECT);
        d[1].format = MXA_FORMAT_NVFP4;
        d[2] = d[1];
        d[2].smooth = 1;
        for (int e = 0; e < 3; e++) {
            if (reference_sums(&d[e], &op, q, k, v, nsets, extra[e])) goto out;
            cli_row_stats st = cli_row_sums(extra[e], total);
            int64_t under = 0;
            for (int64_t i = 0; i < total; i++) under += extra[e][i] < 1.0f;
            if (an_row(tm, "%s\t%lld\t%.6f\t%.6f\t%.6f\t%.4f\t\t\t\t\t", names[e], (long long)st.rows, st.mean, st.min,
                       st.max, st.rows ? (double)under / (double)st.rows : NAN))
                goto out;
        }
    }
    /* Histogram over a range that holds every configuration. */
    static double counts[NCFG][HBINS];
    svg_series series[NCFG];
    const double pad = 0.02 * (hi - lo + 1e-3), h0 = lo - pad, h1 = hi + pad, w = (h1 - h0) / HBINS;
    for (int c = 0; c < NCFG; c++) {
        for (int64_t i = 0; i < total; i++)
            if (!isnan(res[c].sum[i])) {
                int b = (int)((res[c].sum[i] - h0) / w);
                counts[c][b < 0 ? 0 : b >= HBINS ? HBINS - 1 : b] += 1.0;
            }
        for (int b = 0; b < HBINS; b++)
            if (an_row(th, "%s\t%.6f\t%.6f\t%.0f", cfgs[c].name, h0 + b * w, h0 + (b + 1) * w, counts[c][b])) goto out;
        series[c] = (svg_series){cfgs[c].name, NULL, counts[c], HBINS};
    }
    an_report_print(r);
    printf("\nzeroing + saturation + down + up = mean row sum - 1 (each averaged over rows); PNQ rows sum to 1 "
           "by construction.\n");
    if (o[O_SVG].value) {
        char err[256];
        svg_axes ax = {op.materialized ? "Row sums of quantized probabilities (materialized P)"
                                       : "Row sums of the induced attention weights, direct placement",
                       "row sum", "rows", 0};
        svg_marker m[1] = {{1.0, "PNQ: exactly 1"}};
        if (svg_histogram(o[O_SVG].value, &ax, h0, h1, HBINS, series, NCFG, m, 1, err, sizeof err)) {
            cli_error("%s: %s", o[O_SVG].value, err);
            goto out;
        }
    }
    if ((o[O_CSV].value && an_report_write_csv(r, o[O_CSV].value)) ||
        (o[O_JSON].value && an_report_write_json(r, o[O_JSON].value)))
        goto out;
    rc = CLI_OK;
out:
    for (int c = 0; c < NCFG; c++) rows_free(&res[c]);
    for (int s = 0; s < nsets; s++) {
        an_tensor_free(&q[s]);
        an_tensor_free(&k[s]);
        an_tensor_free(&v[s]);
    }
    for (int e = 0; e < 3; e++) free(extra[e]);
    free(ref);
    free(order);
    cli_close_device(rt, dev);
    an_report_free(r);
    return rc;
}
