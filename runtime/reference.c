/*
 * The reference MXAttention: SPEC §2 in plain C, one query row at a time.
 * Slow and obvious on purpose; every backend is tested against it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hadamard.h"
#include "mxfp4.h"
#include "mxfp8.h"
#include "reference.h"
#include "reference_nvfp4.h"
#include "status.h"
#include "tensor.h"

/* A matrix whose rows are split into 32-element blocks, either plain fp32, MXFP4
 * (twice the E2M1 value as an integer) or MXFP8 (the E4M3 value times 2^9 as an
 * integer), with the block exponent. */
typedef struct blocked {
    int64_t rows, nblocks;
    int quantized;
    int fp8;           /* quantized in MXFP8 (else MXFP4) */
    float *value;      /* rows x nblocks*32: the fp32 value, or the decoded value */
    int32_t *integer;  /* quantized: the element as an integer, 2^shift times its value */
    int *exponent;     /* quantized: block exponent (scale byte - 127); INT32_MIN for a NaN block */
} blocked;

/* log2 of the integer's weight: MXFP4 holds 2 * E2M1, MXFP8 holds 2^9 * E4M3. */
static int blocked_shift(const blocked *m) { return m->fp8 ? 9 : 1; }

static void blocked_free(blocked *m)
{
    free(m->value);
    free(m->integer);
    free(m->exponent);
    memset(m, 0, sizeof *m);
}

static mxa_status blocked_alloc(blocked *m, int64_t rows, int64_t nblocks, int quantized, int fp8)
{
    m->rows = rows;
    m->nblocks = nblocks;
    m->quantized = quantized;
    m->fp8 = quantized && fp8;
    size_t n = (size_t)(rows * nblocks * MXA_BLOCK);
    m->value = calloc(n, sizeof(float));
    if (quantized) {
        m->integer = calloc(n, sizeof(int32_t));
        m->exponent = calloc((size_t)(rows * nblocks), sizeof(int));
    }
    if (!m->value || (quantized && (!m->integer || !m->exponent))) {
        blocked_free(m);
        return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "reference attention: out of memory");
    }
    return MXA_OK;
}

/* Fills blocks [first, first + ceil(n/32)) of row r from n values (zero
 * padding after them), quantizing each block when the matrix is quantized. */
static void blocked_set(blocked *m, int64_t r, int64_t first, const float *x, int64_t n, mxa_rule rule)
{
    const int64_t blocks = (n + MXA_BLOCK - 1) / MXA_BLOCK;
    float *dst = m->value + (r * m->nblocks + first) * MXA_BLOCK;
    memset(dst, 0, (size_t)blocks * MXA_BLOCK * sizeof(float));
    memcpy(dst, x, (size_t)n * sizeof(float));
    if (!m->quantized) return;
    for (int64_t blk = 0; blk < blocks; blk++) {
        const int64_t at = r * m->nblocks + first + blk;
        float *bx = m->value + at * MXA_BLOCK;
        int32_t *in = m->integer + at * MXA_BLOCK;
        uint8_t codes[MXA_BLOCK], scale;
        if (m->fp8) mxa_mxfp8_quantize_block(bx, MXA_BLOCK, codes, &scale);
        else mxa_quantize_block(bx, MXA_BLOCK, rule, codes, &scale);
        m->exponent[at] = scale == MXA_E8M0_NAN ? INT32_MIN : (int)scale - 127;
        for (int i = 0; i < MXA_BLOCK; i++) {
            if (m->fp8) {
                in[i] = (codes[i] & 0x80) ? -mxa_e4m3_scaled(codes[i]) : mxa_e4m3_scaled(codes[i]);
                bx[i] = mxa_mxfp8_decode(codes[i], scale);
            } else {
                in[i] = mxa_e2m1_doubled[codes[i]];
                bx[i] = mxa_decode(codes[i], scale);
            }
        }
    }
}

/* Product of block `ba` of row `ra` of a and block `bb` of row `rb` of b.
 * Both quantized: an exact integer dot product times 2^(ea + eb - shifts), rounded
 * once to fp32 (exact for MXFP4; an MXFP8 sum may need up to 41 bits).
 * Otherwise: an fp32 dot product of the (decoded) values, in order. */
static float block_dot(const blocked *a, int64_t ra, int64_t ba, const blocked *b, int64_t rb,
                       int64_t bb)
{
    const float *x = a->value + (ra * a->nblocks + ba) * MXA_BLOCK;
    const float *y = b->value + (rb * b->nblocks + bb) * MXA_BLOCK;
    if (a->quantized && b->quantized) {
        int ea = a->exponent[ra * a->nblocks + ba], eb = b->exponent[rb * b->nblocks + bb];
        if (ea == INT32_MIN || eb == INT32_MIN) return NAN;
        const int32_t *ta = a->integer + (ra * a->nblocks + ba) * MXA_BLOCK;
        const int32_t *tb = b->integer + (rb * b->nblocks + bb) * MXA_BLOCK;
        int64_t sum = 0;
        for (int i = 0; i < MXA_BLOCK; i++) sum += (int64_t)ta[i] * tb[i];
        return (float)ldexp((double)sum, ea + eb - blocked_shift(a) - blocked_shift(b));
    }
    float sum = 0.0f;
    for (int i = 0; i < MXA_BLOCK; i++) sum += x[i] * y[i];
    return sum;
}

typedef struct head_inputs {
    blocked q, k, vt; /* vt: V transposed, rows = d, blocks along tokens */
} head_inputs;

static void head_free(head_inputs *in)
{
    blocked_free(&in->q);
    blocked_free(&in->k);
    blocked_free(&in->vt);
}

/* Rotates and quantizes one query head and its kv head (SPEC §2 steps 1-2), of which
 * only the first nk > 0 keys exist (a batch's key length: V blocks zero-padded after it). */
static mxa_status head_prepare(const mxa_attention_desc *desc, const mxa_attention_dims *dm, int64_t nk,
                               const float *q, const float *k, const float *v, head_inputs *in)
{
    const int64_t d = dm->d, nq = dm->nq, dblocks = d / MXA_BLOCK;
    const int64_t kblocks = (nk + MXA_BLOCK - 1) / MXA_BLOCK;
    const int qk = (desc->quantize & MXA_QUANT_QK) != 0, qv = (desc->quantize & MXA_QUANT_V) != 0;
    mxa_status st;
    memset(in, 0, sizeof *in);
    const int fp8 = desc->pv_format == MXA_PV_MXFP8;
    if ((st = blocked_alloc(&in->q, nq, dblocks, qk, 0)) || (st = blocked_alloc(&in->k, nk, dblocks, qk, 0)) ||
        (st = blocked_alloc(&in->vt, d, kblocks, qv, fp8))) {
        head_free(in);
        return st;
    }
    float row[256];
    for (int64_t i = 0; i < nq; i++) {
        memcpy(row, q + i * d, (size_t)d * sizeof(float));
        if (desc->hadamard) mxa_hadamard(row, (int)d);
        blocked_set(&in->q, i, 0, row, d, desc->rule);
    }
    for (int64_t j = 0; j < nk; j++) {
        memcpy(row, k + j * d, (size_t)d * sizeof(float));
        if (desc->hadamard) mxa_hadamard(row, (int)d);
        blocked_set(&in->k, j, 0, row, d, desc->rule);
    }
    float *col = malloc((size_t)nk * sizeof(float));
    if (!col) {
        head_free(in);
        return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "reference attention: out of memory");
    }
    for (int64_t c = 0; c < d; c++) {
        for (int64_t j = 0; j < nk; j++) col[j] = v[j * d + c];
        blocked_set(&in->vt, c, 0, col, nk, desc->rule);
    }
    free(col);
    return MXA_OK;
}

/* The last key row i may see of the nk that exist (docs/attention-inputs.md); < 0: none. */
static int64_t last_visible(int causal, int64_t i, int64_t nq, int64_t nk)
{
    const int64_t last = causal == MXA_CAUSAL_BOTTOM_RIGHT ? i + nk - nq : causal == MXA_CAUSAL_TOP_LEFT ? i : nk - 1;
    return last < nk - 1 ? last : nk - 1;
}

/* A row with no visible key: O = 0, LSE = -inf. */
static void row_empty(int64_t d, float *o, float *lse, float *row_sum)
{
    for (int64_t c = 0; c < d; c++) o[c] = 0.0f;
    if (lse) *lse = -INFINITY;
    if (row_sum) *row_sum = NAN;
}

/* One query row through the online softmax (SPEC §2 steps 3-5) over the nk keys that
 * exist; bias_row and mask_row (nk entries each, or NULL) are row i's. `p` is a
 * 1 x kblocks*32 scratch matrix for the exponentials of one key tile. */
static void row_attention(const mxa_attention_desc *desc, int bc, const mxa_attention_dims *dm, int64_t nk,
                          const head_inputs *in, int64_t i, const float *bias_row, const uint8_t *mask_row,
                          blocked *p, float *s, float *acc, float *o, float *lse, float *row_sum)
{
    const int64_t d = dm->d, dblocks = d / MXA_BLOCK;
    const int qp = p->quantized;
    const int64_t last = last_visible(desc->causal, i, dm->nq, nk);
    float m = -INFINITY, l = 0.0f, l_hat = 0.0f;
    for (int64_t c = 0; c < d; c++) acc[c] = 0.0f;

    for (int64_t j0 = 0; j0 < nk; j0 += bc) {
        const int64_t len = (nk - j0 < bc) ? nk - j0 : bc;
        const int64_t blocks = (len + MXA_BLOCK - 1) / MXA_BLOCK;
        float tile_max = -INFINITY;
        for (int64_t j = 0; j < len; j++) {
            if (j0 + j > last || (mask_row && !mask_row[j0 + j])) {
                s[j] = -INFINITY;
                continue;
            }
            float dot = 0.0f;
            for (int64_t blk = 0; blk < dblocks; blk++) dot += block_dot(&in->q, i, blk, &in->k, j0 + j, blk);
            s[j] = dot * dm->scale;
            if (bias_row) s[j] += bias_row[j0 + j]; /* one fp32 addition; -inf hides the key */
            if (s[j] > tile_max) tile_max = s[j];
        }
        const float m_new = tile_max > m ? tile_max : m;
        if (m_new == -INFINITY) continue; /* nothing visible yet */
        const float alpha = expf(m - m_new);
        float *p_tilde = s; /* the scores are not needed past this point */
        float sum_tilde = 0.0f;
        for (int64_t j = 0; j < len; j++) {
            p_tilde[j] = (s[j] == -INFINITY) ? 0.0f : expf(s[j] - m_new); /* in place */
            sum_tilde += p_tilde[j];
        }
        /* P^ = MXFP4(P~) (or MXFP8) in blocks of 32 keys (or P~ itself when P is not quantized). */
        blocked_set(p, 0, j0 / MXA_BLOCK, p_tilde, len, desc->rule);
        float sum_hat = 0.0f;
        for (int64_t j = 0; j < len; j++) sum_hat += p->value[j0 + j];
        l = alpha * l + ((desc->placement == MXA_PLACEMENT_PNQ || !qp) ? sum_hat : sum_tilde);
        l_hat = alpha * l_hat + sum_hat;
        for (int64_t c = 0; c < d; c++) {
            float pv = 0.0f;
            for (int64_t blk = 0; blk < blocks; blk++)
                pv += block_dot(p, 0, j0 / MXA_BLOCK + blk, &in->vt, c, j0 / MXA_BLOCK + blk);
            acc[c] = alpha * acc[c] + pv;
        }
        m = m_new;
    }
    if (l == 0.0f && m == -INFINITY) {
        row_empty(d, o, lse, row_sum);
        return;
    }
    for (int64_t c = 0; c < d; c++) o[c] = acc[c] / l;
    if (lse) *lse = m + logf(l);
    if (row_sum) *row_sum = l_hat / l;
}

/* Row i of a dense [b|1, h|1, nq, nk] side array for (b, h), or NULL when absent. */
const void *mxa_side_row(const mxa_side_array *a, size_t esize, int64_t b, int64_t h, int64_t i)
{
    if (!a->host) return NULL;
    const int64_t bb = a->b == 1 ? 0 : b, hh = a->h == 1 ? 0 : h;
    return (const char *)a->host + (size_t)(((bb * a->h + hh) * a->nq + i) * a->nk) * esize;
}

mxa_status mxa_reference_run(const mxa_attention_desc *desc, int bc, const mxa_attention_dims *dm,
                             const mxa_reference_extras *extras, const float *q, const float *k, const float *v,
                             float *o, float *lse, float *row_sums)
{
    static const mxa_reference_extras none = {{0}, {0}, NULL};
    const mxa_reference_extras *ex = extras ? extras : &none;
    if (desc->format == MXA_FORMAT_NVFP4) {
        if (ex->mask.host || ex->key_lengths || desc->causal == MXA_CAUSAL_TOP_LEFT)
            return mxa_fail(MXA_ERR_UNSUPPORTED,
                            "reference attention: the NVFP4 baseline takes no mask, key lengths or top-left causal");
        return mxa_reference_nvfp4_run(desc, bc, dm, ex->bias.host ? &ex->bias : NULL, q, k, v, o, lse, row_sums);
    }
    mxa_status st = mxa_bc_check(bc);
    if (st) return st;
    const int64_t d = dm->d, nq = dm->nq, nk = dm->nk, group = dm->h / dm->hkv;
    const int64_t kblocks = (nk + MXA_BLOCK - 1) / MXA_BLOCK;
    blocked p = {0};
    float *s = malloc((size_t)bc * sizeof(float)), *acc = malloc((size_t)d * sizeof(float));
    if (!s || !acc || (st = blocked_alloc(&p, 1, kblocks, (desc->quantize & MXA_QUANT_P) != 0, desc->pv_format == MXA_PV_MXFP8))) {
        free(s);
        free(acc);
        return st ? st : mxa_fail(MXA_ERR_OUT_OF_MEMORY, "reference attention: out of memory");
    }
    for (int64_t b = 0; b < dm->b && !st; b++) {
        /* a key length is a length: batch b runs as if it had only those keys */
        const int64_t nkb = ex->key_lengths ? ex->key_lengths[b] : nk;
        for (int64_t h = 0; h < dm->h && !st; h++) {
            const int64_t kvh = h / group, row0 = (b * dm->h + h) * nq;
            if (nkb == 0) {
                for (int64_t i = 0; i < nq; i++)
                    row_empty(d, o + (row0 + i) * d, lse ? lse + row0 + i : NULL, row_sums ? row_sums + row0 + i : NULL);
                continue;
            }
            const float *qh = q + row0 * d;
            const float *kh = k + ((b * dm->hkv + kvh) * nk) * d;
            const float *vh = v + ((b * dm->hkv + kvh) * nk) * d;
            head_inputs in;
            if ((st = head_prepare(desc, dm, nkb, qh, kh, vh, &in))) break;
            for (int64_t i = 0; i < nq; i++) {
                const int64_t row = row0 + i;
                row_attention(desc, bc, dm, nkb, &in, i, mxa_side_row(&ex->bias, sizeof(float), b, h, i),
                              mxa_side_row(&ex->mask, 1, b, h, i), &p, s, acc, o + row * d, lse ? lse + row : NULL,
                              row_sums ? row_sums + row : NULL);
            }
            head_free(&in);
        }
    }
    blocked_free(&p);
    free(s);
    free(acc);
    return st;
}

/* A host bias or mask of the caller as a dense side array (an owned copy in *copy). */
static mxa_status side_gather(const mxa_tensor *t, const char *name, int check_values, mxa_side_array *out, void **copy)
{
    memset(out, 0, sizeof *out);
    *copy = NULL;
    if (!t) return MXA_OK;
    if (t->buffer) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_reference_attention: host tensors only (%s)", name);
    const int64_t n = mxa_tensor_numel(t);
    const int is_mask = t->dtype == MXA_BOOL;
    if (!(*copy = malloc((size_t)n * (is_mask ? 1 : sizeof(float)))))
        return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_reference_attention: out of memory");
    out->b = t->shape[0]; out->h = t->shape[1]; out->nq = t->shape[2]; out->nk = t->shape[3];
    out->host = *copy;
    if (is_mask) {
        mxa_tensor_gather_bytes(t, *copy);
        return MXA_OK;
    }
    float *f = *copy;
    mxa_tensor_gather(t, f);
    if (check_values) /* -inf hides a key; NaN and +inf have no meaning as a bias */
        for (int64_t i = 0; i < n; i++)
            if (isnan(f[i]) || f[i] == INFINITY)
                return mxa_fail(MXA_ERR_NON_FINITE, "%s: element %lld is %s (a bias may be finite or -inf)", name,
                                (long long)i, isnan(f[i]) ? "NaN" : "+Inf");
    return MXA_OK;
}

mxa_status mxa_reference_attention(const mxa_attention_desc *desc, int bc, const mxa_tensor *q,
                                   const mxa_tensor *k, const mxa_tensor *v, mxa_tensor *o,
                                   mxa_tensor *lse, float *row_sums)
{
    mxa_attention_dims dm;
    mxa_status st = mxa_attention_check(desc, q, k, v, o, lse, &dm);
    if (st || (st = mxa_bc_check(bc))) return st;
    if (q->buffer || k->buffer || v->buffer || o->buffer || (lse && lse->buffer))
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_reference_attention: host tensors only");
    const size_t rows = (size_t)(dm.b * dm.h * dm.nq);
    mxa_reference_extras ex = {{0}, {0}, desc->key_lengths};
    void *bias = NULL, *mask = NULL;
    float *bufq = malloc((size_t)mxa_tensor_numel(q) * 4), *bufk = malloc((size_t)mxa_tensor_numel(k) * 4),
          *bufv = malloc((size_t)mxa_tensor_numel(v) * 4), *bufo = malloc(rows * (size_t)dm.d * 4),
          *bufl = lse ? malloc(rows * 4) : NULL;
    if (!bufq || !bufk || !bufv || !bufo || (lse && !bufl)) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_reference_attention: out of memory");
        goto out;
    }
    mxa_tensor_gather(q, bufq);
    mxa_tensor_gather(k, bufk);
    mxa_tensor_gather(v, bufv);
    const int check = !desc->allow_non_finite;
    if (check && ((st = mxa_check_values(bufq, mxa_tensor_numel(q), MXA_ATTENTION_INPUT_LIMIT, "q")) ||
                  (st = mxa_check_values(bufk, mxa_tensor_numel(k), MXA_ATTENTION_INPUT_LIMIT, "k")) ||
                  (st = mxa_check_values(bufv, mxa_tensor_numel(v), MXA_ATTENTION_INPUT_LIMIT, "v"))))
        goto out;
    if ((st = side_gather(desc->bias, "bias", check, &ex.bias, &bias)) ||
        (st = side_gather(desc->mask, "mask", 0, &ex.mask, &mask)))
        goto out;
    if ((st = mxa_reference_run(desc, bc, &dm, &ex, bufq, bufk, bufv, bufo, bufl, row_sums))) goto out;
    mxa_tensor_scatter(o, bufo);
    if (lse) mxa_tensor_scatter(lse, bufl);
out:
    free(bufq);
    free(bufk);
    free(bufv);
    free(bufo);
    free(bufl);
    free(bias);
    free(mask);
    return st;
}
