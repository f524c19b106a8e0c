/*
 * Pre-quantized K/V (mxa_prepare_kv) on an OpenCL device, each variant it runs: attention on
 * the prepared K/V (desc.kv, k = v = NULL) is bit for bit attention on the float32 K and V on
 * the same device, o and lse, for mxattention and ocp-direct with GQA: non-causal, bottom-right
 * causal, top-left causal with key lengths, a bias and a mask with key lengths, D 32 and 128,
 * Nk not a multiple of 32; asynchronous calls and device-buffer q, o and lse too. A prepared
 * K/V of another device is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cl_test_common.h"
#include "testutil.h"

enum { B = 2, H = 4, HKV = 2, NQ = 24, NK = 70, DMAX = 128 };
#define QN (B * H * NQ * DMAX)
#define KN (B * HKV * NK * DMAX)
#define ROWS (B * H * NQ)
#define SIDE (B * H * NQ * NK)

static float g_q[QN], g_k[KN], g_v[KN], g_bias[SIDE];
static uint8_t g_mask[SIDE];
static const int32_t g_lengths[B] = {NK - 13, 31};

static void fill(int d)
{
    tu_rng r = {29u + (uint64_t)d};
    tu_fill_attention(&r, g_q, g_k, g_v, B, H, HKV, NQ, NK, d);
    tu_fill_normal(&r, g_bias, SIDE, 1.5f);
    for (int i = 0; i < SIDE; i++) g_mask[i] = tu_uniform(&r) < 0.8;
}

/* How the prepared call is made: synchronously, asynchronously, or with q, o and lse in
 * device buffers. */
enum { SYNC, ASYNC, BUFFERS };

/* The float32 call, then the same on the K/V prepared from it: equal bytes (o and lse). */
static void same_bits(mxa_device *dev, const mxa_attention_desc *desc, int d, int how, const char *what)
{
    static float o1[QN], o2[QN], l1[ROWS], l2[ROWS], ref[QN];
    mxa_tensor q = tu_tensor(g_q, B, H, NQ, d), k = tu_tensor(g_k, B, HKV, NK, d), v = tu_tensor(g_v, B, HKV, NK, d),
               t1 = tu_tensor(o1, B, H, NQ, d), t2 = tu_tensor(o2, B, H, NQ, d), tl1 = tu_tensor(l1, B, H, NQ, 1),
               tl2 = tu_tensor(l2, B, H, NQ, 1), tr = tu_tensor(ref, B, H, NQ, d), tb, tm;
    mxa_tensor_init(&tb, MXA_F32, 1, H, NQ, NK, g_bias);
    mxa_tensor_init(&tm, MXA_BOOL, B, 1, NQ, NK, g_mask);
    mxa_attention_desc plain = *desc;
    if (plain.bias) plain.bias = &tb;
    if (plain.mask) plain.mask = &tm;
    mxa_attention_info info;
    mxa_status st = mxa_attention(dev, &plain, &q, &k, &v, &t1, &tl1, &info);
    if (st) printf("# %s, float32 K/V: %s\n", what, mxa_last_error_message());
    assert_int_equal(st, MXA_OK);
    /* the float32 path itself is right (so that equal bits mean something) */
    assert_int_equal(mxa_reference_attention(&plain, info.bc, &q, &k, &v, &tr, NULL, NULL), MXA_OK);
    const double e = tu_nmse(o1, ref, (int64_t)B * H * NQ * d);
    assert_true(e <= 1e-5);

    mxa_kv *kv = NULL;
    assert_int_equal(mxa_prepare_kv(dev, &plain, &k, &v, &kv), MXA_OK);
    mxa_attention_desc with = plain;
    with.kv = kv;
    memset(o2, 0xCD, sizeof o2);
    memset(l2, 0xCD, sizeof l2);
    if (how == SYNC) {
        st = mxa_attention(dev, &with, &q, NULL, NULL, &t2, &tl2, &info);
    } else if (how == ASYNC) {
        mxa_event *ev = NULL;
        st = mxa_attention_async(dev, &with, &q, NULL, NULL, &t2, &tl2, &ev);
        if (!st) st = mxa_event_wait(ev, &info);
        mxa_event_destroy(ev);
    } else {
        mxa_buffer *bq = NULL, *bo = NULL, *bl = NULL;
        const size_t qbytes = (size_t)B * H * NQ * d * sizeof(float);
        assert_int_equal(mxa_buffer_create(dev, qbytes, &bq), MXA_OK);
        assert_int_equal(mxa_buffer_create(dev, 64 + qbytes, &bo), MXA_OK);
        assert_int_equal(mxa_buffer_create(dev, ROWS * sizeof(float), &bl), MXA_OK);
        assert_int_equal(mxa_buffer_upload(bq, 0, g_q, qbytes), MXA_OK);
        mxa_tensor dq = q, dout = t2, dl = tl2;
        dq.data = dout.data = dl.data = NULL;
        dq.buffer = bq;
        dout.buffer = bo;
        dout.offset = 64;
        dl.buffer = bl;
        st = mxa_attention(dev, &with, &dq, NULL, NULL, &dout, &dl, &info);
        if (!st) assert_int_equal(mxa_buffer_download(bo, 64, o2, qbytes), MXA_OK);
        if (!st) assert_int_equal(mxa_buffer_download(bl, 0, l2, ROWS * sizeof(float)), MXA_OK);
        mxa_buffer_destroy(bq);
        mxa_buffer_destroy(bo);
        mxa_buffer_destroy(bl);
    }
    if (st) printf("# %s, prepared K/V: %s\n", what, mxa_last_error_message());
    assert_int_equal(st, MXA_OK);
    printf("# %-44s D%-3d %s bc%d: bit for bit (float32 path nmse %.3g)\n", what, d, info.variant, info.bc, e);
    assert_memory_equal(o1, o2, (size_t)B * H * NQ * d * sizeof(float));
    assert_memory_equal(l1, l2, sizeof l1);
    mxa_kv_destroy(kv);
}

static void cases_on(mxa_device *dev)
{
    static const mxa_recipe recipes[2] = {MXA_RECIPE_MXATTENTION, MXA_RECIPE_OCP_DIRECT};
    static const char *const kinds[4] = {"non-causal", "causal bottom-right", "causal top-left, key lengths",
                                         "bias, mask, key lengths"};
    static const mxa_tensor marker; /* non-NULL bias / mask: same_bits puts the real ones in */
    char what[96];
    fill(64);
    for (int r = 0; r < 2; r++)
        for (int kind = 0; kind < 4; kind++) {
            mxa_attention_desc desc;
            mxa_attention_desc_init(&desc, recipes[r]);
            if (kind == 1) desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;
            if (kind >= 2) desc.key_lengths = g_lengths;
            if (kind == 2) desc.causal = MXA_CAUSAL_TOP_LEFT;
            if (kind == 3) desc.bias = desc.mask = &marker;
            snprintf(what, sizeof what, "%s, %s", mxa_recipe_name(recipes[r]), kinds[kind]);
            same_bits(dev, &desc, 64, SYNC, what);
        }
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;
    desc.key_lengths = g_lengths;
    same_bits(dev, &desc, 64, ASYNC, "mxattention, asynchronous");
    same_bits(dev, &desc, 64, BUFFERS, "mxattention, q/o/lse in device buffers");
    for (int i = 0; i < 2; i++) {
        const int d = i ? 128 : 32;
        fill(d);
        mxa_attention_desc_init(&desc, i ? MXA_RECIPE_MXATTENTION : MXA_RECIPE_OCP_DIRECT);
        desc.causal = MXA_CAUSAL_TOP_LEFT;
        same_bits(dev, &desc, d, SYNC, i ? "mxattention, causal top-left" : "ocp-direct, causal top-left");
    }
}

static void test_prepared_equals_float32(void **state)
{
    (void)state;
    int ran = 0;
    for (int i = 0; i < 2; i++) {
        mxa_runtime *rt = NULL;
        mxa_device *dev = NULL;
        if (!clt_open(clt_variants[i], &rt, &dev)) continue;
        cases_on(dev);
        clt_close(rt, dev);
        ran++;
    }
    if (!ran) skip();
}

/* A prepared K/V belongs to the device it was prepared on. */
static void test_other_device(void **state)
{
    (void)state;
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL, *other = NULL;
    if (!clt_open(NULL, &rt, &dev)) skip();
    mxa_device_info info;
    assert_int_equal(mxa_device_info_of(dev, &info), MXA_OK);
    assert_int_equal(mxa_device_open(rt, info.id, &other), MXA_OK);
    fill(64);
    static float o[QN];
    mxa_tensor q = tu_tensor(g_q, B, H, NQ, 64), k = tu_tensor(g_k, B, HKV, NK, 64), v = tu_tensor(g_v, B, HKV, NK, 64),
               to = tu_tensor(o, B, H, NQ, 64);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    mxa_kv *kv = NULL;
    assert_int_equal(mxa_prepare_kv(dev, &desc, &k, &v, &kv), MXA_OK);
    desc.kv = kv;
    assert_int_equal(mxa_attention(other, &desc, &q, NULL, NULL, &to, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "another device"));
    mxa_kv_destroy(kv);
    mxa_device_close(other);
    clt_close(rt, dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_prepared_equals_float32), cmocka_unit_test(test_other_device)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
