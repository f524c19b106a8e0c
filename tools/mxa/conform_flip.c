/*
 * mxa conform: comparing two results of one attention problem (a device and
 * the reference, a device and expected vectors, two runs of a device) element
 * by element against bounds derived from fp32 rounding, and explaining a row
 * that differs by more through P~ code flips, or failing it, naming the row and
 * the element.
 *
 * Both results are held against conform's own trace of SPEC §2, computed here
 * in the reference's fp32 operations and order (runtime/reference.c; so it
 * equals the reference bit for bit, which the reference side of every built-in
 * comparison checks), with exact sums in double alongside.
 *
 * THE BOUNDS. u = 2^-24 (fp32 unit roundoff), gamma(n) = n u / (1 - n u), the
 * bound on an n-term fp32 sum or product in any order (Higham, Thm 3.1). Every
 * bound below is between two conforming implementations (twice one's distance
 * to exact arithmetic), so it holds for device vs reference, device vs vectors
 * written by another implementation, and either against the exact value.
 *
 * 1. Scores. S_j = scale * sum_b B_jb over nb = D/32 blocks. With Q and K
 *    quantized each block product B_jb is exact (SPEC §2.3: integers times a
 *    power of two), so only the fp32 sum of nb terms and the scale multiply (and
 *    a log2 e folded into it) round:
 *        E_j = 2 gamma(nb + 2) scale A_j,        A_j = sum_b |B_jb|.
 *    Without Q/K quantization every product rounds as well: nb -> D and
 *    A_j = sum_c |q_c k_jc|. With the rotation on and Q/K not quantized a backend
 *    may rotate otherwise (SPEC §2.1 "may differ by fp32 rounding"): a rotated
 *    element is within h_x = gamma(D + 1) |x|_1 / sqrt(D) of exact, moving S_j by
 *    at most 2 scale (h_q |k_j|_1 + |q|_1 h_kj), added to E_j. (With Q/K
 *    quantized such a difference would flip a Q/K code instead; every backend
 *    measured rotates in SPEC §2.1's order, bit for bit, so Q/K flips are not
 *    modelled here and a row that needs one fails.)
 *    The running maximum m_t after tile t is a max of scores:
 *        |m_t' - m_t| <= M_t = max E_j over the keys tiles 0..t have seen.
 *
 * 2. P~_j = exp(x_j), x_j = S_j - m_t. The argument differs by
 *        dx_j = E_j + M_t + u (2 |S_j| + 2 |m_t| + |x_j|)
 *    (the subtraction rounds, or S log2 e and m log2 e round separately when exp2
 *    is used: the error grows with |S|, not only with |x|). exp itself: at most
 *    3 + 2 |x| ulp (the loosest API bound, Vulkan's exp/exp2; OpenCL asks 3 ulp,
 *    libm < 1), and 1 ulp for the reference's expf, so relatively
 *        rho_j = expm1(dx_j) + (4 + 2 |x_j|) 2^-23.
 *    exp is monotonic with exp(0) = 1, so P~ <= 1 in any implementation, and the
 *    key holding the running maximum has P~ = 1 exactly when no other key seen
 *    so far comes near it (S_j - E_j > S_k + E_k): its interval is [1, 1].
 *
 * 3. Tile factors. Tile t's P^ V and row sum reach the output times
 *    F_t = exp(m_t - m), the product of the later alphas; relatively within
 *        rhoF_t = expm1(M_t + M + u sum_{t'>t} (|m_t'-1| + |m_t'|))
 *                 + sum_{t'>t} ((4 + 2 |m_t'-1 - m_t'|) 2^-23 + 2u)
 *    (the alpha arguments telescope; each alpha's exp and multiply round).
 *
 * 4. Output with no code flipped. Weights W_j = P^_j F_t (P~_j F_t when P is not
 *    quantized), row sum L = sum Ld_j with Ld_j = P^_j F_t (PNQ, or P not
 *    quantized) or P~_j F_t (direct placement). P^ is exact while no code flips;
 *    P~ carries rho_j: rhoN_j = rhoF_t + [P not quantized] rho_j + 2u and
 *    rhoD_j = rhoF_t + [L sums P~] rho_j + 2u. The fp32 sums of nk terms over nt
 *    tile rescales add g = 2 gamma(nk + 2 nt + 2) of the sums of magnitudes:
 *        |dO_c| <= tau_c = (sum_j W_j |V_jc| (rhoN_j + g) + |O_c| (sum_j Ld_j rhoD_j + g L)) / L
 *                          + 4u |O_c|   (+ one step of the output dtype for f16 / bf16)
 *                          + 2 (nk + 3 nt + 8) 2^-126 (1 + max |V|) / min(L, 1)
 *    (the last term: gamma assumes no underflow; each operation an element goes
 *    through may lose 2^-126 absolute where a device flushes subnormals),
 *    and for LSE = m + ln L (m itself, the row sum, Vulkan's log: 3 ulp, or 2^-21
 *    absolute near 1; the reference's logf and the final addition):
 *        |dLSE| <= tau_lse = M + log1p(sum_j Ld_j rhoD_j / L + g) + 2^-21 + 4 2^-23 |ln L| + 4u |LSE|.
 *
 * 5. Code flips. With P quantized, another implementation's P~_j may fall on the
 *    other side of an E2M1 rounding boundary of its block (when P~_j lies within
 *    rho_j of one), or a block's largest P~ on the other side of a shared-exponent
 *    threshold: its P^_j is then one code (or the block one scale) away from ours.
 *    For a row that misses the bounds of 4, those are the candidates: the
 *    alternative codes of P~_j are exactly those of its interval [P~ (1 - rho),
 *    min(1, P~ (1 + rho))] (the quantizer is monotonic), a block's alternative
 *    exponents those of its maximum's interval. Every combination of the
 *    candidates' alternatives (up to 16 candidates and 4096 combinations; further
 *    ones, and those too small to matter, only widen the bound by what they can
 *    change) moves the weights by dW_j = dP^_j F_t:
 *        O^F_c = (N_c + sum dW_j V^_jc) / (L + [PNQ] sum dW_j),   LSE^F = m + ln(L + [PNQ] sum dW_j)
 *    (the code step times V^_j, and through PNQ the row sum; direct placement's L
 *    sums P~ and does not move). The row is explained when one combination brings
 *    every element and the LSE within the bounds of 4 (plus the rounding of the
 *    moved weights). Otherwise the comparison fails, naming the row and the
 *    element furthest outside its bound.
 *
 * 6. Extras (docs/attention-inputs.md). A bias enters S_j with one more fp32 addition
 *    (and bias log2 e rounds where a kernel folds log2 e in): E_j += 2u (|S_j| + |bias_j|).
 *    A hidden key (mask, causal alignment, a -inf bias) has S_j = -inf, P~_j = 0 exactly,
 *    no bound and no flip; a batch with a key length is traced with that Nk (V^ zero-padded
 *    after it), the keys after it do not exist.
 *
 * Assumed of every implementation: SPEC §2's key tiles at the Bc it reports,
 * exp monotonic with exp(0) = 1, fp32 arithmetic (fp16/bf16 only where the
 * values are exact in it). Not searched: a second code change inside a block
 * taken to another exponent, more than 3 alternative codes of one P~ (both need
 * errors far beyond these bounds). Q/K code flips (section 1) are not modelled.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "conform.h"

#define U 0x1p-24
#define ULP 0x1p-23
#define MAX_UNITS 16
#define MAX_COMBOS 4096
#define MAX_OPTS 3

static double gam(double n)
{
    return n * U / (1.0 - n * U);
}

static const float e2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

/* The element format of a quantizer: MXFP4 under the desc's rule, or MXFP8 (E4M3, the
 * floor rule) for P and V when desc->pv_format says so. Codes are magnitudes, monotonic. */
static int fmt_exponent(int fp8, float max_abs, mxa_rule rule)
{
    return fp8 ? conform_model_fp8_exponent(max_abs) : conform_model_exponent(max_abs, rule);
}

static int fmt_code(int fp8, double v)
{
    return fp8 ? conform_model_fp8_code(v) : conform_model_code(v);
}

static double fmt_value(int fp8, int code, int e)
{
    return fp8 ? conform_model_fp8_value(code, e) : ldexp((double)e2m1[code], e);
}

/* SPEC §1 (or MXFP8) on n <= 32 values into their decoded values (what the reference
 * holds). -1 when not finite. */
static int quant_block(const float *x, int n, mxa_rule rule, int fp8, float *out)
{
    float m = 0.0f;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i])) return -1;
        if (fabsf(x[i]) > m) m = fabsf(x[i]);
    }
    const int e = fmt_exponent(fp8, m, rule);
    for (int i = 0; i < n; i++) {
        const float v = (float)fmt_value(fp8, fmt_code(fp8, ldexp(fabs((double)x[i]), -e)), e);
        if (!isfinite(v)) return -1;
        out[i] = signbit(x[i]) ? -v : v;
    }
    return 0;
}

/* 1 if row `row` (flattened b, h, i) has no visible key (SPEC §2: O = 0, LSE = -inf). */
static int row_empty(const conform_problem *p, int causal, int64_t row)
{
    return conform_row_empty(p, causal, row);
}

/* ------------------------------------------------------------- the trace */

typedef struct trace {
    const mxa_attention_desc *desc;
    const conform_problem *p;
    int bc, qk, qv, qp, pnq;
    int fp8;      /* P and V in MXFP8 (desc->pv_format) */
    float scale;
    mxa_dtype out_dtype;
    /* the prepared heads: query head (b, h), whose batch has nk keys (its key length) */
    int64_t qh, kvh, b, h, nk;
    float *q, *k, *v, *vt;     /* nq*d Q^, nk*d K^ (rotated, decoded), nk*d V^ token-major, d*nk V^ channel-major */
    double vmax;               /* max |V^| of the kv head */
    double *w, *wr;            /* nk: W_j and W_j rhoN_j of the row */
    double *q_raw, *q_rot;     /* per query row: |q|_1 before and after rotation */
    double *k_raw, *k_rot;     /* per key */
    float *col, *colq;         /* nk scratch */
    /* one row */
    float *s, *pt, *ph;        /* nk */
    double *E, *rho;           /* nk */
    unsigned char *one;        /* nk: P~ is exactly 1 in any implementation */
    float *mt;                 /* nt: running max after tile t (-inf: nothing seen) */
    double *Mt, *F, *rF;       /* nt */
    float *acc;                /* d */
    double *N, *S, *R, *O, *tau; /* d */
    double *half_pv;             /* d: what P V on fp16 may lose more (fp16_pv_variant) */
    double L, RL, lse, tau_lse;
    float m;
    int nt;
} trace;

static void trace_free(trace *t)
{
    free(t->q), free(t->k), free(t->v), free(t->vt), free(t->w), free(t->wr), free(t->q_raw), free(t->q_rot), free(t->k_raw), free(t->k_rot);
    free(t->col), free(t->colq), free(t->s), free(t->pt), free(t->ph), free(t->E), free(t->rho), free(t->one);
    free(t->mt), free(t->Mt), free(t->F), free(t->rF), free(t->acc), free(t->N), free(t->S), free(t->R), free(t->O);
    free(t->tau), free(t->half_pv);
    memset(t, 0, sizeof *t);
}

/* 0, or -1 when the problem is outside what the trace models (message in why) */
static int trace_init(trace *t, const mxa_attention_desc *desc, int bc, mxa_dtype out_dtype, const conform_problem *p,
                      const char **why)
{
    memset(t, 0, sizeof *t);
    t->desc = desc, t->p = p, t->bc = bc, t->out_dtype = out_dtype;
    t->qk = (desc->quantize & MXA_QUANT_QK) != 0;
    t->qv = (desc->quantize & MXA_QUANT_V) != 0;
    t->qp = (desc->quantize & MXA_QUANT_P) != 0;
    t->pnq = desc->placement == MXA_PLACEMENT_PNQ;
    t->fp8 = desc->pv_format == MXA_PV_MXFP8;
    t->scale = desc->scale > 0.0f ? desc->scale : (float)(1.0 / sqrt((double)p->d));
    t->qh = t->kvh = -1;
    if (desc->format != MXA_FORMAT_MXFP4) return *why = "not MXFP4", -1;
    if (p->d % 32 || p->d > 256 || p->nk < 1 || bc <= 0 || bc % 32) return *why = "shape outside the trace", -1;
    if (desc->hadamard && (p->d & (p->d - 1))) return *why = "rotation needs a power of two", -1;
    const size_t d = (size_t)p->d, nk = (size_t)p->nk, nq = (size_t)p->nq, nt = (nk + (size_t)bc - 1) / (size_t)bc;
    t->q = malloc(nq * d * 4), t->k = malloc(nk * d * 4), t->v = malloc(nk * d * 4), t->vt = malloc(nk * d * 4);
    t->w = malloc(nk * 8), t->wr = malloc(nk * 8);
    t->q_raw = malloc(nq * 8), t->q_rot = malloc(nq * 8), t->k_raw = malloc(nk * 8), t->k_rot = malloc(nk * 8);
    t->col = malloc(nk * 4), t->colq = malloc(nk * 4);
    t->s = malloc(nk * 4), t->pt = malloc(nk * 4), t->ph = malloc(nk * 4), t->E = malloc(nk * 8), t->rho = malloc(nk * 8);
    t->one = malloc(nk);
    t->mt = malloc(nt * 4), t->Mt = malloc(nt * 8), t->F = malloc(nt * 8), t->rF = malloc(nt * 8);
    t->acc = malloc(d * 4), t->N = malloc(d * 8), t->S = malloc(d * 8), t->R = malloc(d * 8), t->O = malloc(d * 8);
    t->tau = malloc(d * 8), t->half_pv = malloc(d * 8);
    if (!t->half_pv || !t->q || !t->k || !t->v || !t->vt || !t->w || !t->wr || !t->q_raw || !t->q_rot || !t->k_raw || !t->k_rot || !t->col || !t->colq || !t->s ||
        !t->pt || !t->ph || !t->E || !t->rho || !t->one || !t->mt || !t->Mt || !t->F || !t->rF || !t->acc || !t->N ||
        !t->S || !t->R || !t->O || !t->tau) {
        trace_free(t);
        return *why = "out of memory", -1;
    }
    return 0;
}

/* Rotates and quantizes n rows of d (SPEC §2.1-2); |x|_1 before and after. -1 if not finite. */
static int prep_rows(const trace *t, const float *src, int64_t n, float *dst, double *raw, double *rot)
{
    const int64_t d = t->p->d;
    for (int64_t r = 0; r < n; r++) {
        float *y = dst + r * d;
        memcpy(y, src + r * d, (size_t)d * 4);
        raw[r] = 0.0;
        for (int64_t c = 0; c < d; c++) raw[r] += fabs((double)y[c]);
        if (t->desc->hadamard) an_hadamard(y, (int)d); /* SPEC §2.1 in the library's fp32 order */
        if (t->qk)
            for (int64_t b = 0; b < d; b += 32)
                if (quant_block(y + b, 32, t->desc->rule, 0, y + b)) return -1;
        rot[r] = 0.0;
        for (int64_t c = 0; c < d; c++) {
            if (!isfinite(y[c])) return -1;
            rot[r] += fabs((double)y[c]);
        }
    }
    return 0;
}

static int trace_head(trace *t, int64_t b, int64_t h)
{
    const conform_problem *p = t->p;
    const int64_t d = p->d, nq = p->nq, qh = b * p->h + h, kvh = b * p->hkv + h / (p->h / p->hkv);
    const int64_t nk = conform_key_count(p, b); /* the keys after a key length do not exist */
    t->b = b, t->h = h, t->nk = nk;
    if (qh != t->qh) {
        t->qh = -1;
        if (prep_rows(t, p->q + qh * nq * d, nq, t->q, t->q_raw, t->q_rot)) return -1;
        t->qh = qh;
    }
    if (kvh != t->kvh) {
        t->kvh = -1;
        if (prep_rows(t, p->k + kvh * p->nk * d, nk, t->k, t->k_raw, t->k_rot)) return -1;
        const float *v = p->v + kvh * p->nk * d;
        t->vmax = 0.0;
        for (int64_t c = 0; c < d; c++) { /* V in blocks of 32 tokens (SPEC §2.2), padding beyond Nk */
            for (int64_t j = 0; j < nk; j++) t->col[j] = v[j * d + c];
            if (t->qv)
                for (int64_t j0 = 0; j0 < nk; j0 += 32)
                    if (quant_block(t->col + j0, (int)(nk - j0 < 32 ? nk - j0 : 32), t->desc->rule, t->fp8, t->colq + j0))
                        return -1;
            for (int64_t j = 0; j < nk; j++) {
                const float x = t->qv ? t->colq[j] : t->col[j];
                if (!isfinite(x)) return -1;
                t->v[j * d + c] = t->vt[c * p->nk + j] = x;
                t->vmax = fmax(t->vmax, fabs((double)x));
            }
        }
        t->kvh = kvh;
    }
    return 0;
}

/* One 32-element product the reference's way: exact when both sides are MXFP4
 * (the integer sum times a power of two, rounded once), else an fp32 sum in order. */
static float block_product(const float *x, int xs, const float *y, int ys, int n, int exact, double *mag)
{
    if (exact) {
        double sum = 0.0;
        for (int i = 0; i < n; i++) sum += (double)x[i * xs] * (double)y[i * ys];
        *mag = fabs(sum);
        return (float)sum;
    }
    float sum = 0.0f;
    double a = 0.0;
    for (int i = 0; i < n; i++) {
        sum += x[i * xs] * y[i * ys];
        a += fabs((double)x[i * xs] * (double)y[i * ys]);
    }
    *mag = a;
    return sum;
}

/* Query row i of the prepared head: the reference's fp32 result and the bounds
 * of the header comment. 0, or 1 for a row with no visible key. */
static int trace_row(trace *t, int64_t i)
{
    const conform_problem *p = t->p;
    const int64_t d = p->d, nk = t->nk, bc = t->bc, nb = d / 32;
    const float *q = t->q + i * d;
    const float *bias = conform_bias_row(p, t->b, t->h, i);
    if (nk == 0) return 1;
    const double n_terms = t->qk ? (double)nb : (double)d;
    const double es = 2.0 * gam(n_terms + 2.0) * t->scale;
    const double hq = gam((double)d + 1.0) * t->q_raw[i] / sqrt((double)d);
    /* 1. scores */
    for (int64_t j = 0; j < nk; j++) {
        t->one[j] = 0;
        if (!conform_key_visible(p, t->desc->causal, t->b, t->h, i, j) || (bias && bias[j] == -INFINITY)) {
            t->s[j] = -INFINITY, t->E[j] = 0.0; /* hidden: P~ = 0, never a maximum */
            continue;
        }
        const float *k = t->k + j * d;
        float dot = 0.0f;
        double a = 0.0, m;
        for (int64_t blk = 0; blk < nb; blk++) {
            dot += block_product(q + blk * 32, 1, k + blk * 32, 1, 32, t->qk, &m);
            a += m;
        }
        t->s[j] = dot * t->scale;
        t->E[j] = es * a;
        if (bias) { /* one fp32 addition (and, where a kernel folds log2 e in, bias * log2 e rounds too) */
            t->s[j] += bias[j];
            t->E[j] += 2.0 * U * (fabs((double)t->s[j]) + fabs((double)bias[j]));
        }
        if (t->desc->hadamard && !t->qk)
            t->E[j] += 2.0 * t->scale * (hq * t->k_rot[j] + t->q_rot[i] * gam((double)d + 1.0) * t->k_raw[j] / sqrt((double)d));
    }
    /* 2-3. the online softmax over tiles, in the reference's fp32 order */
    float m = -INFINITY, l = 0.0f;
    double Mrun = 0.0, b1v = -INFINITY, b2v = -INFINITY; /* the two largest S + E seen */
    int64_t b1i = -1;
    for (int64_t c = 0; c < d; c++) t->acc[c] = 0.0f;
    t->nt = (int)((nk + bc - 1) / bc);
    for (int tt = 0; tt < t->nt; tt++) {
        const int64_t j0 = tt * bc, len = nk - j0 < bc ? nk - j0 : bc;
        float tile_max = -INFINITY;
        int64_t arg = -1;
        for (int64_t j = j0; j < j0 + len; j++) {
            if (t->s[j] == -INFINITY) continue;
            if (t->s[j] > tile_max) tile_max = t->s[j], arg = j;
            if (t->E[j] > Mrun) Mrun = t->E[j];
            const double v = (double)t->s[j] + t->E[j];
            if (v > b1v) b2v = b1v, b1v = v, b1i = j;
            else if (v > b2v) b2v = v;
        }
        const float m_new = tile_max > m ? tile_max : m;
        t->mt[tt] = m_new;
        t->Mt[tt] = Mrun;
        if (m_new == -INFINITY) {
            for (int64_t j = j0; j < j0 + len; j++) t->pt[j] = t->ph[j] = 0.0f;
            continue;
        }
        if (arg >= 0 && tile_max > m) { /* this tile raised the maximum: is its key clear of every other? */
            const double other = b1i == arg ? b2v : b1v;
            t->one[arg] = (double)t->s[arg] - t->E[arg] > other;
        }
        const float alpha = expf(m - m_new);
        float sum_tilde = 0.0f;
        for (int64_t j = j0; j < j0 + len; j++) {
            t->pt[j] = t->s[j] == -INFINITY ? 0.0f : expf(t->s[j] - m_new);
            sum_tilde += t->pt[j];
        }
        for (int64_t b0 = j0; b0 < j0 + len; b0 += 32) {
            const int n = (int)(j0 + len - b0 < 32 ? j0 + len - b0 : 32);
            if (!t->qp) memcpy(t->ph + b0, t->pt + b0, (size_t)n * 4);
            else if (quant_block(t->pt + b0, n, t->desc->rule, t->fp8, t->ph + b0)) return -1;
        }
        float sum_hat = 0.0f;
        for (int64_t j = j0; j < j0 + len; j++) sum_hat += t->ph[j];
        l = alpha * l + ((t->pnq || !t->qp) ? sum_hat : sum_tilde);
        for (int64_t c = 0; c < d; c++) {
            float pv = 0.0f;
            double unused;
            for (int64_t b0 = j0; b0 < j0 + len; b0 += 32) {
                const int n = (int)(j0 + len - b0 < 32 ? j0 + len - b0 : 32);
                pv += block_product(t->ph + b0, 1, t->vt + c * p->nk + b0, 1, n, t->qp && t->qv, &unused);
            }
            t->acc[c] = alpha * t->acc[c] + pv;
        }
        m = m_new;
    }
    if (m == -INFINITY) return 1;
    t->m = m;
    /* 3. tile factors and their bounds, from the last tile back */
    double cum_arg = 0.0, cum_eps = 0.0;
    const double M = Mrun;
    for (int tt = t->nt - 1; tt >= 0; tt--) {
        if (t->mt[tt] == -INFINITY) {
            t->F[tt] = 0.0, t->rF[tt] = 0.0;
            continue;
        }
        t->F[tt] = exp((double)t->mt[tt] - (double)m);
        t->rF[tt] = expm1(t->Mt[tt] + M + U * cum_arg) + cum_eps;
        if (tt > 0 && t->mt[tt - 1] != -INFINITY) {
            cum_arg += fabs((double)t->mt[tt - 1]) + fabs((double)t->mt[tt]);
            cum_eps += (4.0 + 2.0 * fabs((double)t->mt[tt - 1] - (double)t->mt[tt])) * ULP + 2.0 * U;
        }
    }
    /* 2, 4. per-key relative bounds, weights, sums */
    t->L = t->RL = 0.0;
    const int sums_ptilde = t->qp && !t->pnq;
    for (int64_t j = 0; j < nk; j++) {
        const int tt = (int)(j / bc);
        if (t->s[j] == -INFINITY) {
            t->w[j] = t->wr[j] = t->rho[j] = 0.0;
            continue;
        }
        const double x = (double)t->s[j] - (double)t->mt[tt];
        const double dx = t->E[j] + t->Mt[tt] + U * (2.0 * fabs((double)t->s[j]) + 2.0 * fabs((double)t->mt[tt]) + fabs(x));
        t->rho[j] = expm1(dx) + (4.0 + 2.0 * fabs(x)) * ULP;
        const double W = (double)t->ph[j] * t->F[tt];
        const double Ld = (double)(sums_ptilde ? t->pt[j] : t->ph[j]) * t->F[tt];
        const double rN = t->rF[tt] + (t->qp ? 0.0 : t->rho[j]) + 2.0 * U;
        const double rD = t->rF[tt] + ((sums_ptilde || !t->qp) ? t->rho[j] : 0.0) + 2.0 * U;
        t->w[j] = W;
        t->wr[j] = W * rN;
        t->L += Ld;
        t->RL += Ld * rD;
    }
    const int64_t nvis = nk;
    double wsum = 0.0;
    for (int64_t j = 0; j < nvis; j++) wsum += t->w[j];
    for (int64_t c = 0; c < d; c++) {
        const float *v = t->vt + c * p->nk;
        double n_ = 0.0, s_ = 0.0, r_ = 0.0, fv = 0.0, vmax_c = 0.0;
        for (int64_t j = 0; j < nk; j++) vmax_c = fmax(vmax_c, fabs((double)v[j])); /* every key: prep sees them all */
        for (int64_t j = 0; j < nvis; j++) {
            const double a = fabs((double)v[j]);
            n_ += t->w[j] * (double)v[j];
            s_ += t->w[j] * a;
            r_ += t->wr[j] * a;
            fv += t->F[j / bc] * a;
        }
        t->N[c] = n_, t->S[c] = s_, t->R[c] = r_;
        /* README's known limit of P V on fp16: V^ divided by its column's largest block scale (<= 2 max |V^|,
         * the largest code of a nonzero block being >= 0.5) keeps 2^-24 of it absolute (fp16 subnormals), and
         * P^ keeps 2^-36 of the tile maximum (which F_t carries to the output) */
        t->half_pv[c] = (0x1p-23 * vmax_c * wsum + 0x1p-36 * fv) / t->L;
    }
    const double g = 2.0 * gam((double)nk + 2.0 * t->nt + 2.0);
    /* underflow: gamma assumes none; each of the ~nk + 3 nt operations an element goes through may lose up to
     * 2^-126 absolute where a device flushes subnormals (P~, products, rescaled sums) */
    const double floor_abs = 2.0 * ((double)nk + 3.0 * t->nt + 8.0) * 0x1p-126 * (1.0 + t->vmax) / fmin(t->L, 1.0);
    for (int64_t c = 0; c < d; c++) {
        t->O[c] = t->N[c] / t->L;
        const double o = fabs(t->O[c]);
        double step = 0.0;
        if (t->out_dtype != MXA_F32 && o > 0.0) { /* both sides rounded to the output dtype: one step apart at most */
            int e;
            frexp(o, &e);
            step = t->out_dtype == MXA_F16 ? fmax(ldexp(1.0, e - 11), 0x1p-24) : ldexp(1.0, e - 8);
        }
        t->tau[c] = (t->R[c] + g * t->S[c] + o * (t->RL + g * t->L)) / t->L + 4.0 * U * o + step + floor_abs;
    }
    t->lse = (double)m + log(t->L);
    t->tau_lse = M + log1p(t->RL / t->L + g) + 0x1p-21 + 4.0 * ULP * fabs(log(t->L)) + 4.0 * U * fabs(t->lse);
    return 0;
}

/* ---------------------------------------------------------- code flips */

typedef struct flip_opt {
    int64_t key0;
    int n;
    double dp[32]; /* P^ of keys key0 .. key0 + n - 1 moves by this */
    int code_from, code_to, exp_from, exp_to; /* for the message (an element) */
} flip_opt;

typedef struct flip_unit {
    int nopt;
    int block; /* 1: a shared-exponent change of a block */
    flip_opt opt[MAX_OPTS];
    double effect; /* the most it can move any element, relative to that element's bound */
} flip_unit;

typedef struct flips {
    flip_unit *u;
    int n, cap;
    int candidates;  /* P~ within their bound of a boundary (and blocks near a threshold) */
    double *slack;   /* d: what the units left out of the search can change */
    double slack_lse;
} flips;

static float float_down(double x)
{
    float f = (float)x;
    return (double)f > x ? nextafterf(f, 0.0f) : f;
}

static float float_up(double x)
{
    float f = (float)x;
    return (double)f < x ? nextafterf(f, INFINITY) : f;
}

static double q_at(int fp8, double x, int e)
{
    return fmt_value(fp8, fmt_code(fp8, ldexp(x, -e)), e);
}

/* The most a unit's option can move element c (absolute). */
static double opt_effect(const trace *t, const flip_opt *o, int64_t c)
{
    double a = 0.0;
    for (int k = 0; k < o->n; k++) {
        const int64_t j = o->key0 + k;
        a += fabs(o->dp[k]) * t->F[j / t->bc] * (fabs((double)t->v[j * t->p->d + c]) + fabs(t->O[c]));
    }
    return a / t->L * 1.001;
}

static int add_unit(flips *f, const flip_unit *u)
{
    if (f->n == f->cap) {
        const int cap = f->cap ? f->cap * 2 : 16;
        flip_unit *v = realloc(f->u, (size_t)cap * sizeof *v);
        if (!v) return -1;
        f->u = v, f->cap = cap;
    }
    f->u[f->n++] = *u;
    return 0;
}

static int by_effect(const void *a, const void *b)
{
    const double x = ((const flip_unit *)a)->effect, y = ((const flip_unit *)b)->effect;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The candidates of the traced row (section 5). -1 when out of memory. */
static int find_flips(const trace *t, int64_t i, flips *f)
{
    const int64_t d = t->p->d, nk = t->nk, bc = t->bc;
    (void)i;
    f->n = 0, f->candidates = 0, f->slack_lse = 0.0;
    for (int64_t c = 0; c < d; c++) f->slack[c] = 0.0;
    if (!t->qp) return 0;
    const mxa_rule rule = t->desc->rule;
    for (int tt = 0; tt < t->nt; tt++) {
        if (t->mt[tt] == -INFINITY) continue;
        const int64_t j0 = (int64_t)tt * bc, len = nk - j0 < bc ? nk - j0 : bc;
        for (int64_t b0 = j0; b0 < j0 + len; b0 += 32) {
            const int n = (int)(j0 + len - b0 < 32 ? j0 + len - b0 : 32);
            double lo[32], hi[32], mlo = 0.0, mhi = 0.0;
            float mref = 0.0f;
            for (int k = 0; k < n; k++) {
                const int64_t j = b0 + k;
                const double pt = t->pt[j];
                if (t->s[j] == -INFINITY || pt == 0.0) lo[k] = hi[k] = pt;
                else if (t->one[j]) lo[k] = hi[k] = 1.0;
                else lo[k] = fmax(0.0, pt * (1.0 - t->rho[j])), hi[k] = fmin(1.0, pt * (1.0 + t->rho[j]));
                mlo = fmax(mlo, lo[k]), mhi = fmax(mhi, hi[k]);
                if (t->pt[j] > mref) mref = t->pt[j];
            }
            const int eref = fmt_exponent(t->fp8, mref, rule);
            const int elo = fmt_exponent(t->fp8, float_down(mlo), rule), ehi = fmt_exponent(t->fp8, float_up(mhi), rule);
            /* a code away within the block's own scale */
            for (int k = 0; k < n; k++) {
                const int64_t j = b0 + k;
                if (lo[k] == hi[k]) continue;
                const int cref = fmt_code(t->fp8, ldexp((double)t->pt[j], -eref));
                const int clo = fmt_code(t->fp8, ldexp(lo[k], -eref)), chi = fmt_code(t->fp8, ldexp(hi[k], -eref));
                if (clo == chi) continue;
                flip_unit u;
                memset(&u, 0, sizeof u);
                for (int code = clo; code <= chi && u.nopt < MAX_OPTS; code++) {
                    if (code == cref) continue;
                    flip_opt *o = &u.opt[u.nopt++];
                    o->key0 = j, o->n = 1;
                    o->dp[0] = fmt_value(t->fp8, code, eref) - (double)t->ph[j];
                    o->code_from = cref, o->code_to = code, o->exp_from = o->exp_to = eref;
                }
                f->candidates++;
                if (u.nopt && add_unit(f, &u)) return -1;
            }
            /* the whole block at another shared exponent */
            if (elo != ehi) {
                flip_unit u;
                memset(&u, 0, sizeof u);
                u.block = 1;
                for (int e = elo; e <= ehi && u.nopt < MAX_OPTS; e++) {
                    if (e == eref) continue;
                    flip_opt *o = &u.opt[u.nopt++];
                    o->key0 = b0, o->n = n;
                    for (int k = 0; k < n; k++) o->dp[k] = q_at(t->fp8, (double)t->pt[b0 + k], e) - (double)t->ph[b0 + k];
                    o->exp_from = eref, o->exp_to = e, o->code_from = o->code_to = -1;
                }
                f->candidates++;
                if (u.nopt && add_unit(f, &u)) return -1;
            }
        }
    }
    /* rank by what they can change; those that cannot matter, and those beyond
     * the search's size, only widen the bound (by all they can change) */
    for (int k = 0; k < f->n; k++) {
        f->u[k].effect = 0.0;
        for (int o = 0; o < f->u[k].nopt; o++)
            for (int64_t c = 0; c < d; c++)
                f->u[k].effect = fmax(f->u[k].effect, opt_effect(t, &f->u[k].opt[o], c) / t->tau[c]);
    }
    if (f->n) qsort(f->u, (size_t)f->n, sizeof *f->u, by_effect); /* f->u is NULL while none was added */
    long combos = 1;
    int keep = 0;
    while (keep < f->n && keep < MAX_UNITS && f->u[keep].effect > 1e-4 && combos * (f->u[keep].nopt + 1) <= MAX_COMBOS)
        combos *= f->u[keep++].nopt + 1;
    for (int k = keep; k < f->n; k++) {
        double worst_l = 0.0;
        for (int64_t c = 0; c < d; c++) {
            double w = 0.0;
            for (int o = 0; o < f->u[k].nopt; o++) w = fmax(w, opt_effect(t, &f->u[k].opt[o], c));
            f->slack[c] += w;
        }
        for (int o = 0; o < f->u[k].nopt; o++) {
            double dl = 0.0;
            for (int m = 0; m < f->u[k].opt[o].n; m++)
                dl += fabs(f->u[k].opt[o].dp[m]) * t->F[(f->u[k].opt[o].key0 + m) / bc];
            worst_l = fmax(worst_l, dl / t->L);
        }
        if (t->pnq) f->slack_lse += worst_l * 1.001;
    }
    f->n = keep;
    return 0;
}

typedef struct side_fit {
    int ok;             /* within the bounds under some combination */
    int combo_flips;    /* units flipped in that combination */
    int choice[MAX_UNITS];
    double worst;       /* the best combination's largest |diff| / bound (elements and LSE) */
    int64_t at;         /* where: element index, or -1 for the LSE */
    double diff, bound; /* there: |x - the (flipped) trace| and its bound */
} side_fit;

/* Does x (d values, and lse unless NaN) fit the trace under some combination of the flips? */
static void fit_side(const trace *t, const flips *f, const float *x, double lse_x, const double *extra, double *dn,
                     side_fit *out)
{
    const int64_t d = t->p->d, bc = t->bc;
    int choice[MAX_UNITS] = {0};
    memset(out, 0, sizeof *out);
    out->worst = INFINITY;
    for (;;) {
        double dl = 0.0;
        int flipped = 0;
        for (int64_t c = 0; c < d; c++) dn[2 * c] = dn[2 * c + 1] = 0.0;
        for (int k = 0; k < f->n; k++) {
            if (!choice[k]) continue;
            flipped++;
            const flip_opt *o = &f->u[k].opt[choice[k] - 1];
            for (int m = 0; m < o->n; m++) {
                const int64_t j = o->key0 + m;
                const double dw = o->dp[m] * t->F[j / bc];
                const double rr = t->rF[j / bc] + 4.0 * U;
                const float *v = t->v + j * d;
                for (int64_t c = 0; c < d; c++) {
                    dn[2 * c] += dw * (double)v[c];
                    dn[2 * c + 1] += fabs(dw) * (fabs((double)v[c]) + fabs(t->O[c])) * rr;
                }
                if (t->pnq) dl += dw;
            }
        }
        const double L = t->L + dl;
        double worst = 0.0, wdiff = 0.0, wbound = 0.0;
        int64_t at = 0;
        if (L > 0.0) {
            for (int64_t c = 0; c < d; c++) {
                const double o = (t->N[c] + dn[2 * c]) / L, diff = fabs((double)x[c] - o);
                const double bound = t->tau[c] + f->slack[c] + dn[2 * c + 1] / t->L + (extra ? extra[c] : 0.0);
                if (!(diff / bound <= worst)) worst = diff / bound, at = c, wdiff = diff, wbound = bound;
            }
            if (!isnan(lse_x)) {
                const double diff = fabs(lse_x - ((double)t->m + log(L))), bound = t->tau_lse + f->slack_lse;
                if (!(diff / bound <= worst)) worst = diff / bound, at = -1, wdiff = diff, wbound = bound;
            }
        } else {
            worst = INFINITY;
        }
        if (worst < out->worst || (worst <= 1.0 && !out->ok)) {
            out->worst = worst, out->at = at, out->combo_flips = flipped, out->diff = wdiff, out->bound = wbound;
            memcpy(out->choice, choice, sizeof choice);
        }
        if (worst <= 1.0) {
            out->ok = 1;
            return;
        }
        int k = 0; /* the next combination (mixed radix) */
        while (k < f->n && ++choice[k] > f->u[k].nopt) choice[k++] = 0;
        if (k == f->n) return;
    }
}

/* "key 17 code 3->4" / "keys 32..63 scale 2^-3->2^-2" */
static void describe_flips(const trace *t, const flips *f, const side_fit *s, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < f->n && at + 1 < size; k++) {
        if (!s->choice[k]) continue;
        const flip_opt *o = &f->u[k].opt[s->choice[k] - 1];
        int n;
        if (f->u[k].block)
            n = snprintf(buf + at, size - at, "%skeys %lld..%lld scale 2^%d->2^%d", at ? ", " : "", (long long)o->key0,
                         (long long)(o->key0 + o->n - 1), o->exp_from, o->exp_to);
        else
            n = snprintf(buf + at, size - at, "%skey %lld P~ %.7g P^ %g->%g", at ? ", " : "", (long long)o->key0,
                         (double)t->pt[o->key0], fmt_value(t->fp8, o->code_from, o->exp_from),
                         fmt_value(t->fp8, o->code_to, o->exp_to));
        if (n < 0) break;
        at += (size_t)n < size - at ? (size_t)n : size - at - 1;
    }
}

/* ------------------------------------------------------------ compare */

/* The Vulkan cooperative-matrix kernels run P V on fp16 tensor cores (README, "Known limit"): blocks far
 * below their V column's or their row's largest lose bits to fp16 subnormals, which the bound of such a
 * side allows (trace.half_pv); every other variant is held to fp32 alone. */
static int fp16_pv_variant(const char *variant)
{
    return strncmp(variant, "coopmat-khr-", 12) == 0;
}

/* The old comparison (whole-output NMSE only) for problems outside the trace. */
static int compare_nmse_only(const conform_problem *p, double nmse_max, const char *why, conform_result *r)
{
    (void)p;
    if (r->nmse <= nmse_max) {
        snprintf(r->message, sizeof r->message, "(nmse only: %s)", why);
        return 1;
    }
    return conform_fail(r, "nmse %.3e > %.0e (element bounds not derived: %s)", r->nmse, nmse_max, why);
}

int conform_compare(const mxa_attention_desc *desc, int bc, mxa_dtype out_dtype, const conform_problem *p,
                    const conform_outputs *dev, const conform_outputs *ref, const char *ref_name, conform_result *r)
{
    const conform_tolerance *tol = conform_tolerance_for(desc);
    const int64_t d = p->d, rows = p->b * p->h * p->nq;
    double err2 = 0.0, ref2 = 0.0, max_abs = 0.0;
    int64_t bad_value = -1, lse_bad = -1;
    const double half = out_dtype == MXA_BF16 ? 0x1p-8 : out_dtype == MXA_F16 ? 0x1p-11 : 0.0;
    const double nmse_max = tol->nmse_max + half * half; /* a half output: one rounding step where results straddle a tie */
    if (!ref_name) ref_name = "reference";
    r->threshold = nmse_max;
    /* NaN/Inf, empty rows (SPEC §2: O = 0, LSE = -inf), the whole-output NMSE */
    for (int64_t row = 0; row < rows; row++) {
        const float *a = dev->o + row * d, *b = ref->o + row * d;
        const int empty = row_empty(p, desc->causal, row);
        for (int64_t c = 0; c < d; c++) {
            if (!isfinite(a[c]) || (empty && a[c] != 0.0f)) {
                if (bad_value < 0) bad_value = row * d + c;
                continue;
            }
            const double e = (double)a[c] - b[c];
            err2 += e * e;
            ref2 += (double)b[c] * b[c];
            if (fabs(e) > max_abs) max_abs = fabs(e);
        }
        if (dev->lse && lse_bad < 0) {
            const float la = dev->lse[row];
            if (empty ? !(isinf(la) && la < 0) : !isfinite(la)) lse_bad = row;
        }
    }
    r->nmse = ref2 > 0.0 ? err2 / ref2 : err2;
    r->max_abs = max_abs;
    if (bad_value >= 0) {
        const int64_t row = bad_value / d;
        return conform_fail(r, "%s at row %lld col %lld (value %g)%s",
                            row_empty(p, desc->causal, row) ? "a row with no visible key is not 0" : "non-finite output",
                            (long long)row, (long long)(bad_value % d), (double)dev->o[bad_value],
                            row_empty(p, desc->causal, row) ? " (SPEC §2: O = 0)" : "");
    }
    if (lse_bad >= 0)
        return conform_fail(r, "lse row %lld: %g, %s %g%s", (long long)lse_bad, (double)dev->lse[lse_bad], ref_name,
                            ref->lse ? (double)ref->lse[lse_bad] : NAN,
                            row_empty(p, desc->causal, lse_bad) ? " (SPEC §2: -inf for a row with no visible key)" : "");

    /* every row against the trace, each side on its own */
    trace t;
    const char *why = NULL;
    if (trace_init(&t, desc, bc, out_dtype, p, &why)) return compare_nmse_only(p, nmse_max, why, r);
    flips f = {0};
    f.slack = malloc((size_t)d * sizeof(double));
    double *dn = malloc((size_t)d * 2 * sizeof(double));
    if (!f.slack || !dn) {
        free(f.slack), free(dn), trace_free(&t);
        return compare_nmse_only(p, nmse_max, "out of memory", r);
    }
    int64_t flipped_rows = 0, first_flip = -1, fail_row = -1;
    double rest_e2 = 0.0, rest_b2 = 0.0;
    char flip_note[160] = "", fail_msg[1024] = "";
    for (int64_t row = 0; row < rows && fail_row < 0; row++) {
        const int64_t bh = row / p->nq, i = row % p->nq;
        if (row_empty(p, desc->causal, row)) continue;
        const int traced = trace_head(&t, bh / p->h, bh % p->h) ? -1 : trace_row(&t, i);
        if (traced < 0) {
            why = "non-finite quantized values";
            break;
        }
        if (traced > 0) continue;
        side_fit fit[2];
        const conform_outputs *side[2] = {dev, ref};
        const int fp16_pv[2] = {fp16_pv_variant(dev->info.variant), fp16_pv_variant(ref->info.variant)};
        const char *name[2] = {"device", ref_name};
        int need_flips = 0;
        f.n = 0, f.candidates = 0, f.slack_lse = 0.0;
        for (int64_t c = 0; c < d; c++) f.slack[c] = 0.0;
        for (int s = 0; s < 2; s++) { /* first without any flip */
            const double lse = side[s]->lse ? (double)side[s]->lse[row] : NAN;
            fit_side(&t, &f, side[s]->o + row * d, lse, fp16_pv[s] ? t.half_pv : NULL, dn, &fit[s]);
            need_flips |= !fit[s].ok;
        }
        if (need_flips) {
            if (find_flips(&t, i, &f)) {
                why = "out of memory";
                break;
            }
            for (int s = 0; s < 2; s++) {
                if (fit[s].ok) continue;
                const side_fit plain = fit[s];
                const double lse = side[s]->lse ? (double)side[s]->lse[row] : NAN;
                fit_side(&t, &f, side[s]->o + row * d, lse, fp16_pv[s] ? t.half_pv : NULL, dn, &fit[s]);
                if (!fit[s].ok) { /* name the row and the element furthest outside its bound (under the best flips) */
                    const side_fit *w = fit[s].combo_flips ? &fit[s] : &plain;
                    const int64_t c = w->at;
                    const int o = 1 - s;
                    char where[128], best[48] = "";
                    snprintf(where, sizeof where, "row %lld (b %lld h %lld query %lld)", (long long)row,
                             (long long)(bh / p->h), (long long)(bh % p->h), (long long)i);
                    if (w->combo_flips) snprintf(best, sizeof best, " with the best %d flip%s", w->combo_flips, w->combo_flips == 1 ? "" : "s");
                    if (c >= 0)
                        snprintf(fail_msg, sizeof fail_msg,
                                 "%s element %lld: %s %.7g, %s %.7g (|diff| %.2e from the reference%s > fp32 bound %.2e); "
                                 "no P~ code flip explains the row (%d candidate%s)",
                                 where, (long long)c, name[s], (double)side[s]->o[row * d + c], name[o],
                                 (double)side[o]->o[row * d + c], w->diff, best, w->bound, f.candidates,
                                 f.candidates == 1 ? "" : "s");
                    else
                        snprintf(fail_msg, sizeof fail_msg,
                                 "lse %s: %s %.7g, %s %.7g (|diff| %.2e from the reference%s > fp32 bound %.2e); no P~ "
                                 "code flip explains it (%d candidate%s)",
                                 where, name[s], (double)side[s]->lse[row], name[o],
                                 side[o]->lse ? (double)side[o]->lse[row] : NAN, w->diff, best, w->bound, f.candidates,
                                 f.candidates == 1 ? "" : "s");
                    fail_row = row;
                    break;
                }
            }
            if (fail_row < 0) {
                flipped_rows++;
                if (first_flip < 0) {
                    first_flip = row;
                    const int s = fit[0].combo_flips ? 0 : 1;
                    char what[120];
                    describe_flips(&t, &f, &fit[s], what, sizeof what);
                    snprintf(flip_note, sizeof flip_note, "row %lld %s: %s", (long long)row, name[s], what);
                }
            }
        } else {
            for (int64_t c = 0; c < d; c++) {
                const double e = (double)dev->o[row * d + c] - ref->o[row * d + c];
                rest_e2 += e * e;
                rest_b2 += (double)ref->o[row * d + c] * ref->o[row * d + c];
            }
        }
    }
    free(f.u), free(f.slack), free(dn);
    trace_free(&t);
    if (fail_row >= 0) return conform_fail(r, "%s", fail_msg);
    if (why) return compare_nmse_only(p, nmse_max, why, r);
    const double rest = rest_b2 > 0.0 ? rest_e2 / rest_b2 : rest_e2;
    if (rest > nmse_max)
        return conform_fail(r, "nmse %.3e > %.0e (%s) over the %lld rows without code flips (whole output %.3e)", rest,
                            nmse_max, tol->klass, (long long)(rows - flipped_rows), r->nmse);
    if (flipped_rows)
        snprintf(r->message, sizeof r->message, "%lld row%s differ%s by P~ code flips, each explained (%s)",
                 (long long)flipped_rows, flipped_rows == 1 ? "" : "s", flipped_rows == 1 ? "s" : "", flip_note);
    return 1;
}
