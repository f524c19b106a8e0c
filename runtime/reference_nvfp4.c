/*
 * The NVFP4 baselines of the paper's Table 2, on the reference's online
 * softmax (plain and slow; the CPU device runs them, other devices refuse):
 *
 * NVFP4 ("a direct NVFP4 implementation in which Q, K, V and P~ are quantized
 * for the two attention GEMMs; no additional smoothing or softmax-path
 * scaling", paper §5.2). Q, K in 16-blocks along D, V in 16-blocks along the
 * tokens, each with its fp32 tensor scale amax/(6*448). P~ is quantized per
 * key tile in 16-blocks along the keys with the tensor scale 1/(6*448): every
 * row of P~ holds an exact 1 (its maximum), so amax(P~) = 1 is known inside
 * the loop without a pass over P.
 *
 * NVFP4 + smooth ("channel-wise Q/K smoothing and two-level scaling for the
 * softmax-path tile, following the SageAttention design", paper §5.2):
 *  - K: subtract K's per-channel mean over the tokens of each kv head. Every
 *    score of a query row moves by the same q.mean(K), so softmax is
 *    unchanged exactly (the LSE output adds that shift back).
 *  - Q: subtract Q's per-channel mean over the tokens of each head (one query
 *    block = the whole head here) and add the correction dS_j = mean(Q).K'_j,
 *    computed in fp32 from the smoothed, unquantized K', to the scores.
 *  - P: two-level scaling. Each row's tile P~ is first scaled by
 *    r = rowmax_tile(P~)/(6*448), so that its largest block scale is 448 and
 *    the FP8 block scales use the full E4M3 range, then quantized to NVFP4;
 *    r is kept in fp32 (it is the tile row's tensor scale).
 * The score scale, masking, Bc tiling and placement (PNQ or direct) follow
 * SPEC §2 exactly as the MXFP4 reference does; desc->rule is not used.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hadamard.h"
#include "nvfp4.h"
#include "reference.h"
#include "reference_nvfp4.h"
#include "status.h"

typedef struct nv_inputs {
    float *q, *k, *v;  /* transformed, then fake-quantized copies */
    float *k_smooth;   /* smooth: K' before quantization (for dS) */
    float *q_mean;     /* smooth: per (b, h) channel mean of Q */
    float *lse_shift;  /* smooth: per query row, scale * q . mean(K) */
} nv_inputs;

static void nv_free(nv_inputs *in)
{
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->k_smooth);
    free(in->q_mean);
    free(in->lse_shift);
}

static float amax_of(const float *x, int64_t n)
{
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++)
        if (fabsf(x[i]) > m) m = fabsf(x[i]);
    return m;
}

/* Channel means of `rows` rows of length d, in double, into mean[d]. */
static void channel_mean(const float *x, int64_t rows, int64_t d, float *mean)
{
    for (int64_t c = 0; c < d; c++) {
        double s = 0.0;
        for (int64_t r = 0; r < rows; r++) s += x[r * d + c];
        mean[c] = (float)(s / (double)rows);
    }
}

static float dot(const float *a, const float *b, int64_t d)
{
    float s = 0.0f;
    for (int64_t c = 0; c < d; c++) s += a[c] * b[c];
    return s;
}

/* Rotation, smoothing and quantization of the whole Q, K, V. */
static mxa_status nv_prepare(const mxa_attention_desc *desc, const mxa_attention_dims *dm, const float *q,
                             const float *k, const float *v, nv_inputs *in)
{
    const int64_t d = dm->d, nq_rows = dm->b * dm->h * dm->nq, nk_rows = dm->b * dm->hkv * dm->nk;
    const int64_t group = dm->h / dm->hkv;
    float *k_mean = NULL;
    mxa_status st = MXA_OK;
    memset(in, 0, sizeof *in);
    in->q = malloc((size_t)(nq_rows * d) * sizeof(float));
    in->k = malloc((size_t)(nk_rows * d) * sizeof(float));
    in->v = malloc((size_t)(nk_rows * d) * sizeof(float));
    if (desc->smooth) {
        in->k_smooth = malloc((size_t)(nk_rows * d) * sizeof(float));
        in->q_mean = malloc((size_t)(dm->b * dm->h * d) * sizeof(float));
        in->lse_shift = malloc((size_t)nq_rows * sizeof(float));
        k_mean = malloc((size_t)(dm->b * dm->hkv * d) * sizeof(float));
    }
    if (!in->q || !in->k || !in->v || (desc->smooth && (!in->k_smooth || !in->q_mean || !in->lse_shift || !k_mean))) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "reference attention (NVFP4): out of memory");
        goto out;
    }
    memcpy(in->q, q, (size_t)(nq_rows * d) * sizeof(float));
    memcpy(in->k, k, (size_t)(nk_rows * d) * sizeof(float));
    memcpy(in->v, v, (size_t)(nk_rows * d) * sizeof(float));
    if (desc->hadamard) {
        for (int64_t r = 0; r < nq_rows; r++) mxa_hadamard(in->q + r * d, (int)d);
        for (int64_t r = 0; r < nk_rows; r++) mxa_hadamard(in->k + r * d, (int)d);
    }
    if (desc->smooth) {
        for (int64_t hk = 0; hk < dm->b * dm->hkv; hk++) {
            float *kh = in->k + hk * dm->nk * d, *mean = k_mean + hk * d;
            channel_mean(kh, dm->nk, d, mean);
            for (int64_t j = 0; j < dm->nk; j++)
                for (int64_t c = 0; c < d; c++) kh[j * d + c] -= mean[c];
        }
        memcpy(in->k_smooth, in->k, (size_t)(nk_rows * d) * sizeof(float));
        for (int64_t bh = 0; bh < dm->b * dm->h; bh++) {
            const int64_t hk = (bh / dm->h) * dm->hkv + (bh % dm->h) / group;
            float *qh = in->q + bh * dm->nq * d, *mean = in->q_mean + bh * d;
            for (int64_t i = 0; i < dm->nq; i++)
                in->lse_shift[bh * dm->nq + i] = dot(qh + i * d, k_mean + hk * d, d) * dm->scale;
            channel_mean(qh, dm->nq, d, mean);
            for (int64_t i = 0; i < dm->nq; i++)
                for (int64_t c = 0; c < d; c++) qh[i * d + c] -= mean[c];
        }
    }
    if (desc->quantize & MXA_QUANT_QK) {
        const float tq = mxa_nvfp4_tensor_scale(amax_of(in->q, nq_rows * d));
        const float tk = mxa_nvfp4_tensor_scale(amax_of(in->k, nk_rows * d));
        for (int64_t r = 0; r < nq_rows; r++) mxa_nvfp4_fake_quantize(in->q + r * d, d, tq);
        for (int64_t r = 0; r < nk_rows; r++) mxa_nvfp4_fake_quantize(in->k + r * d, d, tk);
    }
    if (desc->quantize & MXA_QUANT_V) {
        const float tv = mxa_nvfp4_tensor_scale(amax_of(in->v, nk_rows * d));
        for (int64_t hk = 0; hk < dm->b * dm->hkv; hk++)
            for (int64_t c = 0; c < d; c++) mxa_nvfp4_fake_quantize_strided(in->v + hk * dm->nk * d + c, dm->nk, d, tv);
    }
out:
    free(k_mean);
    if (st) nv_free(in);
    return st;
}

/* One query row through the online softmax. `p` holds one tile. */
static void nv_row(const mxa_attention_desc *desc, int bc, const mxa_attention_dims *dm, const nv_inputs *in,
                   int64_t bh, int64_t i, const float *bias_row, float *p, float *p_hat, float *acc, float *o, float *lse,
                   float *row_sum)
{
    const int64_t d = dm->d, nk = dm->nk, group = dm->h / dm->hkv;
    const int64_t hk = (bh / dm->h) * dm->hkv + (bh % dm->h) / group;
    const float *qi = in->q + (bh * dm->nq + i) * d;
    const float *kh = in->k + hk * nk * d, *vh = in->v + hk * nk * d;
    const int qp = (desc->quantize & MXA_QUANT_P) != 0;
    const int64_t last_visible = desc->causal ? i + nk - dm->nq : nk - 1;
    float m = -INFINITY, l = 0.0f, l_hat = 0.0f;
    for (int64_t c = 0; c < d; c++) acc[c] = 0.0f;

    for (int64_t j0 = 0; j0 < nk; j0 += bc) {
        const int64_t len = (nk - j0 < bc) ? nk - j0 : bc;
        float tile_max = -INFINITY;
        for (int64_t j = 0; j < len; j++) {
            if (j0 + j > last_visible) {
                p[j] = -INFINITY;
                continue;
            }
            float s = dot(qi, kh + (j0 + j) * d, d);
            if (desc->smooth) s += dot(in->q_mean + bh * d, in->k_smooth + (hk * nk + j0 + j) * d, d);
            p[j] = s * dm->scale;
            if (bias_row) p[j] += bias_row[j0 + j]; /* one fp32 addition, as the MXFP4 reference; -inf hides the key */
            if (p[j] > tile_max) tile_max = p[j];
        }
        const float m_new = tile_max > m ? tile_max : m;
        if (m_new == -INFINITY) continue;
        const float alpha = expf(m - m_new);
        float sum_tilde = 0.0f, sum_hat = 0.0f, p_max = 0.0f;
        for (int64_t j = 0; j < len; j++) {
            p[j] = (p[j] == -INFINITY) ? 0.0f : expf(p[j] - m_new);
            sum_tilde += p[j];
            if (p[j] > p_max) p_max = p[j];
        }
        memcpy(p_hat, p, (size_t)len * sizeof(float));
        /* Plain: amax(P~) = 1 for the whole tensor. Smooth: the tile row's own max. */
        if (qp) mxa_nvfp4_fake_quantize(p_hat, len, mxa_nvfp4_tensor_scale(desc->smooth ? p_max : 1.0f));
        for (int64_t j = 0; j < len; j++) sum_hat += p_hat[j];
        l = alpha * l + ((desc->placement == MXA_PLACEMENT_PNQ || !qp) ? sum_hat : sum_tilde);
        l_hat = alpha * l_hat + sum_hat;
        for (int64_t c = 0; c < d; c++) {
            float pv = 0.0f;
            for (int64_t j = 0; j < len; j++) pv += p_hat[j] * vh[(j0 + j) * d + c];
            acc[c] = alpha * acc[c] + pv;
        }
        m = m_new;
    }
    if (m == -INFINITY) {
        for (int64_t c = 0; c < d; c++) o[c] = 0.0f;
        if (lse) *lse = -INFINITY;
        if (row_sum) *row_sum = NAN;
        return;
    }
    for (int64_t c = 0; c < d; c++) o[c] = acc[c] / l;
    if (lse) *lse = m + logf(l) + (desc->smooth ? in->lse_shift[bh * dm->nq + i] : 0.0f);
    if (row_sum) *row_sum = l_hat / l;
}

mxa_status mxa_reference_nvfp4_run(const mxa_attention_desc *desc, int bc, const mxa_attention_dims *dm,
                                   const mxa_side_array *bias, const float *q, const float *k, const float *v, float *o,
                                   float *lse, float *row_sums)
{
    nv_inputs in;
    mxa_status st = mxa_bc_check(bc);
    if (st) return st;
    float *p = malloc((size_t)bc * sizeof(float)), *p_hat = malloc((size_t)bc * sizeof(float)),
          *acc = malloc((size_t)dm->d * sizeof(float));
    if (!p || !p_hat || !acc) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "reference attention (NVFP4): out of memory");
        goto out;
    }
    if ((st = nv_prepare(desc, dm, q, k, v, &in))) goto out;
    for (int64_t bh = 0; bh < dm->b * dm->h; bh++)
        for (int64_t i = 0; i < dm->nq; i++) {
            const int64_t row = bh * dm->nq + i;
            const float *bias_row = bias ? mxa_side_row(bias, sizeof(float), bh / dm->h, bh % dm->h, i) : NULL;
            nv_row(desc, bc, dm, &in, bh, i, bias_row, p, p_hat, acc, o + row * dm->d, lse ? lse + row : NULL,
                   row_sums ? row_sums + row : NULL);
        }
    nv_free(&in);
out:
    free(p);
    free(p_hat);
    free(acc);
    return st;
}
