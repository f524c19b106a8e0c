/*
 * mxa conform: bad input on the device. Every mistake must fail with the
 * right status and a one-line message, never crash, and leave the outputs
 * untouched (guarded host memory or device buffers, checked byte for byte).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

/* One mistake: how it bends a valid call, and the status it must produce. */
typedef enum bad_kind {
    BAD_NAN_Q, BAD_INF_K, BAD_HUGE_V, BAD_NAN_V_TAIL,
    BAD_D48_ROT, BAD_D96_ROT, BAD_D40, BAD_D512,
    BAD_BC48, BAD_BC8192, BAD_BC_NEG,
    BAD_GQA, BAD_KV_LEN, BAD_OUT_SHAPE, BAD_BATCH, BAD_HEAD_SIZE, BAD_LSE_SHAPE, BAD_LSE_DTYPE,
    BAD_NULL_Q, BAD_NULL_DESC, BAD_NULL_OUT, BAD_NULL_DATA, BAD_DTYPE, BAD_ZERO_LEN, BAD_NEG_STRIDE,
    BAD_RULE_Q9, BAD_QUANT_BITS, BAD_PLACEMENT, BAD_SCALE_NAN, BAD_SCALE_NEG, BAD_FORMAT,
    BAD_OUT_BUF_SMALL, BAD_IN_BUF_BOOL, BAD_IN_BUF_OFFSET,
    BAD_QUANT_NULL, BAD_QUANT_RULE, BAD_QUANT_DTYPE,
    BAD_ALLOW_NON_FINITE,
    BAD_BIAS_SHAPE, BAD_BIAS_HEADS, BAD_BIAS_BOOL, BAD_MASK_FLOAT, BAD_MASK_SHAPE, BAD_KEY_LENGTH_OVER, BAD_KEY_LENGTH_NEG,
    BAD_CAUSAL3, BAD_BIAS_NAN, BAD_BIAS_POS_INF,
} bad_kind;

static const struct {
    const char *name;
    bad_kind kind;
    mxa_status want;
    const char *what;
} bads[] = {
    {"nan-in-q", BAD_NAN_Q, MXA_ERR_NON_FINITE, "a NaN in q"},
    {"inf-in-k", BAD_INF_K, MXA_ERR_NON_FINITE, "-Inf in k"},
    {"huge-v", BAD_HUGE_V, MXA_ERR_NON_FINITE, "|v| = 2^60: its MXFP4 decode could overflow"},
    {"nan-in-last-v", BAD_NAN_V_TAIL, MXA_ERR_NON_FINITE, "a NaN in the very last element of v"},
    {"d48-rotation", BAD_D48_ROT, MXA_ERR_UNSUPPORTED, "D = 48 (not a multiple of 32)"},
    {"d96-rotation", BAD_D96_ROT, MXA_ERR_UNSUPPORTED, "D = 96 with Hadamard (not a power of two)"},
    {"d40", BAD_D40, MXA_ERR_UNSUPPORTED, "D = 40 without rotation"},
    {"d512", BAD_D512, MXA_ERR_UNSUPPORTED, "D = 512 (above 256)"},
    {"bc48", BAD_BC48, MXA_ERR_INVALID_ARGUMENT, "Bc = 48 (not a multiple of 32)"},
    {"bc8192", BAD_BC8192, MXA_ERR_INVALID_ARGUMENT, "Bc = 8192 (above 4096)"},
    {"bc-negative", BAD_BC_NEG, MXA_ERR_INVALID_ARGUMENT, "Bc = -32"},
    {"gqa-3-of-4", BAD_GQA, MXA_ERR_INVALID_ARGUMENT, "3 kv heads for 4 query heads"},
    {"kv-length-mismatch", BAD_KV_LEN, MXA_ERR_INVALID_ARGUMENT, "k and v token counts differ"},
    {"out-shape", BAD_OUT_SHAPE, MXA_ERR_INVALID_ARGUMENT, "out has the wrong number of rows"},
    {"batch-mismatch", BAD_BATCH, MXA_ERR_INVALID_ARGUMENT, "q and k batch sizes differ"},
    {"head-size-mismatch", BAD_HEAD_SIZE, MXA_ERR_INVALID_ARGUMENT, "q and v head sizes differ"},
    {"lse-shape", BAD_LSE_SHAPE, MXA_ERR_INVALID_ARGUMENT, "lse [B, H, Nq, 2]"},
    {"lse-dtype", BAD_LSE_DTYPE, MXA_ERR_INVALID_ARGUMENT, "lse in float16"},
    {"null-q", BAD_NULL_Q, MXA_ERR_INVALID_ARGUMENT, "q is NULL"},
    {"null-desc", BAD_NULL_DESC, MXA_ERR_INVALID_ARGUMENT, "desc is NULL"},
    {"null-out", BAD_NULL_OUT, MXA_ERR_INVALID_ARGUMENT, "out is NULL"},
    {"null-data", BAD_NULL_DATA, MXA_ERR_INVALID_ARGUMENT, "k has neither data nor a buffer"},
    {"bad-dtype", BAD_DTYPE, MXA_ERR_INVALID_ARGUMENT, "q dtype 7"},
    {"zero-length", BAD_ZERO_LEN, MXA_ERR_INVALID_ARGUMENT, "Nq = 0"},
    {"negative-stride", BAD_NEG_STRIDE, MXA_ERR_INVALID_ARGUMENT, "a negative stride"},
    {"rule-q9", BAD_RULE_Q9, MXA_ERR_INVALID_ARGUMENT, "ceiling rule with q = 9"},
    {"quantize-bits", BAD_QUANT_BITS, MXA_ERR_INVALID_ARGUMENT, "unknown quantize bit 0x80"},
    {"placement", BAD_PLACEMENT, MXA_ERR_INVALID_ARGUMENT, "placement 5"},
    {"scale-nan", BAD_SCALE_NAN, MXA_ERR_INVALID_ARGUMENT, "softmax scale NaN"},
    {"scale-negative", BAD_SCALE_NEG, MXA_ERR_INVALID_ARGUMENT, "softmax scale -1"},
    {"format", BAD_FORMAT, MXA_ERR_INVALID_ARGUMENT, "format 9"},
    {"out-buffer-too-small", BAD_OUT_BUF_SMALL, MXA_ERR_INVALID_ARGUMENT, "out does not fit its device buffer"},
    {"in-buffer-bool", BAD_IN_BUF_BOOL, MXA_ERR_INVALID_ARGUMENT, "a bool input (q) on a device buffer"},
    {"in-buffer-offset", BAD_IN_BUF_OFFSET, MXA_ERR_INVALID_ARGUMENT, "q at a byte offset that is not a multiple of 4"},
    {"quantize-null", BAD_QUANT_NULL, MXA_ERR_INVALID_ARGUMENT, "mxa_quantize with codes NULL"},
    {"quantize-rule", BAD_QUANT_RULE, MXA_ERR_INVALID_ARGUMENT, "mxa_quantize with q = 5"},
    {"quantize-dtype", BAD_QUANT_DTYPE, MXA_ERR_INVALID_ARGUMENT, "mxa_quantize on dtype 9"},
    {"allow-non-finite", BAD_ALLOW_NON_FINITE, MXA_OK, "NaN input with allow_non_finite: OK or unsupported, no crash, no stray writes"},
    {"bias-shape", BAD_BIAS_SHAPE, MXA_ERR_INVALID_ARGUMENT, "a bias of Nk - 1 columns"},
    {"bias-heads", BAD_BIAS_HEADS, MXA_ERR_INVALID_ARGUMENT, "a bias of 2 heads for 4 (neither 1 nor H)"},
    {"bias-bool", BAD_BIAS_BOOL, MXA_ERR_INVALID_ARGUMENT, "a bias of dtype MXA_BOOL"},
    {"mask-float", BAD_MASK_FLOAT, MXA_ERR_INVALID_ARGUMENT, "a float32 mask"},
    {"mask-shape", BAD_MASK_SHAPE, MXA_ERR_INVALID_ARGUMENT, "a mask of Nq - 1 rows"},
    {"key-length-over", BAD_KEY_LENGTH_OVER, MXA_ERR_INVALID_ARGUMENT, "a key length of Nk + 1"},
    {"key-length-negative", BAD_KEY_LENGTH_NEG, MXA_ERR_INVALID_ARGUMENT, "a key length of -1"},
    {"causal-3", BAD_CAUSAL3, MXA_ERR_INVALID_ARGUMENT, "causal = 3 (not none, bottom-right or top-left)"},
    {"bias-nan", BAD_BIAS_NAN, MXA_ERR_NON_FINITE, "a NaN in a host bias"},
    {"bias-plus-inf", BAD_BIAS_POS_INF, MXA_ERR_NON_FINITE, "+Inf in a host bias (-inf hides a key; +inf means nothing)"},
};
#define BAD_COUNT ((int)(sizeof bads / sizeof bads[0]))

#define B 2
#define H 4
#define HKV 2
#define NQ 8
#define NK 40

static void run_bad(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    const bad_kind kind = bads[c->index].kind;
    const mxa_status want = bads[c->index].want;
    int64_t d = 64;
    if (kind == BAD_D48_ROT) d = 48;
    if (kind == BAD_D96_ROT) d = 96;
    if (kind == BAD_D40) d = 40;
    if (kind == BAD_D512) d = 512;
    const int64_t nq = (int64_t)B * H * NQ * d, nkv = (int64_t)B * HKV * NK * d;
    float *q = malloc((size_t)nq * 4), *k = malloc((size_t)nkv * 4), *v = malloc((size_t)nkv * 4);
    float *bias = calloc((size_t)B * H * NQ * NK, 4);
    uint8_t *mask = malloc((size_t)B * H * NQ * NK);
    int32_t lengths[B] = {NK, NK};
    conform_guarded go = {0}, gl = {0}, gc = {0}, gs = {0};
    float *o = conform_guarded_alloc(&go, (size_t)nq * 4), *lse = conform_guarded_alloc(&gl, (size_t)B * H * NQ * 4);
    mxa_buffer *buf = NULL;
    char msg[CONFORM_MSG_LEN];
    if (!q || !k || !v || !o || !lse || !bias || !mask) {
        conform_fail(r, "out of memory");
        goto out;
    }
    conform_rng g = {conform_case_seed(ctx->seed, c->name)};
    for (int64_t i = 0; i < nq; i++) q[i] = (float)conform_normal(&g);
    for (int64_t i = 0; i < nkv; i++) k[i] = (float)conform_normal(&g), v[i] = (float)conform_normal(&g);

    memset(mask, 1, (size_t)B * H * NQ * NK);
    mxa_tensor tq, tk, tv, to, tl, side;
    mxa_tensor_init(&tq, MXA_F32, B, H, NQ, d, q);
    mxa_tensor_init(&tk, MXA_F32, B, HKV, NK, d, k);
    mxa_tensor_init(&tv, MXA_F32, B, HKV, NK, d, v);
    mxa_tensor_init(&to, MXA_F32, B, H, NQ, d, o);
    mxa_tensor_init(&tl, MXA_F32, B, H, NQ, 1, lse);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    const mxa_attention_desc *dp = &desc;
    const mxa_tensor *pq = &tq;
    mxa_tensor *po = &to;
    mxa_status st;
    int quantize = 0;
    switch (kind) {
    case BAD_NAN_Q: q[5 * d + 7] = NAN; break;
    case BAD_INF_K: k[NK * d + 3] = -INFINITY; break;
    case BAD_HUGE_V: v[17] = 0x1p60f; break;
    case BAD_NAN_V_TAIL: v[nkv - 1] = NAN; break;
    case BAD_D40: case BAD_D512: desc.hadamard = 0; break;
    case BAD_BC48: desc.bc = 48; break;
    case BAD_BC8192: desc.bc = 8192; break;
    case BAD_BC_NEG: desc.bc = -32; break;
    case BAD_GQA: tk.shape[1] = tv.shape[1] = 3; break;
    case BAD_KV_LEN: tv.shape[2] = NK - 1; break;
    case BAD_OUT_SHAPE: to.shape[2] = NQ - 1; break;
    case BAD_BATCH: tk.shape[0] = 1; break;
    case BAD_HEAD_SIZE: tv.shape[3] = 32; break;
    case BAD_LSE_SHAPE: tl.shape[3] = 2; break;
    case BAD_LSE_DTYPE: tl.dtype = MXA_F16; break;
    case BAD_NULL_Q: pq = NULL; break;
    case BAD_NULL_DESC: dp = NULL; break;
    case BAD_NULL_OUT: po = NULL; break;
    case BAD_NULL_DATA: tk.data = NULL; break;
    case BAD_DTYPE: tq.dtype = (mxa_dtype)7; break;
    case BAD_ZERO_LEN: tq.shape[2] = 0; break;
    case BAD_NEG_STRIDE: tq.strides[0] = H * NQ * d, tq.strides[1] = -NQ * d, tq.strides[2] = d, tq.strides[3] = 1; break;
    case BAD_RULE_Q9: desc.rule.kind = MXA_RULE_CEIL, desc.rule.q = 9.0f; break;
    case BAD_QUANT_BITS: desc.quantize |= 0x80; break;
    case BAD_PLACEMENT: desc.placement = (mxa_placement)5; break;
    case BAD_SCALE_NAN: desc.scale = NAN; break;
    case BAD_SCALE_NEG: desc.scale = -1.0f; break;
    case BAD_FORMAT: desc.format = (mxa_format)9; break;
    case BAD_OUT_BUF_SMALL:
    case BAD_IN_BUF_BOOL:
    case BAD_IN_BUF_OFFSET: {
        const size_t bytes = kind == BAD_OUT_BUF_SMALL ? (size_t)nq * 4 - 4 : (size_t)nq * 4 + 64;
        unsigned char *fill = malloc(bytes);
        if (!fill) {
            conform_fail(r, "out of memory");
            goto out;
        }
        conform_fill_pattern(fill, bytes);
        st = mxa_buffer_create(ctx->dev, bytes, &buf);
        if (!st) st = mxa_buffer_upload(buf, 0, fill, bytes);
        free(fill);
        if (st) {
            conform_fail(r, "device buffer: %s: %s", mxa_status_string(st), mxa_last_error_message());
            goto out;
        }
        if (kind == BAD_IN_BUF_OFFSET) {
            tq.data = NULL, tq.buffer = buf, tq.offset = 2;
        } else if (kind == BAD_IN_BUF_BOOL) {
            tq.data = NULL, tq.buffer = buf, tq.offset = 0, tq.dtype = MXA_BOOL;
        } else {
            to.data = NULL, to.buffer = buf, to.offset = 0;
        }
        break;
    }
    case BAD_QUANT_NULL:
    case BAD_QUANT_RULE:
    case BAD_QUANT_DTYPE: quantize = 1; break;
    case BAD_ALLOW_NON_FINITE: desc.allow_non_finite = 1, q[3] = NAN; break;
    case BAD_BIAS_SHAPE: mxa_tensor_init(&side, MXA_F32, B, H, NQ, NK - 1, bias), desc.bias = &side; break;
    case BAD_BIAS_HEADS: mxa_tensor_init(&side, MXA_F32, 1, 2, NQ, NK, bias), desc.bias = &side; break;
    case BAD_BIAS_BOOL: mxa_tensor_init(&side, MXA_BOOL, B, H, NQ, NK, mask), desc.bias = &side; break;
    case BAD_MASK_FLOAT: mxa_tensor_init(&side, MXA_F32, B, 1, NQ, NK, bias), desc.mask = &side; break;
    case BAD_MASK_SHAPE: mxa_tensor_init(&side, MXA_BOOL, B, 1, NQ - 1, NK, mask), desc.mask = &side; break;
    case BAD_KEY_LENGTH_OVER: lengths[1] = NK + 1, desc.key_lengths = lengths; break;
    case BAD_KEY_LENGTH_NEG: lengths[0] = -1, desc.key_lengths = lengths; break;
    case BAD_CAUSAL3: desc.causal = 3; break;
    case BAD_BIAS_NAN:
    case BAD_BIAS_POS_INF:
        bias[H * NQ * NK - 18] = kind == BAD_BIAS_NAN ? NAN : INFINITY; /* near the end of a [1, H] bias */
        mxa_tensor_init(&side, MXA_F32, 1, H, NQ, NK, bias), desc.bias = &side;
        break;
    default: break;
    }

    if (quantize) {
        uint8_t *codes = conform_guarded_alloc(&gc, (size_t)(B * H * NQ * 2 * 16));
        uint8_t *scales = conform_guarded_alloc(&gs, (size_t)(B * H * NQ * 2));
        if (!codes || !scales) {
            conform_fail(r, "out of memory");
            goto out;
        }
        mxa_rule rule = mxa_rule_uos();
        if (kind == BAD_QUANT_RULE) rule.q = 5.0f;
        if (kind == BAD_QUANT_DTYPE) tq.dtype = (mxa_dtype)9;
        st = mxa_quantize(ctx->dev, &tq, rule, kind == BAD_QUANT_NULL ? NULL : codes, scales);
        if (!conform_guarded_untouched(&gs) || (kind != BAD_QUANT_NULL && !conform_guarded_untouched(&gc)))
            conform_fail(r, "mxa_quantize failed but wrote its outputs");
    } else {
        mxa_attention_info info;
        st = mxa_attention(ctx->dev, dp, pq, &tk, &tv, po, kind == BAD_LSE_SHAPE || kind == BAD_LSE_DTYPE || !buf ? &tl : NULL,
                           &info);
        if (st == MXA_OK && kind == BAD_ALLOW_NON_FINITE) {
            r->bc = info.bc;
            snprintf(r->variant, sizeof r->variant, "%s", info.variant);
        }
    }
    const char *m = st == MXA_OK ? "" : mxa_last_error_message(); /* a success leaves an older message behind */
    if (kind == BAD_ALLOW_NON_FINITE) {
        if (st != MXA_OK && st != MXA_ERR_UNSUPPORTED)
            conform_fail(r, "allow_non_finite with a NaN: %s (%s), expected OK or MXA_ERR_UNSUPPORTED", mxa_status_string(st), m);
    } else if (st != want) {
        conform_fail(r, "%s: got %s (%s), expected %s", bads[c->index].what, mxa_status_string(st), m, mxa_status_string(want));
    } else if (!m || !*m || strchr(m, '\n')) {
        conform_fail(r, "%s: the error message is %s", bads[c->index].what, !m || !*m ? "empty" : "not one line");
    } else {
        snprintf(r->message, sizeof r->message, "%s: %s", mxa_status_string(st), m);
    }
    if (conform_guarded_check(&go, "out", msg, sizeof msg) || conform_guarded_check(&gl, "lse", msg, sizeof msg) ||
        conform_guarded_check(&gc, "codes", msg, sizeof msg) || conform_guarded_check(&gs, "scales", msg, sizeof msg))
        conform_fail(r, "%s", msg);
    if (st != MXA_OK && (!conform_guarded_untouched(&go) || !conform_guarded_untouched(&gl)))
        conform_fail(r, "the call failed (%s) but wrote its outputs", mxa_status_string(st));
    if (buf && kind != BAD_IN_BUF_OFFSET) {
        const size_t bytes = kind == BAD_OUT_BUF_SMALL ? (size_t)nq * 4 - 4 : (size_t)nq * 4 + 64;
        unsigned char *back = malloc(bytes);
        if (back && mxa_buffer_download(buf, 0, back, bytes) == MXA_OK && conform_pattern_mismatch(back, bytes, 0) >= 0)
            conform_fail(r, "the call failed (%s) but wrote the output buffer", mxa_status_string(st));
        free(back);
    }
out:
    mxa_buffer_destroy(buf);
    conform_guarded_free(&go);
    conform_guarded_free(&gl);
    conform_guarded_free(&gc);
    conform_guarded_free(&gs);
    free(q);
    free(k);
    free(v);
    free(bias);
    free(mask);
}

int conform_add_bad_cases(conform_case_list *list)
{
    for (int i = 0; i < BAD_COUNT; i++) {
        conform_case c;
        memset(&c, 0, sizeof c);
        snprintf(c.name, sizeof c.name, "bad-input/%s", bads[i].name);
        c.group = "bad-input";
        c.what = bads[i].what;
        c.flags = CF_QUICK | CF_REQUIRED;
        c.run = run_bad;
        c.index = i;
        if (!conform_case_add(list, &c)) return -1;
    }
    return 0;
}
