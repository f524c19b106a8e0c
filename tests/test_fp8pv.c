/*
 * The MXFP8 P V recipe (mxattention-fp8pv, desc.pv_format MXA_PV_MXFP8): the recipe and
 * its validation; the reference against an independent single-tile computation bit for
 * bit; PNQ's row sum with MXFP8 P; accuracy against mxattention; the CPU device against
 * the reference on every ISA of this machine, causal kinds, GQA, key lengths, tails,
 * each quantizer alone and direct placement.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/cpu/cpu_isa.h"
#include "runtime/hadamard.h"
#include "runtime/mxfp4.h"
#include "runtime/mxfp8.h"
#include "testutil.h"

static mxa_attention_desc fp8pv(void)
{
    mxa_attention_desc d;
    assert_int_equal(mxa_attention_desc_init(&d, MXA_RECIPE_MXATTENTION_FP8PV), MXA_OK);
    return d;
}

static void test_recipe(void **state)
{
    (void)state;
    mxa_attention_desc a = fp8pv(), b;
    assert_int_equal(mxa_attention_desc_init(&b, MXA_RECIPE_MXATTENTION), MXA_OK);
    assert_int_equal(b.pv_format, MXA_PV_MXFP4);
    assert_int_equal(a.pv_format, MXA_PV_MXFP8);
    b.pv_format = MXA_PV_MXFP8; /* otherwise exactly mxattention */
    assert_memory_equal(&a, &b, sizeof a);
    mxa_recipe r;
    assert_int_equal(mxa_recipe_parse("mxattention-fp8pv", &r), MXA_OK);
    assert_int_equal(r, MXA_RECIPE_MXATTENTION_FP8PV);
    assert_string_equal(mxa_recipe_name(r), "mxattention-fp8pv");
    assert_string_equal(mxa_recipe_name((mxa_recipe)4), "unknown");
    assert_int_equal(mxa_recipe_parse("mxattention-fp8", &r), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "mxattention-fp8pv"));
}

static void test_validation(void **state)
{
    (void)state;
    float q[64 * 32], o[64 * 32];
    tu_rng rng = {3};
    tu_fill_normal(&rng, q, 64 * 32, 1.0f);
    mxa_tensor t = tu_tensor(q, 1, 1, 64, 32), to = tu_tensor(o, 1, 1, 64, 32);
    mxa_attention_desc d = fp8pv();
    d.pv_format = (mxa_pv_format)2;
    assert_int_equal(mxa_reference_attention(&d, 64, &t, &t, &t, &to, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "pv_format"));
    d = fp8pv();
    d.format = MXA_FORMAT_NVFP4;
    assert_int_equal(mxa_reference_attention(&d, 64, &t, &t, &t, &to, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);

    mxa_runtime *rt;
    mxa_device *dev;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "cpu", &dev), MXA_OK);
    /* a prepared K/V holds MXFP4 V: neither made nor taken with an MXFP8 P V */
    mxa_kv *kv = NULL;
    d = fp8pv();
    assert_int_equal(mxa_prepare_kv(dev, &d, &t, &t, &kv), MXA_ERR_UNSUPPORTED);
    assert_null(kv);
    mxa_attention_desc m;
    mxa_attention_desc_init(&m, MXA_RECIPE_MXATTENTION);
    assert_int_equal(mxa_prepare_kv(dev, &m, &t, &t, &kv), MXA_OK);
    d.kv = kv;
    memset(o, 0xff, sizeof o); /* NaN */
    assert_int_equal(mxa_attention(dev, &d, &t, NULL, NULL, &to, NULL, NULL), MXA_ERR_UNSUPPORTED);
    assert_non_null(strstr(mxa_last_error_message(), "MXFP8"));
    assert_true(isnan(o[0])); /* untouched */
    mxa_kv_destroy(kv);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
}

/* Q/K rotated and fake-quantized in MXFP4 (UOS), then one tile: S by exact block
 * products summed in fp32, P~ = expf(S - m), P^ and V^ in MXFP8, l = rowsum(P^). The
 * reference with Bc >= Nk must give exactly this. */
static void single_tile(const float *q, const float *k, const float *v, int nq, int nk, int d, float *o)
{
    const int kb = (nk + 31) / 32;
    float *qh = malloc(sizeof(float) * (size_t)(nq * d)), *kh = malloc(sizeof(float) * (size_t)(nk * d));
    float *vt = calloc((size_t)(d * kb * 32), sizeof(float)), *p = calloc((size_t)kb * 32, sizeof(float));
    for (int i = 0; i < nq + nk; i++) {
        float *row = i < nq ? qh + i * d : kh + (i - nq) * d;
        memcpy(row, i < nq ? q + i * d : k + (i - nq) * d, sizeof(float) * (size_t)d);
        mxa_hadamard(row, d);
        for (int b = 0; b < d / 32; b++) mxa_fake_quantize_block(row + 32 * b, 32, mxa_rule_uos());
    }
    for (int c = 0; c < d; c++) {
        for (int j = 0; j < nk; j++) vt[c * kb * 32 + j] = v[j * d + c];
        for (int b = 0; b < kb; b++) {
            uint8_t codes[32], scale;
            mxa_mxfp8_quantize_block(vt + c * kb * 32 + 32 * b, 32, codes, &scale);
            for (int i = 0; i < 32; i++) vt[c * kb * 32 + 32 * b + i] = mxa_mxfp8_decode(codes[i], scale);
        }
    }
    const float scale = 1.0f / sqrtf((float)d);
    for (int i = 0; i < nq; i++) {
        float m = -INFINITY;
        for (int j = 0; j < nk; j++) {
            float s = 0.0f;
            for (int b = 0; b < d / 32; b++) {
                double dot = 0.0; /* exact: MXFP4 products and their sums fit a double */
                for (int t = 0; t < 32; t++) dot += (double)qh[i * d + 32 * b + t] * kh[j * d + 32 * b + t];
                s += (float)dot;
            }
            p[j] = s * scale;
            if (p[j] > m) m = p[j];
        }
        for (int j = 0; j < nk; j++) p[j] = expf(p[j] - m);
        float l = 0.0f;
        for (int b = 0; b < kb; b++) {
            uint8_t codes[32], sc;
            mxa_mxfp8_quantize_block(p + 32 * b, 32, codes, &sc);
            for (int t = 0; t < 32; t++) p[32 * b + t] = mxa_mxfp8_decode(codes[t], sc);
        }
        for (int j = 0; j < nk; j++) l += p[j];
        for (int c = 0; c < d; c++) {
            float acc = 0.0f;
            for (int b = 0; b < kb; b++) {
                double dot = 0.0; /* exact: 32 products of E4M3 pairs need at most 41 bits */
                for (int t = 0; t < 32; t++) dot += (double)p[32 * b + t] * vt[c * kb * 32 + 32 * b + t];
                acc += (float)dot;
            }
            o[i * d + c] = acc / l;
        }
        memset(p, 0, sizeof(float) * (size_t)kb * 32);
    }
    free(qh);
    free(kh);
    free(vt);
    free(p);
}

static void test_reference_single_tile(void **state)
{
    (void)state;
    enum { NQ = 5, NK = 70, D = 64 };
    float q[NQ * D], k[NK * D], v[NK * D], o[NQ * D], want[NQ * D], o4[NQ * D];
    tu_rng rng = {2026};
    tu_fill_attention(&rng, q, k, v, 1, 1, 1, NQ, NK, D);
    mxa_tensor tq = tu_tensor(q, 1, 1, NQ, D), tk = tu_tensor(k, 1, 1, NK, D), tv = tu_tensor(v, 1, 1, NK, D),
               to = tu_tensor(o, 1, 1, NQ, D), to4 = tu_tensor(o4, 1, 1, NQ, D);
    mxa_attention_desc d = fp8pv();
    assert_int_equal(mxa_reference_attention(&d, 96, &tq, &tk, &tv, &to, NULL, NULL), MXA_OK);
    single_tile(q, k, v, NQ, NK, D, want);
    assert_memory_equal(o, want, sizeof o);
    /* and it is not the MXFP4 P V */
    d.pv_format = MXA_PV_MXFP4;
    assert_int_equal(mxa_reference_attention(&d, 96, &tq, &tk, &tv, &to4, NULL, NULL), MXA_OK);
    assert_true(tu_nmse(o4, want, NQ * D) > 1e-6);
}

/* PNQ with MXFP8 P: V = 1 gives O = 1 (the row sum is that of P^); direct placement does not. */
static void test_pnq_row_sums(void **state)
{
    (void)state;
    enum { NQ = 40, NK = 300, D = 32 };
    float *q = malloc(sizeof(float) * NQ * D), *k = malloc(sizeof(float) * NK * D), *v = malloc(sizeof(float) * NK * D);
    float o[NQ * D], rows[NQ];
    tu_rng rng = {5};
    tu_fill_attention(&rng, q, k, v, 1, 1, 1, NQ, NK, D);
    for (int i = 0; i < NK * D; i++) v[i] = 1.0f;
    mxa_tensor tq = tu_tensor(q, 1, 1, NQ, D), tk = tu_tensor(k, 1, 1, NK, D), tv = tu_tensor(v, 1, 1, NK, D),
               to = tu_tensor(o, 1, 1, NQ, D);
    mxa_attention_desc d = fp8pv();
    d.causal = MXA_CAUSAL_BOTTOM_RIGHT;
    assert_int_equal(mxa_reference_attention(&d, 64, &tq, &tk, &tv, &to, NULL, rows), MXA_OK);
    for (int i = 0; i < NQ * D; i++) assert_true(fabsf(o[i] - 1.0f) <= 1e-6f);
    d.placement = MXA_PLACEMENT_DIRECT;
    assert_int_equal(mxa_reference_attention(&d, 64, &tq, &tk, &tv, &to, NULL, rows), MXA_OK);
    double worst = 0.0;
    for (int i = 0; i < NQ; i++) worst = fmax(worst, fabs(rows[i] - 1.0));
    print_message("direct placement, MXFP8 P: max |row sum - 1| = %.3e\n", worst);
    assert_true(worst > 1e-4);
    free(q);
    free(k);
    free(v);
}

/* P and V in MXFP8 leave less error than in MXFP4 (the measurement, here on
 * the tests' attention-like data). */
static void test_accuracy(void **state)
{
    (void)state;
    enum { H = 4, N = 256, D = 64 };
    const int64_t n = (int64_t)H * N * D;
    float *q = malloc(sizeof(float) * n), *k = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * n);
    float *ref = malloc(sizeof(float) * n), *o4 = malloc(sizeof(float) * n), *o8 = malloc(sizeof(float) * n);
    tu_rng rng = {77};
    tu_fill_attention(&rng, q, k, v, 1, H, H, N, N, D);
    mxa_tensor tq = tu_tensor(q, 1, H, N, D), tk = tu_tensor(k, 1, H, N, D), tv = tu_tensor(v, 1, H, N, D);
    mxa_tensor tr = tu_tensor(ref, 1, H, N, D), t4 = tu_tensor(o4, 1, H, N, D), t8 = tu_tensor(o8, 1, H, N, D);
    mxa_attention_desc d;
    mxa_attention_desc_init(&d, MXA_RECIPE_FP32);
    assert_int_equal(mxa_reference_attention(&d, 64, &tq, &tk, &tv, &tr, NULL, NULL), MXA_OK);
    mxa_attention_desc_init(&d, MXA_RECIPE_MXATTENTION);
    assert_int_equal(mxa_reference_attention(&d, 64, &tq, &tk, &tv, &t4, NULL, NULL), MXA_OK);
    d = fp8pv();
    assert_int_equal(mxa_reference_attention(&d, 64, &tq, &tk, &tv, &t8, NULL, NULL), MXA_OK);
    const double e4 = tu_nmse(o4, ref, n), e8 = tu_nmse(o8, ref, n);
    print_message("NMSE vs fp32: mxattention %.3e, mxattention-fp8pv %.3e\n", e4, e8);
    assert_true(e8 < 0.8 * e4);
    free(q); free(k); free(v); free(ref); free(o4); free(o8);
}

/* ----------------------------------------------------- the CPU device */

typedef struct cfg {
    int b, h, hkv, nq, nk, d, bc, causal;
    uint32_t quantize;
    mxa_placement placement;
    int lengths;
} cfg;

static const char *isa_env[] = {"portable", "avx2", "avx512", "amx"};

static void cpu_case(const cfg *c, int isa)
{
    const int64_t nqe = (int64_t)c->b * c->h * c->nq * c->d, nke = (int64_t)c->b * c->hkv * c->nk * c->d;
    float *q = malloc(sizeof(float) * nqe), *k = malloc(sizeof(float) * nke), *v = malloc(sizeof(float) * nke);
    float *o = malloc(sizeof(float) * nqe), *r = malloc(sizeof(float) * nqe);
    const int64_t rows = (int64_t)c->b * c->h * c->nq;
    float *lse = malloc(sizeof(float) * rows), *rlse = malloc(sizeof(float) * rows);
    tu_rng rng = {(uint64_t)(c->nk * 31 + c->d + c->causal)};
    tu_fill_attention(&rng, q, k, v, c->b, c->h, c->hkv, c->nq, c->nk, c->d);
    int32_t lengths[4] = {c->nk, c->nk / 2 + 3, 0, c->nk - 1};
    mxa_attention_desc d = fp8pv();
    d.causal = c->causal;
    d.bc = c->bc;
    d.quantize = c->quantize;
    d.placement = c->placement;
    if (c->lengths) d.key_lengths = lengths;
    mxa_tensor tq = tu_tensor(q, c->b, c->h, c->nq, c->d), tk = tu_tensor(k, c->b, c->hkv, c->nk, c->d),
               tv = tu_tensor(v, c->b, c->hkv, c->nk, c->d), to = tu_tensor(o, c->b, c->h, c->nq, c->d),
               tr = tu_tensor(r, c->b, c->h, c->nq, c->d), tl = tu_tensor(lse, c->b, c->h, c->nq, 1),
               trl = tu_tensor(rlse, c->b, c->h, c->nq, 1);
    setenv("MXA_CPU_ISA", isa_env[isa], 1);
    mxa_runtime *rt;
    mxa_device *dev;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "cpu", &dev), MXA_OK);
    mxa_attention_info info;
    assert_int_equal(mxa_attention(dev, &d, &tq, &tk, &tv, &to, &tl, &info), MXA_OK);
    assert_int_equal(mxa_reference_attention(&d, c->bc, &tq, &tk, &tv, &tr, &trl, NULL), MXA_OK);
    /* the exp of the vector paths differs from libm's by ulps, which can move a P^ code */
    const double nmse = tu_nmse(o, r, nqe), limit = isa == 0 ? 1e-12 : 1e-6;
    if (nmse > limit)
        print_message("isa %s b%d h%d/%d nq%d nk%d d%d bc%d causal %d quantize %u placement %d lengths %d: NMSE %.3e\n",
                      isa_env[isa], c->b, c->h, c->hkv, c->nq, c->nk, c->d, c->bc, c->causal, c->quantize,
                      c->placement, c->lengths, nmse);
    assert_true(nmse <= limit);
    for (int64_t i = 0; i < rows; i++)
        assert_true(lse[i] == rlse[i] || fabsf(lse[i] - rlse[i]) <= 1e-5f * (1 + fabsf(rlse[i])));
    /* and it differs from the MXFP4 P V the device runs otherwise */
    if ((c->quantize & MXA_QUANT_P) && (c->quantize & MXA_QUANT_V)) {
        d.pv_format = MXA_PV_MXFP4;
        assert_int_equal(mxa_attention(dev, &d, &tq, &tk, &tv, &tr, NULL, NULL), MXA_OK);
        assert_true(tu_nmse(r, o, nqe) > 1e-6);
    }
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    free(q); free(k); free(v); free(o); free(r); free(lse); free(rlse);
}

static void test_cpu_device(void **state)
{
    (void)state;
    const cfg cases[] = {
        {1, 2, 2, 37, 70, 64, 64, MXA_CAUSAL_NONE, MXA_QUANT_ALL, MXA_PLACEMENT_PNQ, 0},
        {2, 4, 2, 64, 200, 32, 128, MXA_CAUSAL_BOTTOM_RIGHT, MXA_QUANT_ALL, MXA_PLACEMENT_PNQ, 0},
        {2, 2, 1, 50, 96, 128, 64, MXA_CAUSAL_TOP_LEFT, MXA_QUANT_ALL, MXA_PLACEMENT_PNQ, 1},
        {1, 2, 2, 33, 130, 64, 64, MXA_CAUSAL_NONE, MXA_QUANT_ALL, MXA_PLACEMENT_DIRECT, 0},
        {1, 2, 2, 33, 130, 64, 64, MXA_CAUSAL_BOTTOM_RIGHT, MXA_QUANT_QK | MXA_QUANT_P, MXA_PLACEMENT_PNQ, 0},
        {1, 2, 2, 33, 130, 64, 64, MXA_CAUSAL_NONE, MXA_QUANT_V, MXA_PLACEMENT_PNQ, 0},
        {1, 1, 1, 16, 300, 256, 256, MXA_CAUSAL_NONE, MXA_QUANT_ALL, MXA_PLACEMENT_PNQ, 0},
    };
    int ran = 0;
    for (int isa = 0; isa < CPU_ISA_COUNT; isa++) {
        if (!cpu_isa_supported((cpu_isa)isa)) continue;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) cpu_case(&cases[i], isa);
        ran++;
    }
    print_message("ISAs run: %d\n", ran);
    unsetenv("MXA_CPU_ISA");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recipe),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_reference_single_tile),
        cmocka_unit_test(test_pnq_row_sums),
        cmocka_unit_test(test_accuracy),
        cmocka_unit_test(test_cpu_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
