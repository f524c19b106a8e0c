/*
 * OpenCL attention with the extras of docs/attention-inputs.md against the reference at the
 * same key tile: bias (broadcast over batches or heads, -inf entries), boolean mask, key
 * lengths (bit for bit the batch called alone with its Nk), causal bottom-right and top-left;
 * device-buffer bias, mask and lse and f16/bf16 outputs bit for bit what the host path gives
 * (rounded once, to nearest even); asynchronous calls (mxa_attention_async) bit for bit the
 * synchronous ones, completed by a later call, a device operation, or closing the device.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cl_test_common.h"
#include "runtime/tensor.h"
#include "testutil.h"

/* as test_opencl_attention.c: exp() ulps can flip a few P^ codes, layout bugs give 1e-3 */
#define NMSE_LIMIT 1e-5

enum { B = 3, H = 2, HKV = 1, NQ = 40, NK = 100, D = 64 };

typedef struct inputs {
    float q[B * H * NQ * D], k[B * HKV * NK * D], v[B * HKV * NK * D];
    float bias[B * H * NQ * NK];
    uint8_t mask[B * H * NQ * NK];
} inputs;

static inputs *make_inputs(uint64_t seed)
{
    inputs *in = calloc(1, sizeof *in);
    assert_non_null(in);
    tu_rng r = {seed};
    tu_fill_attention(&r, in->q, in->k, in->v, B, H, HKV, NQ, NK, D);
    tu_fill_normal(&r, in->bias, B * H * NQ * NK, 2.0f);
    for (int i = 0; i < B * H * NQ * NK; i++) {
        if (tu_uniform(&r) < 0.05) in->bias[i] = -INFINITY;
        in->mask[i] = tu_uniform(&r) < 0.8;
    }
    for (int j = 0; j < NK; j++) in->mask[5 * NK + j] = 0; /* row 5 of batch 0 sees nothing */
    return in;
}

/* Runs desc on the device (host tensors) and the reference at the device's bc; checks NMSE and
 * lse (equal infinities, finite within 1e-3). Returns the device's bc. */
static int check_against_reference(mxa_device *dev, const mxa_attention_desc *desc, inputs *in, const char *what)
{
    static float o[B * H * NQ * D], ref[B * H * NQ * D], lse[B * H * NQ], lse_ref[B * H * NQ];
    mxa_tensor tq = tu_tensor(in->q, B, H, NQ, D), tk = tu_tensor(in->k, B, HKV, NK, D),
               tv = tu_tensor(in->v, B, HKV, NK, D), to = tu_tensor(o, B, H, NQ, D), tr = tu_tensor(ref, B, H, NQ, D),
               tl = tu_tensor(lse, B, H, NQ, 1), tlr = tu_tensor(lse_ref, B, H, NQ, 1);
    mxa_attention_info info;
    mxa_status st = mxa_attention(dev, desc, &tq, &tk, &tv, &to, &tl, &info);
    if (st) printf("# %s: %s\n", what, mxa_last_error_message());
    assert_int_equal(st, MXA_OK);
    assert_int_equal(mxa_reference_attention(desc, info.bc, &tq, &tk, &tv, &tr, &tlr, NULL), MXA_OK);
    const double e = tu_nmse(o, ref, B * H * NQ * D);
    double lse_err = 0.0;
    for (int i = 0; i < B * H * NQ; i++) {
        if (isinf(lse_ref[i]) || isinf(lse[i])) {
            assert_true(isinf(lse[i]) && isinf(lse_ref[i]) && lse[i] < 0);
            continue;
        }
        const double d = fabs((double)lse[i] - lse_ref[i]);
        if (d > lse_err) lse_err = d;
    }
    printf("# %-40s %s bc%d: nmse %.3g, lse max err %.3g\n", what, info.variant, info.bc, e, lse_err);
    assert_true(e <= NMSE_LIMIT);
    assert_true(lse_err <= 1e-3);
    return info.bc;
}

static void test_extras_vs_reference(void **state)
{
    (void)state;
    mxa_runtime *rt;
    mxa_device *dev;
    if (!clt_open(NULL, &rt, &dev)) skip();
    inputs *in = make_inputs(11);
    mxa_tensor bias_h, bias_b, mask_b, mask_bh;
    mxa_tensor_init(&bias_h, MXA_F32, 1, H, NQ, NK, in->bias);  /* per head (T5-style) */
    mxa_tensor_init(&bias_b, MXA_F32, B, 1, NQ, NK, in->bias);  /* per batch */
    mxa_tensor_init(&mask_b, MXA_BOOL, B, 1, NQ, NK, in->mask); /* padding-style */
    mxa_tensor_init(&mask_bh, MXA_BOOL, B, H, NQ, NK, in->mask);
    const int32_t lengths[B] = {NK, 37, 0};
    const int32_t lengths2[B] = {1, 64, 65};
    for (int recipe = 0; recipe < 3; recipe++) {
        mxa_attention_desc desc;
        mxa_attention_desc_init(&desc, (mxa_recipe)recipe);
        char what[64];
        snprintf(what, sizeof what, "%s bias[1,H] causal", mxa_recipe_name((mxa_recipe)recipe));
        desc.bias = &bias_h;
        desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;
        check_against_reference(dev, &desc, in, what);
        snprintf(what, sizeof what, "%s mask[B,1] top-left", mxa_recipe_name((mxa_recipe)recipe));
        desc.bias = NULL;
        desc.mask = &mask_b;
        desc.causal = MXA_CAUSAL_TOP_LEFT;
        check_against_reference(dev, &desc, in, what);
        snprintf(what, sizeof what, "%s lengths bias[B,1] mask causal", mxa_recipe_name((mxa_recipe)recipe));
        desc.bias = &bias_b;
        desc.mask = &mask_bh;
        desc.key_lengths = lengths;
        desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;
        check_against_reference(dev, &desc, in, what);
        snprintf(what, sizeof what, "%s lengths 1/64/65 top-left", mxa_recipe_name((mxa_recipe)recipe));
        desc.bias = desc.mask = NULL;
        desc.key_lengths = lengths2;
        desc.causal = MXA_CAUSAL_TOP_LEFT;
        check_against_reference(dev, &desc, in, what);
    }
    free(in);
    clt_close(rt, dev);
}

/* A key length is a length: batch b of a batched call is bit for bit batch b called alone with
 * Nk = L_b (its first L_b keys and bias columns), although its V rows past L_b hold data. */
static void test_key_lengths_are_lengths(void **state)
{
    (void)state;
    mxa_runtime *rt;
    mxa_device *dev;
    if (!clt_open(NULL, &rt, &dev)) skip();
    inputs *in = make_inputs(12);
    const int32_t lengths[B] = {NK, 37, 70};
    static float o[B * H * NQ * D], lse[B * H * NQ];
    mxa_tensor bias;
    mxa_tensor_init(&bias, MXA_F32, B, H, NQ, NK, in->bias);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.bias = &bias;
    desc.key_lengths = lengths;
    desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;
    mxa_tensor tq = tu_tensor(in->q, B, H, NQ, D), tk = tu_tensor(in->k, B, HKV, NK, D),
               tv = tu_tensor(in->v, B, HKV, NK, D), to = tu_tensor(o, B, H, NQ, D), tl = tu_tensor(lse, B, H, NQ, 1);
    assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &to, &tl, NULL), MXA_OK);
    for (int b = 0; b < B; b++) {
        const int L = lengths[b];
        float *kb = malloc((size_t)L * D * 4), *vb = malloc((size_t)L * D * 4), *bb = malloc((size_t)H * NQ * L * 4);
        float ob[H * NQ * D], lb[H * NQ];
        assert_true(kb && vb && bb);
        memcpy(kb, in->k + (size_t)b * NK * D, (size_t)L * D * 4);
        memcpy(vb, in->v + (size_t)b * NK * D, (size_t)L * D * 4);
        for (int hi = 0; hi < H * NQ; hi++) memcpy(bb + (size_t)hi * L, in->bias + ((size_t)b * H * NQ + hi) * NK, (size_t)L * 4);
        mxa_tensor sq = tu_tensor(in->q + (size_t)b * H * NQ * D, 1, H, NQ, D), sk = tu_tensor(kb, 1, HKV, L, D),
                   sv = tu_tensor(vb, 1, HKV, L, D), so = tu_tensor(ob, 1, H, NQ, D), sl = tu_tensor(lb, 1, H, NQ, 1),
                   sbias;
        mxa_tensor_init(&sbias, MXA_F32, 1, H, NQ, L, bb);
        mxa_attention_desc alone = desc;
        alone.bias = &sbias;
        alone.key_lengths = NULL;
        assert_int_equal(mxa_attention(dev, &alone, &sq, &sk, &sv, &so, &sl, NULL), MXA_OK);
        assert_memory_equal(ob, o + (size_t)b * H * NQ * D, sizeof ob);
        assert_memory_equal(lb, lse + (size_t)b * H * NQ, sizeof lb);
        free(kb);
        free(vb);
        free(bb);
    }
    free(in);
    clt_close(rt, dev);
}

static mxa_buffer *upload(mxa_device *dev, const void *src, size_t bytes)
{
    mxa_buffer *buf = NULL;
    assert_int_equal(mxa_buffer_create(dev, bytes, &buf), MXA_OK);
    assert_int_equal(mxa_buffer_upload(buf, 0, src, bytes), MXA_OK);
    return buf;
}

/* Device-buffer bias, mask and lse, and f32/f16/bf16 outputs in a buffer (at an offset): bit for
 * bit the host path, the 16-bit ones rounded once from it to nearest even. */
static void test_device_extras_and_half_outputs(void **state)
{
    (void)state;
    mxa_runtime *rt;
    mxa_device *dev;
    if (!clt_open(NULL, &rt, &dev)) skip();
    inputs *in = make_inputs(13);
    static float o_host[B * H * NQ * D], lse_host[B * H * NQ], lse_dev[B * H * NQ], o_dev[B * H * NQ * D];
    static uint16_t o16[B * H * NQ * D];
    const int32_t lengths[B] = {90, 33, 64};
    mxa_tensor bias_t, mask_t;
    mxa_tensor_init(&bias_t, MXA_F32, 1, H, NQ, NK, in->bias);
    mxa_tensor_init(&mask_t, MXA_BOOL, B, 1, NQ, NK, in->mask);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.bias = &bias_t;
    desc.mask = &mask_t;
    desc.key_lengths = lengths;
    desc.causal = MXA_CAUSAL_TOP_LEFT;
    mxa_tensor tq = tu_tensor(in->q, B, H, NQ, D), tk = tu_tensor(in->k, B, HKV, NK, D),
               tv = tu_tensor(in->v, B, HKV, NK, D), to = tu_tensor(o_host, B, H, NQ, D),
               tl = tu_tensor(lse_host, B, H, NQ, 1);
    assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &to, &tl, NULL), MXA_OK);

    const size_t off = 256; /* outputs and sides at an offset into their buffers */
    mxa_buffer *bias_buf = NULL, *mask_buf = NULL, *out_buf = NULL, *lse_buf = NULL;
    assert_int_equal(mxa_buffer_create(dev, off + sizeof in->bias, &bias_buf), MXA_OK);
    assert_int_equal(mxa_buffer_upload(bias_buf, off, in->bias, (size_t)H * NQ * NK * 4), MXA_OK);
    mask_buf = upload(dev, in->mask, (size_t)B * NQ * NK);
    assert_int_equal(mxa_buffer_create(dev, off + sizeof o_dev, &out_buf), MXA_OK);
    assert_int_equal(mxa_buffer_create(dev, off + sizeof lse_dev, &lse_buf), MXA_OK);
    mxa_tensor dbias = bias_t, dmask = mask_t, dlse = tl, dout = to;
    dbias.data = NULL;
    dbias.buffer = bias_buf;
    dbias.offset = off;
    dmask.data = NULL;
    dmask.buffer = mask_buf;
    dlse.data = NULL;
    dlse.buffer = lse_buf;
    dlse.offset = off;
    dout.data = NULL;
    dout.buffer = out_buf;
    dout.offset = off;
    desc.bias = &dbias;
    desc.mask = &dmask;
    const mxa_dtype types[3] = {MXA_F32, MXA_F16, MXA_BF16};
    for (int t = 0; t < 3; t++) {
        dout.dtype = types[t];
        assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &dout, &dlse, NULL), MXA_OK);
        assert_int_equal(mxa_buffer_download(lse_buf, off, lse_dev, sizeof lse_dev), MXA_OK);
        assert_memory_equal(lse_dev, lse_host, sizeof lse_dev);
        if (types[t] == MXA_F32) {
            assert_int_equal(mxa_buffer_download(out_buf, off, o_dev, sizeof o_dev), MXA_OK);
            assert_memory_equal(o_dev, o_host, sizeof o_dev);
            continue;
        }
        assert_int_equal(mxa_buffer_download(out_buf, off, o16, sizeof o16), MXA_OK);
        for (int i = 0; i < B * H * NQ * D; i++) {
            const uint16_t want = types[t] == MXA_F16 ? mxa_f32_to_f16(o_host[i]) : mxa_f32_to_bf16(o_host[i]);
            if (o16[i] != want) printf("# element %d: %04x, want %04x (from %a)\n", i, o16[i], want, o_host[i]);
            assert_int_equal(o16[i], want);
        }
    }
    mxa_buffer_destroy(bias_buf);
    mxa_buffer_destroy(mask_buf);
    mxa_buffer_destroy(out_buf);
    mxa_buffer_destroy(lse_buf);
    free(in);
    clt_close(rt, dev);
}

/* The kernels' f32 -> f16/bf16 rounding at its corners: with one key and nothing quantized
 * (fp32 recipe) o is V itself, so V's values reach the conversion: f16 overflow and its edge,
 * subnormals and their ties, ties to even in both formats, signed zero, infinities, NaN. */
static void test_half_rounding_corners(void **state)
{
    (void)state;
    mxa_runtime *rt;
    mxa_device *dev;
    if (!clt_open(NULL, &rt, &dev)) skip();
    enum { CD = 32 };
    const float v[CD] = {65519.0f, 65520.0f, -65520.0f, 65504.0f, 65535.0f, 3.0e-5f, 0x1p-24f, 0x1p-25f,
                         0x1.8p-24f, 0x1.4p-24f, 0x1p-14f, 0x1.ffcp-15f, 0x1.ffep-15f, 1.0e-30f, 0x1.002p0f,
                         0x1.006p0f, 0x1.01p0f, 0x1.03p0f, -0x1.01p0f, 0x1.fffffep127f, INFINITY, -INFINITY, NAN,
                         -0.0f, 0.0f, 1.0f, -2.5f, 0x1.0081p0f, 0x1.7ffp3f, 3.14159265f, -1.0e-8f, 1.0e4f};
    float q[CD] = {0}, k[CD] = {0}, o32[CD];
    uint16_t o16[CD];
    mxa_tensor tq = tu_tensor(q, 1, 1, 1, CD), tk = tu_tensor(k, 1, 1, 1, CD), tv = tu_tensor((float *)v, 1, 1, 1, CD);
    mxa_buffer *out = NULL;
    assert_int_equal(mxa_buffer_create(dev, sizeof o32, &out), MXA_OK);
    mxa_tensor to = tu_tensor(NULL, 1, 1, 1, CD);
    to.data = NULL;
    to.buffer = out;
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_FP32);
    desc.allow_non_finite = 1;
    assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, NULL), MXA_OK);
    assert_int_equal(mxa_buffer_download(out, 0, o32, sizeof o32), MXA_OK);
    for (int i = 0; i < CD; i++)
        if (!isnan(v[i])) assert_true(o32[i] == v[i]); /* o is V: the corners reach the rounding */
    for (int t = 0; t < 2; t++) {
        to.dtype = t ? MXA_BF16 : MXA_F16;
        assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, NULL), MXA_OK);
        assert_int_equal(mxa_buffer_download(out, 0, o16, sizeof o16), MXA_OK);
        for (int i = 0; i < CD; i++) {
            const uint16_t want = t ? mxa_f32_to_bf16(o32[i]) : mxa_f32_to_f16(o32[i]);
            if (o16[i] != want) printf("# %s of %a: %04x, want %04x\n", t ? "bf16" : "f16", o32[i], o16[i], want);
            assert_int_equal(o16[i], want);
        }
    }
    mxa_buffer_destroy(out);
    clt_close(rt, dev);
}

/* mxa_attention_async: bit for bit mxa_attention; a later call, a device operation or closing
 * the device completes a pending call first. */
static void test_async(void **state)
{
    (void)state;
    mxa_runtime *rt;
    mxa_device *dev;
    if (!clt_open(NULL, &rt, &dev)) skip();
    inputs *in = make_inputs(14);
    static float o_sync[B * H * NQ * D], o1[B * H * NQ * D], o2[B * H * NQ * D], lse1[B * H * NQ], lse_sync[B * H * NQ];
    const int32_t lengths[B] = {77, 20, 100};
    mxa_tensor mask_t;
    mxa_tensor_init(&mask_t, MXA_BOOL, B, H, NQ, NK, in->mask);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.mask = &mask_t;
    desc.key_lengths = lengths;
    mxa_tensor tq = tu_tensor(in->q, B, H, NQ, D), tk = tu_tensor(in->k, B, HKV, NK, D),
               tv = tu_tensor(in->v, B, HKV, NK, D), ts = tu_tensor(o_sync, B, H, NQ, D),
               tls = tu_tensor(lse_sync, B, H, NQ, 1), t1 = tu_tensor(o1, B, H, NQ, D),
               tl1 = tu_tensor(lse1, B, H, NQ, 1), t2 = tu_tensor(o2, B, H, NQ, D);
    mxa_attention_info sync_info;
    assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &ts, &tls, &sync_info), MXA_OK);

    /* two calls in flight: the second's submit completes the first */
    mxa_event *e1 = NULL, *e2 = NULL;
    assert_int_equal(mxa_attention_async(dev, &desc, &tq, &tk, &tv, &t1, &tl1, &e1), MXA_OK);
    assert_int_equal(mxa_attention_async(dev, &desc, &tq, &tk, &tv, &t2, NULL, &e2), MXA_OK);
    mxa_attention_info info;
    memset(&info, 0, sizeof info);
    assert_int_equal(mxa_event_wait(e2, &info), MXA_OK);
    assert_string_equal(info.variant, sync_info.variant); /* the variant that ran, reported at the wait */
    assert_int_equal(mxa_event_wait(e1, NULL), MXA_OK);
    assert_memory_equal(o1, o_sync, sizeof o1);
    assert_memory_equal(o2, o_sync, sizeof o2);
    assert_memory_equal(lse1, lse_sync, sizeof lse1);
    assert_int_equal(mxa_event_wait(e1, NULL), MXA_OK); /* waiting twice is harmless */
    mxa_event_destroy(e1);
    mxa_event_destroy(e2);

    /* an output in a device buffer: a download is a later operation and sees what it wrote */
    mxa_buffer *out_buf = NULL;
    assert_int_equal(mxa_buffer_create(dev, sizeof o1, &out_buf), MXA_OK);
    mxa_tensor dout = t1;
    dout.data = NULL;
    dout.buffer = out_buf;
    assert_int_equal(mxa_attention_async(dev, &desc, &tq, &tk, &tv, &dout, NULL, &e1), MXA_OK);
    memset(o1, 0, sizeof o1);
    assert_int_equal(mxa_buffer_download(out_buf, 0, o1, sizeof o1), MXA_OK);
    assert_memory_equal(o1, o_sync, sizeof o1);
    assert_int_equal(mxa_event_wait(e1, NULL), MXA_OK);
    mxa_event_destroy(e1);
    mxa_buffer_destroy(out_buf);

    /* closing the device completes the call; its event then still delivers the host output */
    memset(o1, 0, sizeof o1);
    assert_int_equal(mxa_attention_async(dev, &desc, &tq, &tk, &tv, &t1, NULL, &e1), MXA_OK);
    mxa_device_close(dev);
    assert_int_equal(mxa_event_wait(e1, NULL), MXA_OK);
    assert_memory_equal(o1, o_sync, sizeof o1);
    mxa_event_destroy(e1);
    /* an event destroyed unwaited: its device completes the work first (no use after free) */
    assert_int_equal(mxa_device_open(rt, getenv("MXA_CL_TEST_DEVICE") ? getenv("MXA_CL_TEST_DEVICE") : "opencl:0", &dev),
                     MXA_OK);
    assert_int_equal(mxa_attention_async(dev, &desc, &tq, &tk, &tv, &t1, NULL, &e1), MXA_OK);
    mxa_event_destroy(e1);
    free(in);
    clt_close(rt, dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_extras_vs_reference),
        cmocka_unit_test(test_key_lengths_are_lengths),
        cmocka_unit_test(test_device_extras_and_half_outputs),
        cmocka_unit_test(test_half_rounding_corners),
        cmocka_unit_test(test_async),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
