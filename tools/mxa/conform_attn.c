/*
 * mxa conform: attention on the device against the reference (SPEC §3): the
 * runner every attention check shares (guarded outputs, host or device
 * buffers, half-precision I/O), the comparison under the tolerance table, and
 * the grid: recipe x {causal, non-causal} x D x tails x GQA, ablations, Bc,
 * dtypes, scales, long sequences.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "cli.h"

/* ------------------------------------------------------------ problems */

static float round_to(float x, mxa_dtype dt)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if (dt == MXA_BF16) {
        u += 0x7fffu + ((u >> 16) & 1u); /* nearest even; inputs are finite and small */
        u &= 0xffff0000u;
        memcpy(&x, &u, 4);
        return x;
    }
    if (dt == MXA_F16) { /* |x| < 2^15 here: round to 11 significant bits, subnormals at 2^-24 */
        const float a = fabsf(x);
        if (a < 0x1p-14f) return copysignf(nearbyintf(a * 0x1p24f) * 0x1p-24f, x);
        int e;
        frexpf(a, &e);
        return copysignf(ldexpf(nearbyintf(ldexpf(a, 11 - e)), e - 11), x);
    }
    return x;
}

static int problem_extras(conform_problem *p, const conform_attn_params *a, conform_rng *g);

int conform_problem_make(conform_problem *p, const conform_attn_params *a, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->b = a->b; p->h = a->h; p->hkv = a->hkv; p->nq = a->nq; p->nk = a->nk; p->d = a->d;
    const int64_t nq = a->b * a->h * a->nq * a->d, nkv = a->b * a->hkv * a->nk * a->d;
    p->q = malloc((size_t)nq * sizeof(float));
    p->k = malloc((size_t)nkv * sizeof(float));
    p->v = malloc((size_t)nkv * sizeof(float));
    if (!p->q || !p->k || !p->v) {
        conform_problem_free(p);
        return -1;
    }
    conform_rng g = {seed};
    /* Unit-normal q/k with every 17th channel three times larger (the outliers
     * the rotation spreads): scores of standard deviation ~2.5 at D = 128. */
    const float qs = a->flavour == CONFORM_DATA_SHARP ? 3.0f : a->flavour == CONFORM_DATA_FLAT ? 0.1f : 1.0f;
    for (int64_t i = 0; i < nq; i++) p->q[i] = qs * (float)conform_normal(&g) * ((i % a->d) % 17 == 3 ? 3.0f : 1.0f);
    for (int64_t i = 0; i < nkv; i++) p->k[i] = (float)conform_normal(&g) * ((i % a->d) % 17 == 3 ? 3.0f : 1.0f);
    if (a->flavour == CONFORM_DATA_WIDE) { /* every 3rd q row: channels 32..63 x 2^8; every 5th k row: the last 32 / 2^8 */
        for (int64_t r = 0; r < nq / a->d; r += 3)
            for (int64_t c = 32; c < 64 && c < a->d; c++) p->q[r * a->d + c] *= 256.0f;
        for (int64_t r = 2; r < nkv / a->d; r += 5)
            for (int64_t c = a->d - 32; c < a->d; c++) p->k[r * a->d + c] *= 1.0f / 256.0f;
    }
    float mean[512];
    for (int64_t c = 0; c < a->d && c < 512; c++) mean[c] = (float)conform_normal(&g);
    for (int64_t i = 0; i < nkv; i++)
        p->v[i] = a->flavour == CONFORM_DATA_ONES ? 1.0f : mean[(i % a->d) % 512] + (float)conform_normal(&g);
    if (a->flavour == CONFORM_DATA_WIDE) /* every 3rd 32-key block of V / 2^6: blocks far below their column's largest */
        for (int64_t i = 0; i < nkv; i++)
            if ((i / a->d % a->nk) / 32 % 3 == 1) p->v[i] *= 1.0f / 64.0f;
    /* half-precision inputs: the reference sees exactly the values the device gets */
    if (a->in_dtype != MXA_F32) {
        for (int64_t i = 0; i < nq; i++) p->q[i] = round_to(p->q[i], a->in_dtype);
        for (int64_t i = 0; i < nkv; i++) p->k[i] = round_to(p->k[i], a->in_dtype);
        for (int64_t i = 0; i < nkv; i++) p->v[i] = round_to(p->v[i], a->in_dtype);
    }
    if (problem_extras(p, a, &g)) {
        conform_problem_free(p);
        return -1;
    }
    return 0;
}

void conform_problem_free(conform_problem *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->bias);
    free(p->mask);
    free(p->lengths);
    p->q = p->k = p->v = p->bias = NULL;
    p->mask = NULL;
    p->lengths = NULL;
}

/* ------------------------------------------------------- optional inputs */

int64_t conform_key_count(const conform_problem *p, int64_t b)
{
    return p->lengths ? p->lengths[b] : p->nk;
}

const float *conform_bias_row(const conform_problem *p, int64_t b, int64_t h, int64_t i)
{
    if (!p->bias) return NULL;
    return p->bias + (((p->bias_b == 1 ? 0 : b) * p->bias_h + (p->bias_h == 1 ? 0 : h)) * p->nq + i) * p->nk;
}

int conform_key_visible(const conform_problem *p, int causal, int64_t b, int64_t h, int64_t i, int64_t j)
{
    const int64_t n = conform_key_count(p, b);
    if (j >= n) return 0;
    if (causal == MXA_CAUSAL_BOTTOM_RIGHT && j > i + n - p->nq) return 0;
    if (causal == MXA_CAUSAL_TOP_LEFT && j > i) return 0;
    if (p->mask && !p->mask[(((p->mask_b == 1 ? 0 : b) * p->mask_h + (p->mask_h == 1 ? 0 : h)) * p->nq + i) * p->nk + j])
        return 0;
    return 1;
}

int conform_row_empty(const conform_problem *p, int causal, int64_t row)
{
    const int64_t i = row % p->nq, bh = row / p->nq, b = bh / p->h, h = bh % p->h;
    const float *bias = conform_bias_row(p, b, h, i);
    for (int64_t j = 0; j < conform_key_count(p, b); j++)
        if (conform_key_visible(p, causal, b, h, i, j) && !(bias && bias[j] == -INFINITY)) return 0;
    return 1;
}

void conform_problem_attach(const conform_problem *p, mxa_attention_desc *desc, mxa_tensor *bias, mxa_tensor *mask)
{
    if (p->bias) {
        mxa_tensor_init(bias, MXA_F32, p->bias_b, p->bias_h, p->nq, p->nk, p->bias);
        desc->bias = bias;
    }
    if (p->mask) {
        mxa_tensor_init(mask, MXA_BOOL, p->mask_b, p->mask_h, p->nq, p->nk, p->mask);
        desc->mask = mask;
    }
    if (p->lengths) desc->key_lengths = p->lengths;
}

/* The bias, mask and key lengths params ask for, drawn from g. 0, or -1 when out of memory. */
static int problem_extras(conform_problem *p, const conform_attn_params *a, conform_rng *g)
{
    const int64_t nq = p->nq, nk = p->nk;
    if (a->bias != CONFORM_BIAS_NONE) {
        p->bias_b = a->bias == CONFORM_BIAS_BATCH || a->bias == CONFORM_BIAS_ZERO ? p->b : 1;
        p->bias_h = a->bias == CONFORM_BIAS_BATCH ? 1 : p->h;
        const int64_t planes = p->bias_b * p->bias_h;
        if (!(p->bias = calloc((size_t)(planes * nq * nk), sizeof(float)))) return -1;
        for (int64_t pl = 0; pl < planes; pl++) {
            float bucket[33]; /* relative positions -16..16 (clamped), as learned biases are bucketed */
            for (int k = 0; k < 33; k++) bucket[k] = (float)(-11.0 + 14.0 * conform_uniform(g));
            const double slope = pow(2.0, -8.0 * (double)(pl + 1) / (double)p->h);
            for (int64_t i = 0; i < nq; i++)
                for (int64_t j = 0; j < nk; j++) {
                    const int64_t rel = i - j < -16 ? -16 : i - j > 16 ? 16 : i - j;
                    float *x = p->bias + (pl * nq + i) * nk + j;
                    if (a->bias == CONFORM_BIAS_ALIBI) *x = (float)(-slope * (double)(i - j));
                    else if (a->bias != CONFORM_BIAS_ZERO) *x = bucket[rel + 16];
                    if (a->bias == CONFORM_BIAS_NEG_INF && (j % 5 == 0 || i == 1)) *x = -INFINITY;
                }
        }
    }
    if (a->mask != CONFORM_MASK_NONE) {
        p->mask_b = a->mask == CONFORM_MASK_ALL ? 1 : p->b;
        p->mask_h = a->mask == CONFORM_MASK_RANDOM ? p->h : 1;
        const int64_t planes = p->mask_b * p->mask_h;
        if (!(p->mask = malloc((size_t)(planes * nq * nk)))) return -1;
        for (int64_t pl = 0; pl < planes; pl++)
            for (int64_t i = 0; i < nq; i++)
                for (int64_t j = 0; j < nk; j++) {
                    uint8_t *x = p->mask + (pl * nq + i) * nk + j;
                    if (a->mask == CONFORM_MASK_PADDING) *x = j < nk - 13 * pl || j == 0;
                    else if (a->mask == CONFORM_MASK_RANDOM) *x = i != 2 && conform_uniform(g) >= 0.2;
                    else *x = 1;
                }
    }
    if (a->lengths) {
        if (!(p->lengths = malloc((size_t)p->b * sizeof(int32_t)))) return -1;
        for (int64_t b = 0; b < p->b; b++) {
            const int64_t want[5] = {0, 37, nk, nk - 1, 1}, n = want[b % 5];
            p->lengths[b] = (int32_t)(n < nk ? n : nk);
        }
    }
    return 0;
}

void conform_outputs_free(conform_outputs *out)
{
    free(out->o);
    free(out->lse);
    out->o = out->lse = NULL;
}

/* A host copy of `src` (n floats) in dtype `dt` (a new array). */
static void *host_input(const float *src, int64_t n, mxa_dtype dt)
{
    if (dt == MXA_F32) return (void *)src;
    uint16_t *h = malloc((size_t)n * 2);
    if (h)
        for (int64_t i = 0; i < n; i++) h[i] = cli_to_half(src[i], dt);
    return h;
}

/* ------------------------------------------------------------- the device */

/* n outputs of dtype dt at src as float32 into dst. */
static void outputs_to_f32(const unsigned char *src, int64_t n, mxa_dtype dt, float *dst)
{
    if (dt == MXA_F32) {
        memcpy(dst, src, (size_t)n * 4);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        uint16_t hb;
        memcpy(&hb, src + i * 2, 2);
        dst[i] = cli_from_half(hb, dt);
    }
}

/* A device buffer holding `bytes` between guard regions of the fill pattern. */
static mxa_status guarded_buffer(mxa_device *dev, size_t bytes, mxa_buffer **out)
{
    const size_t total = 2 * CONFORM_GUARD + bytes;
    unsigned char *fill = malloc(total);
    if (!fill) return MXA_ERR_OUT_OF_MEMORY;
    conform_fill_pattern(fill, total);
    mxa_status st = mxa_buffer_create(dev, total, out);
    if (!st) st = mxa_buffer_upload(*out, 0, fill, total);
    free(fill);
    return st;
}

/* Reads a guarded buffer back: fails r on a write outside [guard, guard + bytes), or on any
 * write when the call failed (call_st); else copies the payload into `payload`. */
static void guarded_read(const mxa_buffer *buf, size_t bytes, mxa_status call_st, const char *what, unsigned char *payload,
                         conform_result *r)
{
    const size_t g = CONFORM_GUARD, total = 2 * g + bytes;
    unsigned char *down = malloc(total);
    mxa_status rs = down ? mxa_buffer_download(buf, 0, down, total) : MXA_ERR_OUT_OF_MEMORY;
    if (rs) {
        conform_fail(r, "reading the %s buffer back: %s: %s", what, mxa_status_string(rs), mxa_last_error_message());
        free(down);
        return;
    }
    const int64_t before = conform_pattern_mismatch(down, g, 0), after = conform_pattern_mismatch(down + g + bytes, g, (g + bytes) & 3);
    if (before >= 0) conform_fail(r, "out-of-bounds write: the %s buffer was modified %lld bytes before %s", what,
                                  (long long)(g - before), what);
    else if (after >= 0) conform_fail(r, "out-of-bounds write: the %s buffer was modified %lld bytes past %s", what,
                                      (long long)after, what);
    if (call_st && conform_pattern_mismatch(down + g, bytes, g & 3) >= 0)
        conform_fail(r, "the call failed (%s) but wrote its %s buffer", mxa_status_string(call_st), what);
    if (!call_st) memcpy(payload, down + g, bytes);
    free(down);
}

mxa_status conform_device_attention(conform_ctx *ctx, const mxa_attention_desc *desc, const conform_problem *p,
                                    const conform_attn_params *a, conform_outputs *out, conform_result *r)
{
    const int64_t nq = p->b * p->h * p->nq * p->d, nkv = p->b * p->hkv * p->nk * p->d, rows = p->b * p->h * p->nq;
    const size_t osz = mxa_dtype_size(a->out_dtype);
    conform_guarded go = {0}, gl = {0};
    void *qh = NULL, *kh = NULL, *vh = NULL;
    mxa_buffer *in_buf = NULL, *o_buf = NULL, *l_buf = NULL, *side_buf = NULL;
    unsigned char *payload = NULL;
    mxa_status st = MXA_OK;
    char msg[CONFORM_MSG_LEN];
    memset(out, 0, sizeof *out);
    out->o = malloc((size_t)nq * sizeof(float));
    out->lse = a->lse ? malloc((size_t)rows * sizeof(float)) : NULL;
    float *lse = a->lse && !a->lse_buffer ? conform_guarded_alloc(&gl, (size_t)rows * sizeof(float)) : NULL;
    payload = malloc((size_t)nq * osz > (size_t)rows * 4 ? (size_t)nq * osz : (size_t)rows * 4);
    if (!out->o || !payload || (a->lse && (!out->lse || (!a->lse_buffer && !lse)))) goto oom;

    mxa_tensor tq, tk, tv, to, tl, tb, tm;
    mxa_attention_desc dd = *desc;
    conform_problem_attach(p, &dd, &tb, &tm);
    if (a->side_buffer && (p->bias || p->mask)) { /* bias at one offset, mask at another, of one buffer */
        const size_t nb = p->bias ? (size_t)(p->bias_b * p->bias_h * p->nq * p->nk) * 4 : 0;
        const size_t nm = p->mask ? (size_t)(p->mask_b * p->mask_h * p->nq * p->nk) : 0;
        const size_t ob = 64, om = ob + nb + 64;
        if ((st = mxa_buffer_create(ctx->dev, om + nm + 64, &side_buf)) ||
            (p->bias && (st = mxa_buffer_upload(side_buf, ob, p->bias, nb))) ||
            (p->mask && (st = mxa_buffer_upload(side_buf, om, p->mask, nm)))) {
            conform_fail(r, "device buffers (bias, mask): %s: %s", mxa_status_string(st), mxa_last_error_message());
            goto out;
        }
        tb.data = tm.data = NULL;
        tb.buffer = tm.buffer = side_buf;
        tb.offset = ob, tm.offset = om;
    }
    if (a->io == CONFORM_IO_BUFFER) {
        /* one input buffer, q k v at separate non-zero offsets; the output in its
         * own buffer between guard regions read back after the call */
        const size_t g = CONFORM_GUARD, bq = (size_t)nq * 4, bkv = (size_t)nkv * 4;
        const size_t oq = g, ok = oq + bq + g, ov = ok + bkv + g, total = ov + bkv + g;
        unsigned char *fill = malloc(total);
        if (!fill) goto oom;
        conform_fill_pattern(fill, total);
        if ((st = mxa_buffer_create(ctx->dev, total, &in_buf)) || (st = mxa_buffer_upload(in_buf, 0, fill, total)) ||
            (st = mxa_buffer_upload(in_buf, oq, p->q, bq)) || (st = mxa_buffer_upload(in_buf, ok, p->k, bkv)) ||
            (st = mxa_buffer_upload(in_buf, ov, p->v, bkv)) || (st = guarded_buffer(ctx->dev, (size_t)nq * osz, &o_buf))) {
            free(fill);
            conform_fail(r, "device buffers: %s: %s", mxa_status_string(st), mxa_last_error_message());
            goto out;
        }
        free(fill);
        mxa_tensor_init(&tq, MXA_F32, p->b, p->h, p->nq, p->d, NULL);
        mxa_tensor_init(&tk, MXA_F32, p->b, p->hkv, p->nk, p->d, NULL);
        mxa_tensor_init(&tv, MXA_F32, p->b, p->hkv, p->nk, p->d, NULL);
        mxa_tensor_init(&to, a->out_dtype, p->b, p->h, p->nq, p->d, NULL);
        tq.buffer = tk.buffer = tv.buffer = in_buf;
        tq.offset = oq, tk.offset = ok, tv.offset = ov;
        to.buffer = o_buf;
        to.offset = g;
    } else {
        qh = host_input(p->q, nq, a->in_dtype);
        kh = host_input(p->k, nkv, a->in_dtype);
        vh = host_input(p->v, nkv, a->in_dtype);
        void *o = conform_guarded_alloc(&go, (size_t)nq * osz);
        if (!qh || !kh || !vh || !o) goto oom;
        mxa_tensor_init(&tq, a->in_dtype, p->b, p->h, p->nq, p->d, qh);
        mxa_tensor_init(&tk, a->in_dtype, p->b, p->hkv, p->nk, p->d, kh);
        mxa_tensor_init(&tv, a->in_dtype, p->b, p->hkv, p->nk, p->d, vh);
        mxa_tensor_init(&to, a->out_dtype, p->b, p->h, p->nq, p->d, o);
    }
    if (a->lse) {
        mxa_tensor_init(&tl, MXA_F32, p->b, p->h, p->nq, 1, lse);
        if (a->lse_buffer) {
            if ((st = guarded_buffer(ctx->dev, (size_t)rows * 4, &l_buf))) {
                conform_fail(r, "device buffers: %s: %s", mxa_status_string(st), mxa_last_error_message());
                goto out;
            }
            tl.data = NULL, tl.buffer = l_buf, tl.offset = CONFORM_GUARD;
        }
    }

    st = mxa_attention(ctx->dev, &dd, &tq, &tk, &tv, &to, a->lse ? &tl : NULL, &out->info);

    /* read the outputs back whatever happened: a failed call must not write */
    if (o_buf) {
        guarded_read(o_buf, (size_t)nq * osz, st, "out", payload, r);
        if (!st) outputs_to_f32(payload, nq, a->out_dtype, out->o);
    } else if (go.base) {
        if (conform_guarded_check(&go, "out", msg, sizeof msg)) conform_fail(r, "%s", msg);
        if (st && !conform_guarded_untouched(&go)) conform_fail(r, "the call failed (%s) but wrote out", mxa_status_string(st));
        if (!st) outputs_to_f32(go.base + CONFORM_GUARD, nq, a->out_dtype, out->o);
    }
    if (l_buf) {
        guarded_read(l_buf, (size_t)rows * 4, st, "lse", payload, r);
        if (!st) memcpy(out->lse, payload, (size_t)rows * 4);
    } else if (lse) {
        if (conform_guarded_check(&gl, "lse", msg, sizeof msg)) conform_fail(r, "%s", msg);
        if (st && !conform_guarded_untouched(&gl)) conform_fail(r, "the call failed (%s) but wrote lse", mxa_status_string(st));
        if (!st) memcpy(out->lse, lse, (size_t)rows * sizeof(float));
    }
    goto out;
oom:
    st = MXA_ERR_OUT_OF_MEMORY;
    conform_fail(r, "out of memory (conform)");
out:
    if (qh != p->q) free(qh);
    if (kh != p->k) free(kh);
    if (vh != p->v) free(vh);
    free(payload);
    mxa_buffer_destroy(in_buf);
    mxa_buffer_destroy(o_buf);
    mxa_buffer_destroy(l_buf);
    mxa_buffer_destroy(side_buf);
    conform_guarded_free(&go);
    conform_guarded_free(&gl);
    return st;
}

/* ------------------------------------------------------------ reference */

int conform_reference(const mxa_attention_desc *desc, int bc, const conform_problem *p, int want_lse,
                      conform_outputs *out, conform_result *r)
{
    const int64_t nq = p->b * p->h * p->nq * p->d, rows = p->b * p->h * p->nq;
    memset(out, 0, sizeof *out);
    out->o = malloc((size_t)nq * sizeof(float));
    out->lse = want_lse ? malloc((size_t)rows * sizeof(float)) : NULL;
    if (!out->o || (want_lse && !out->lse)) {
        conform_outputs_free(out);
        return conform_fail(r, "out of memory (reference)"), -1;
    }
    mxa_tensor q, k, v, o, l;
    mxa_tensor_init(&q, MXA_F32, p->b, p->h, p->nq, p->d, p->q);
    mxa_tensor_init(&k, MXA_F32, p->b, p->hkv, p->nk, p->d, p->k);
    mxa_tensor_init(&v, MXA_F32, p->b, p->hkv, p->nk, p->d, p->v);
    mxa_tensor_init(&o, MXA_F32, p->b, p->h, p->nq, p->d, out->o);
    mxa_tensor_init(&l, MXA_F32, p->b, p->h, p->nq, 1, out->lse);
    mxa_tensor tb, tm;
    mxa_attention_desc d = *desc;
    d.bc = 0;
    conform_problem_attach(p, &d, &tb, &tm);
    mxa_status st = mxa_reference_attention(&d, bc, &q, &k, &v, &o, want_lse ? &l : NULL, NULL);
    if (st) {
        conform_outputs_free(out);
        conform_fail(r, "reference at Bc %d: %s: %s", bc, mxa_status_string(st), mxa_last_error_message());
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------- the check */

void conform_attention_check(conform_ctx *ctx, const mxa_attention_desc *desc, const conform_problem *p,
                             const conform_attn_params *a, unsigned flags, conform_result *r)
{
    conform_outputs dev = {0}, ref = {0}, f32 = {0};
    mxa_status st = conform_device_attention(ctx, desc, p, a, &dev, r);
    if (st == MXA_ERR_UNSUPPORTED && r->status != CONFORM_FAIL) {
        if ((flags & CF_REQUIRED) && !ctx->forced) /* every backend takes the extras too (docs/attention-inputs.md) */
            conform_fail(r, "the device says unsupported, but every device must run this: %s", mxa_last_error_message());
        else {
            r->status = CONFORM_UNSUPPORTED;
            snprintf(r->message, sizeof r->message, "%s", mxa_last_error_message());
        }
        goto out;
    }
    if (st) {
        conform_fail(r, "mxa_attention: %s: %s", mxa_status_string(st), mxa_last_error_message());
        goto out;
    }
    if (r->status == CONFORM_FAIL) goto out;
    r->bc = dev.info.bc;
    snprintf(r->variant, sizeof r->variant, "%s", dev.info.variant);
    if (dev.info.bc <= 0 || dev.info.bc % 32) {
        conform_fail(r, "the device reported Bc %d (must be a positive multiple of 32)", dev.info.bc);
        goto out;
    }
    if (desc->bc && dev.info.bc != desc->bc) {
        conform_fail(r, "asked for Bc %d, the device reports Bc %d", desc->bc, dev.info.bc);
        goto out;
    }
    if (!dev.info.variant[0]) {
        conform_fail(r, "the device did not report the variant that ran");
        goto out;
    }
    if (conform_reference(desc, dev.info.bc, p, a->lse, &ref, r)) goto out;
    if (a->out_dtype != MXA_F32) /* the device rounds its own result: compare like with like */
        for (int64_t i = 0; i < p->b * p->h * p->nq * p->d; i++) ref.o[i] = round_to(ref.o[i], a->out_dtype);
    /* (a half output may differ by one rounding step where the fp32 results straddle a tie: in the bounds) */
    conform_compare(desc, dev.info.bc, a->out_dtype, p, &dev, &ref, NULL, r);
    /* the method's accuracy (informational, SPEC §3) */
    if (desc->quantize) {
        mxa_attention_desc fd;
        mxa_attention_desc_init(&fd, MXA_RECIPE_FP32);
        fd.causal = desc->causal;
        fd.scale = desc->scale;
        conform_result scratch = {0};
        if (conform_reference(&fd, dev.info.bc, p, 0, &f32, &scratch) == 0) {
            double e2 = 0.0, b2 = 0.0;
            for (int64_t i = 0; i < p->b * p->h * p->nq * p->d; i++) {
                const double e = (double)dev.o[i] - f32.o[i];
                e2 += e * e;
                b2 += (double)f32.o[i] * f32.o[i];
            }
            r->nmse_fp32 = b2 > 0.0 ? e2 / b2 : e2;
        }
    } else {
        r->nmse_fp32 = r->nmse;
    }
out:
    conform_outputs_free(&dev);
    conform_outputs_free(&ref);
    conform_outputs_free(&f32);
}

/* ---------------------------------------------------------------- grid */

void conform_run_attention(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    conform_problem p;
    if (conform_problem_make(&p, &c->attn, conform_case_seed(ctx->seed, c->name))) {
        conform_fail(r, "out of memory");
        return;
    }
    mxa_attention_desc desc = conform_recipe_desc(c->attn.recipe);
    desc.causal = c->attn.causal;
    desc.bc = c->attn.bc;
    if (c->index > 0) desc.scale = (float)c->index / 1000.0f; /* an explicit softmax scale */
    conform_attention_check(ctx, &desc, &p, &c->attn, c->flags, r);
    conform_problem_free(&p);
}

/* A shape and recipe drawn from the case seed (different for every --seed). */
static void draw_random(const conform_case *c, uint64_t seed, conform_attn_params *a, uint64_t *data_seed)
{
    static const int64_t ds[] = {32, 64, 128, 256};
    static const int bcs[] = {0, 0, 32, 64, 128, 256};
    conform_rng g = {conform_case_seed(seed, c->name)};
    memset(a, 0, sizeof *a);
    /* the recipes before mxattention-fp8pv (added last): a seed drew the same problems before it came */
    const int fp8 = conform_recipe_find("mxattention-fp8pv");
    a->recipe = (int)(conform_next(&g) % (uint64_t)(fp8 >= 0 ? fp8 : conform_recipe_count));
    a->causal = (int)(conform_next(&g) & 1);
    a->b = 1 + (int64_t)(conform_next(&g) % 2);
    a->hkv = 1 + (int64_t)(conform_next(&g) % 3);
    a->h = a->hkv * (1 + (int64_t)(conform_next(&g) % 3));
    a->d = ds[conform_next(&g) % 4];
    a->nq = 1 + (int64_t)(conform_next(&g) % (a->d == 256 ? 80 : 150));
    a->nk = 1 + (int64_t)(conform_next(&g) % 400);
    a->bc = bcs[conform_next(&g) % 6];
    a->io = (conform_io)(conform_next(&g) & 1);
    a->flavour = (conform_flavour)(conform_next(&g) % 3);
    a->lse = 1;
    *data_seed = conform_next(&g);
}

static void run_random_attention(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    conform_attn_params a;
    uint64_t data_seed;
    draw_random(c, ctx->seed, &a, &data_seed);
    char shape[160];
    snprintf(shape, sizeof shape, "%s %s B%lld H%lld Hkv%lld Nq%lld Nk%lld D%lld Bc%d %s", conform_recipes[a.recipe].name,
             a.causal ? "causal" : "noncausal", (long long)a.b, (long long)a.h, (long long)a.hkv, (long long)a.nq,
             (long long)a.nk, (long long)a.d, a.bc, a.io ? "buffers" : "host");
    conform_problem p;
    if (conform_problem_make(&p, &a, data_seed)) {
        conform_fail(r, "out of memory");
        return;
    }
    mxa_attention_desc desc = conform_recipe_desc(a.recipe);
    desc.causal = a.causal;
    desc.bc = a.bc;
    conform_attention_check(ctx, &desc, &p, &a, conform_recipes[a.recipe].core && !a.bc ? CF_REQUIRED : 0, r);
    conform_problem_free(&p);
    /* name the draw: the case name alone does not say what ran */
    const size_t len = strlen(r->message);
    snprintf(r->message + len, sizeof r->message - len, "%s[%s]", len ? " " : "", shape);
}

void conform_attn_case_params(const conform_case *c, uint64_t seed, conform_attn_params *a, uint64_t *data_seed)
{
    if (c->run == run_random_attention) {
        draw_random(c, seed, a, data_seed);
        return;
    }
    *a = c->attn;
    *data_seed = conform_case_seed(seed, c->name);
}

static const char *const flavour_what[] = {
    "attention-like data (outlier channels)", "sharp scores (x3): near one-hot softmax",
    "flat scores (x0.1): near-uniform weights", "v = 1",
    "wide rows: one Q/K block 2^8 off the rest, every 3rd V key block 2^-6 (per-block scaling paths)",
};

static int add(conform_case_list *list, const char *name, unsigned flags, const conform_attn_params *a, int scale_milli)
{
    conform_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", name);
    c.group = "attention";
    c.what = flavour_what[a->flavour];
    c.flags = flags;
    c.run = conform_run_attention;
    c.attn = *a;
    c.index = scale_milli;
    return conform_case_add(list, &c) ? 0 : -1;
}

/* The tails: Nk = 1 (MQA, causal leaves rows empty), 31 (square, device
 * buffers), 33 (Nq > Nk, GQA), 130 (several tiles and a partial one, buffers). */
static const struct {
    int64_t b, h, hkv, nq, nk;
    conform_io io;
    int lse;
} tails[] = {
    {1, 4, 1, 16, 1, CONFORM_IO_HOST, 1},
    {2, 2, 2, 31, 31, CONFORM_IO_BUFFER, 0},
    {1, 4, 2, 40, 33, CONFORM_IO_HOST, 1},
    {1, 2, 1, 24, 130, CONFORM_IO_BUFFER, 1},
};

int conform_add_attn_cases(conform_case_list *list)
{
    static const int64_t ds[] = {32, 64, 128, 256};
    char name[CONFORM_NAME_LEN];
    conform_attn_params a;
    /* named recipes: the full grid */
    for (int ri = 0; ri < conform_recipe_count; ri++) {
        if (!conform_recipes[ri].core) continue;
        for (int causal = 0; causal < 2; causal++)
            for (int di = 0; di < 4; di++)
                for (int ti = 0; ti < 4; ti++) {
                    memset(&a, 0, sizeof a);
                    a.recipe = ri;
                    a.causal = causal;
                    a.b = tails[ti].b, a.h = tails[ti].h, a.hkv = tails[ti].hkv, a.nq = tails[ti].nq, a.nk = tails[ti].nk;
                    a.d = ds[di];
                    a.io = tails[ti].io;
                    a.lse = tails[ti].lse;
                    a.flavour = (conform_flavour)((di + ti) % 3);
                    snprintf(name, sizeof name, "attention/%s/%s/d%lld/nk%lld", conform_recipes[ri].name,
                             causal ? "causal" : "noncausal", (long long)a.d, (long long)a.nk);
                    /* --quick keeps every D at Nk = 33 and every tail at D = 64 */
                    unsigned fl = CF_REQUIRED;
                    if (ti == 2 || a.d == 64) fl |= CF_QUICK;
                    if ((a.d == 64 || a.d == 128) && (ti == 2 || ti == 3)) fl |= CF_VARIANT;
                    if (add(list, name, fl, &a, 0)) return -1;
                }
        /* a long sequence: many tiles, the running maximum moving */
        for (int causal = 0; causal < 2; causal++) {
            memset(&a, 0, sizeof a);
            a.recipe = ri, a.causal = causal, a.b = 1, a.h = 2, a.hkv = 2, a.nq = 64, a.nk = 1000, a.d = 128, a.lse = 1;
            snprintf(name, sizeof name, "attention/%s/%s/d128/nk1000", conform_recipes[ri].name, causal ? "causal" : "noncausal");
            if (add(list, name, CF_REQUIRED, &a, 0)) return -1;
        }
        /* a wide GQA group in two batches */
        memset(&a, 0, sizeof a);
        a.recipe = ri, a.causal = 1, a.b = 2, a.h = 8, a.hkv = 2, a.nq = 20, a.nk = 100, a.d = 64, a.lse = 1;
        snprintf(name, sizeof name, "attention/%s/gqa/h8-hkv2/d64/nk100", conform_recipes[ri].name);
        if (add(list, name, CF_REQUIRED | CF_QUICK, &a, 0)) return -1;
    }
    /* every ablation switch on its own */
    for (int ri = 0; ri < conform_recipe_count; ri++) {
        if (conform_recipes[ri].core) continue;
        for (int causal = 0; causal < 2; causal++)
            for (int di = 1; di < 3; di++) {
                memset(&a, 0, sizeof a);
                a.recipe = ri, a.causal = causal, a.b = 1, a.h = 4, a.hkv = 2, a.nq = 32, a.nk = 130, a.d = ds[di], a.lse = 1;
                a.flavour = (conform_flavour)(di % 3);
                snprintf(name, sizeof name, "attention/%s/%s/d%lld/nk130", conform_recipes[ri].name,
                         causal ? "causal" : "noncausal", (long long)a.d);
                if (add(list, name, (causal && di == 1) ? CF_QUICK : 0, &a, 0)) return -1;
            }
    }
    /* the MXFP8 P V beyond the ablation cases: tails, many tiles, GQA, sharp and flat P, V = 1 */
    static const struct { int causal; int64_t b, h, hkv, nq, nk, d; conform_flavour fl; unsigned flags; } fp8[] = {
        {0, 2, 2, 2, 31, 33, 32, CONFORM_DATA_ATTN, CF_QUICK | CF_VARIANT},
        {1, 1, 2, 2, 64, 1000, 128, CONFORM_DATA_ATTN, CF_VARIANT},
        {1, 2, 8, 2, 20, 100, 64, CONFORM_DATA_SHARP, CF_QUICK},
        {0, 1, 2, 1, 40, 300, 256, CONFORM_DATA_FLAT, 0},
        {1, 1, 4, 4, 33, 130, 64, CONFORM_DATA_ONES, CF_QUICK},
    };
    const int fp8_recipe = conform_recipe_find("mxattention-fp8pv");
    for (size_t i = 0; fp8_recipe >= 0 && i < sizeof fp8 / sizeof fp8[0]; i++) {
        memset(&a, 0, sizeof a);
        a.recipe = fp8_recipe, a.causal = fp8[i].causal, a.b = fp8[i].b, a.h = fp8[i].h, a.hkv = fp8[i].hkv;
        a.nq = fp8[i].nq, a.nk = fp8[i].nk, a.d = fp8[i].d, a.lse = 1, a.flavour = fp8[i].fl;
        snprintf(name, sizeof name, "attention/mxattention-fp8pv/%s/b%lld-h%lld-hkv%lld/d%lld/nk%lld",
                 fp8[i].causal ? "causal" : "noncausal", (long long)a.b, (long long)a.h, (long long)a.hkv, (long long)a.d,
                 (long long)a.nk);
        if (add(list, name, fp8[i].flags, &a, 0)) return -1;
    }
    /* rows whose block exponents lie far apart: without the rotation they stay so */
    static const int wide_recipes[] = {1, 3}; /* ocp-direct, no-rotation */
    for (int i = 0; i < 2; i++)
        for (int causal = 0; causal < 2; causal++)
            for (int di = 1; di < 3; di++) {
                memset(&a, 0, sizeof a);
                a.recipe = wide_recipes[i], a.causal = causal, a.b = 1, a.h = 4, a.hkv = 2, a.nq = 40, a.nk = 130;
                a.d = ds[di], a.lse = 1, a.flavour = CONFORM_DATA_WIDE;
                snprintf(name, sizeof name, "attention/wide-blocks/%s/%s/d%lld", conform_recipes[a.recipe].name,
                         causal ? "causal" : "noncausal", (long long)a.d);
                if (add(list, name, CF_REQUIRED | CF_VARIANT | (causal && di == 2 ? CF_QUICK : 0), &a, 0)) return -1;
            }
    /* key-tile sizes: the reference runs at the Bc the device reports */
    static const int bcs[] = {32, 64, 128, 256, 512};
    for (int i = 0; i < 5; i++) {
        memset(&a, 0, sizeof a);
        a.recipe = 0, a.causal = i == 2, a.b = 1, a.h = 2, a.hkv = 1, a.nq = 32, a.nk = 300, a.d = 64, a.bc = bcs[i], a.lse = 1;
        snprintf(name, sizeof name, "attention/bc/bc%d", bcs[i]);
        if (add(list, name, (i == 0 || i == 3) ? CF_QUICK : 0, &a, 0)) return -1;
    }
    /* half-precision inputs and outputs */
    static const struct { const char *name; mxa_dtype in, out; } dts[] = {
        {"f16-in", MXA_F16, MXA_F32}, {"bf16-in", MXA_BF16, MXA_F32}, {"f16-out", MXA_F32, MXA_F16}, {"bf16-out", MXA_F32, MXA_BF16}};
    for (int i = 0; i < 4; i++)
        for (int ri = 0; ri < 3; ri += 2) { /* mxattention and fp32 */
            memset(&a, 0, sizeof a);
            a.recipe = ri, a.causal = 1, a.b = 1, a.h = 2, a.hkv = 2, a.nq = 24, a.nk = 100, a.d = 128, a.lse = 1;
            a.in_dtype = dts[i].in, a.out_dtype = dts[i].out;
            snprintf(name, sizeof name, "attention/dtype/%s/%s", dts[i].name, conform_recipes[ri].name);
            if (add(list, name, CF_REQUIRED | (i == 0 && ri == 0 ? CF_QUICK : 0), &a, 0)) return -1;
        }
    /* explicit softmax scales (0 means 1/sqrt(D)) */
    static const int scales[] = {50, 250};
    for (int i = 0; i < 2; i++) {
        memset(&a, 0, sizeof a);
        a.recipe = 0, a.causal = 0, a.b = 1, a.h = 2, a.hkv = 2, a.nq = 16, a.nk = 70, a.d = 64, a.lse = 1;
        snprintf(name, sizeof name, "attention/scale/%g", scales[i] / 1000.0);
        if (add(list, name, CF_REQUIRED | (i == 1 ? CF_QUICK : 0), &a, scales[i])) return -1;
    }
    /* tile edges: Nq and Nk one below, at and one above the row/key tiles of
     * the backends (16-row lanes, Bc 32/64/128/256) */
    static const int64_t edges[][2] = {{1, 1},   {1, 64},   {1, 129},  {15, 63},  {16, 64},   {17, 65},
                                       {33, 127}, {64, 128}, {65, 129}, {100, 257}, {129, 33}, {7, 256}};
    for (int e = 0; e < (int)(sizeof edges / sizeof edges[0]); e++)
        for (int v = 0; v < 3; v++) { /* mxattention non-causal / causal at D 64, fp32 causal at D 128 */
            memset(&a, 0, sizeof a);
            a.recipe = v < 2 ? 0 : 2, a.causal = v > 0, a.b = 1, a.h = 2, a.hkv = 1, a.nq = edges[e][0], a.nk = edges[e][1];
            a.d = v < 2 ? 64 : 128, a.lse = 1, a.io = e % 2 ? CONFORM_IO_BUFFER : CONFORM_IO_HOST;
            snprintf(name, sizeof name, "attention/edges/%s/%s/nq%lld-nk%lld", conform_recipes[a.recipe].name,
                     a.causal ? "causal" : "noncausal", (long long)a.nq, (long long)a.nk);
            if (add(list, name, CF_REQUIRED | (e % 3 == 0 ? CF_QUICK : 0) | (v == 1 ? CF_VARIANT : 0), &a, 0)) return -1;
        }
    /* random shapes and recipes: drawn from the seed, so --seed N explores new ones */
    for (int i = 0; i < 24; i++) {
        conform_case c;
        memset(&c, 0, sizeof c);
        snprintf(c.name, sizeof c.name, "attention/random/%02d", i);
        c.group = "attention";
        c.what = "a random shape, recipe, causal flag, Bc and I/O drawn from the seed";
        c.flags = i < 4 ? CF_QUICK : 0;
        c.run = run_random_attention;
        if (!conform_case_add(list, &c)) return -1;
    }
    /* every tile shape at once: batch 3, odd everything, on device buffers */
    memset(&a, 0, sizeof a);
    a.recipe = 0, a.causal = 1, a.b = 3, a.h = 3, a.hkv = 1, a.nq = 45, a.nk = 77, a.d = 32, a.io = CONFORM_IO_BUFFER, a.lse = 1;
    if (add(list, "attention/mxattention/odd/b3-h3-hkv1/d32/nq45-nk77", CF_REQUIRED | CF_QUICK | CF_VARIANT, &a, 0)) return -1;
    return 0;
}
