/*
 * The reference MXAttention (and the CPU device) against SPEC §2: fp32 vs a
 * float64 naive attention, the invariants, causal, GQA, tails, LSE, dtypes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/mxfp4.h"
#include "runtime/tensor.h"
#include "testutil.h"

typedef struct problem {
    int64_t b, h, hkv, nq, nk, d;
    float *q, *k, *v, *o, *lse;
} problem;

static problem make(uint64_t seed, int64_t b, int64_t h, int64_t hkv, int64_t nq, int64_t nk, int64_t d)
{
    problem p = {b, h, hkv, nq, nk, d, NULL, NULL, NULL, NULL, NULL};
    p.q = malloc((size_t)(b * h * nq * d) * sizeof(float));
    p.k = malloc((size_t)(b * hkv * nk * d) * sizeof(float));
    p.v = malloc((size_t)(b * hkv * nk * d) * sizeof(float));
    p.o = malloc((size_t)(b * h * nq * d) * sizeof(float));
    p.lse = malloc((size_t)(b * h * nq) * sizeof(float));
    assert_non_null(p.q);
    tu_rng rng = {seed};
    tu_fill_attention(&rng, p.q, p.k, p.v, b, h, hkv, nq, nk, d);
    return p;
}

static void drop(problem *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->o);
    free(p->lse);
}

/* Runs the reference; out/lse default to the problem's buffers. */
static mxa_status run_ref(problem *p, const mxa_attention_desc *desc, int bc, float *out, float *lse, float *rows)
{
    mxa_tensor q = tu_tensor(p->q, p->b, p->h, p->nq, p->d), k = tu_tensor(p->k, p->b, p->hkv, p->nk, p->d),
               v = tu_tensor(p->v, p->b, p->hkv, p->nk, p->d), o = tu_tensor(out ? out : p->o, p->b, p->h, p->nq, p->d),
               l = tu_tensor(lse ? lse : p->lse, p->b, p->h, p->nq, 1);
    return mxa_reference_attention(desc, bc, &q, &k, &v, &o, &l, rows);
}

/* float64 naive attention with bottom-right causal masking. */
static void naive(const problem *p, int causal, float scale, double *out, double *lse)
{
    const int64_t d = p->d, group = p->h / p->hkv;
    double *s = malloc((size_t)p->nk * sizeof(double));
    for (int64_t b = 0; b < p->b; b++)
        for (int64_t h = 0; h < p->h; h++)
            for (int64_t i = 0; i < p->nq; i++) {
                const float *qi = p->q + ((b * p->h + h) * p->nq + i) * d;
                const float *kh = p->k + ((b * p->hkv + h / group) * p->nk) * d;
                const float *vh = p->v + ((b * p->hkv + h / group) * p->nk) * d;
                double *oi = out + ((b * p->h + h) * p->nq + i) * d;
                double m = -INFINITY;
                for (int64_t j = 0; j < p->nk; j++) {
                    if (causal && j > i + p->nk - p->nq) {
                        s[j] = -INFINITY;
                        continue;
                    }
                    double dot = 0;
                    for (int64_t c = 0; c < d; c++) dot += (double)qi[c] * kh[j * d + c];
                    s[j] = dot * scale;
                    if (s[j] > m) m = s[j];
                }
                double l = 0;
                for (int64_t c = 0; c < d; c++) oi[c] = 0;
                if (m == -INFINITY) {
                    lse[(b * p->h + h) * p->nq + i] = -INFINITY;
                    continue;
                }
                for (int64_t j = 0; j < p->nk; j++) {
                    double e = exp(s[j] - m);
                    l += e;
                    for (int64_t c = 0; c < d; c++) oi[c] += e * vh[j * d + c];
                }
                for (int64_t c = 0; c < d; c++) oi[c] /= l;
                lse[(b * p->h + h) * p->nq + i] = m + log(l);
            }
    free(s);
}

static mxa_attention_desc recipe(mxa_recipe r, int causal)
{
    mxa_attention_desc desc;
    assert_int_equal(mxa_attention_desc_init(&desc, r), MXA_OK);
    desc.causal = causal;
    return desc;
}

/* fp32 recipe vs float64: NMSE <= 1e-10, LSE to 1e-5, over causal/GQA/tails. */
static void test_fp32_matches_float64(void **state)
{
    (void)state;
    const int64_t shapes[][6] = {{1, 2, 2, 64, 64, 64},  {2, 4, 2, 33, 100, 32}, {1, 2, 1, 100, 37, 128},
                                 {1, 1, 1, 1, 1, 64},    {1, 2, 2, 5, 1000, 64}, {1, 1, 1, 70, 31, 256}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int causal = 0; causal < 2; causal++) {
            const int64_t *s = shapes[si];
            problem p = make(100 + si, s[0], s[1], s[2], s[3], s[4], s[5]);
            mxa_attention_desc desc = recipe(MXA_RECIPE_FP32, causal);
            assert_int_equal(run_ref(&p, &desc, 64, NULL, NULL, NULL), MXA_OK);
            int64_t n = p.b * p.h * p.nq * p.d, rows = p.b * p.h * p.nq;
            double *ref = malloc((size_t)n * sizeof(double)), *lse = malloc((size_t)rows * sizeof(double));
            float *reff = malloc((size_t)n * sizeof(float));
            naive(&p, causal, (float)(1.0 / sqrt((double)p.d)), ref, lse);
            for (int64_t i = 0; i < n; i++) reff[i] = (float)ref[i];
            double nmse = tu_nmse(p.o, reff, n);
            assert_true(nmse <= 1e-10);
            for (int64_t r = 0; r < rows; r++) {
                if (isinf(lse[r])) {
                    assert_true(isinf(p.lse[r]) && p.lse[r] < 0);
                    for (int64_t c = 0; c < p.d; c++) assert_true(p.o[r * p.d + c] == 0.0f);
                } else {
                    assert_true(fabs(p.lse[r] - lse[r]) <= 1e-5 * (1 + fabs(lse[r])));
                }
            }
            free(ref);
            free(lse);
            free(reff);
            drop(&p);
        }
}

/* PNQ with V = ones gives 1 in every row; direct placement does not. */
static void test_pnq_normalisation(void **state)
{
    (void)state;
    problem p = make(7, 1, 4, 4, 96, 300, 128);
    for (int64_t i = 0; i < p.b * p.hkv * p.nk * p.d; i++) p.v[i] = 1.0f;
    for (int causal = 0; causal < 2; causal++) {
        mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, causal);
        float *rows = malloc((size_t)(p.b * p.h * p.nq) * sizeof(float));
        assert_int_equal(run_ref(&p, &desc, 64, NULL, NULL, rows), MXA_OK);
        for (int64_t i = 0; i < p.b * p.h * p.nq * p.d; i++) assert_true(fabsf(p.o[i] - 1.0f) <= 1e-6f);
        for (int64_t r = 0; r < p.b * p.h * p.nq; r++) assert_true(rows[r] == 1.0f);

        desc.placement = MXA_PLACEMENT_DIRECT;
        assert_int_equal(run_ref(&p, &desc, 64, NULL, NULL, rows), MXA_OK);
        double worst = 0;
        for (int64_t i = 0; i < p.b * p.h * p.nq * p.d; i++) worst = fmax(worst, fabs(p.o[i] - 1.0));
        assert_true(worst > 1e-3); /* direct placement leaves a row-dependent scale error */
        /* the row sums reported are exactly what the output shows for V = ones */
        for (int64_t r = 0; r < p.b * p.h * p.nq; r++) assert_true(fabsf(rows[r] - p.o[r * p.d]) <= 1e-6f);
        free(rows);
    }
    drop(&p);
}

/* App. J: in the tile holding the row maximum, exp(0) = 1 quantizes to exactly 1
 * under UOS (and every rule in [6, 8]), so l >= 1. */
static void test_row_max_is_exact(void **state)
{
    (void)state;
    tu_rng rng = {11};
    const mxa_rule rules[] = {mxa_rule_uos(), mxa_rule_tfs(), mxa_rule_ocp(), {MXA_RULE_CEIL, 7.9f}};
    for (int t = 0; t < 20000; t++) {
        float block[32];
        int at = (int)(tu_next(&rng) % 32);
        for (int i = 0; i < 32; i++) block[i] = i == at ? 1.0f : expf(-(float)(8.0 * tu_uniform(&rng)));
        for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
            float x[32];
            memcpy(x, block, sizeof x);
            mxa_fake_quantize_block(x, 32, rules[r]);
            assert_true(x[at] == 1.0f);
        }
    }
    /* the ceiling rule at q = 8 is the exception: 1 = 8 * 2^-3 saturates to 0.75 */
    float one[32] = {1.0f};
    mxa_fake_quantize_block(one, 32, (mxa_rule){MXA_RULE_CEIL, 8.0f});
    assert_true(one[0] == 0.75f);
}

/* Permuting batch and heads permutes the output identically (bit for bit). */
static void test_permutation(void **state)
{
    (void)state;
    problem p = make(21, 2, 3, 3, 40, 90, 64);
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 1);
    assert_int_equal(run_ref(&p, &desc, 64, NULL, NULL, NULL), MXA_OK);
    const int64_t per_q = p.nq * p.d, per_kv = p.nk * p.d, heads = p.b * p.h;
    problem r = p;
    r.q = malloc((size_t)(heads * per_q) * 4);
    r.k = malloc((size_t)(heads * per_kv) * 4);
    r.v = malloc((size_t)(heads * per_kv) * 4);
    r.o = malloc((size_t)(heads * per_q) * 4);
    r.lse = malloc((size_t)(heads * p.nq) * 4);
    for (int64_t i = 0; i < heads; i++) { /* reverse the flattened (batch, head) order */
        int64_t j = heads - 1 - i;
        memcpy(r.q + j * per_q, p.q + i * per_q, (size_t)per_q * 4);
        memcpy(r.k + j * per_kv, p.k + i * per_kv, (size_t)per_kv * 4);
        memcpy(r.v + j * per_kv, p.v + i * per_kv, (size_t)per_kv * 4);
    }
    assert_int_equal(run_ref(&r, &desc, 64, NULL, NULL, NULL), MXA_OK);
    for (int64_t i = 0; i < heads; i++)
        assert_memory_equal(r.o + (heads - 1 - i) * per_q, p.o + i * per_q, (size_t)per_q * 4);
    drop(&r);
    drop(&p);
}

/* With every quantizer off, Hadamard on or off, the result is fp32 attention. */
static void test_quantizers_off(void **state)
{
    (void)state;
    problem p = make(5, 1, 2, 2, 50, 77, 128);
    float *ref = malloc((size_t)(p.h * p.nq * p.d) * 4);
    mxa_attention_desc fp = recipe(MXA_RECIPE_FP32, 0);
    assert_int_equal(run_ref(&p, &fp, 64, ref, NULL, NULL), MXA_OK);
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 0);
    desc.quantize = 0;
    assert_int_equal(run_ref(&p, &desc, 64, NULL, NULL, NULL), MXA_OK);
    assert_true(tu_nmse(p.o, ref, p.h * p.nq * p.d) < 1e-11);
    desc.hadamard = 0;
    assert_int_equal(run_ref(&p, &desc, 64, NULL, NULL, NULL), MXA_OK);
    assert_memory_equal(p.o, ref, (size_t)(p.h * p.nq * p.d) * 4);
    free(ref);
    drop(&p);
}

/* Every recipe on attention-like data: finite, close to fp32, MXAttention
 * closer than OCP-direct; causal, GQA and tails Nk = 1, 31, 33, 1000. */
static void test_recipes_and_tails(void **state)
{
    (void)state;
    const int64_t nks[] = {1, 31, 33, 1000};
    for (size_t t = 0; t < 4; t++)
        for (int causal = 0; causal < 2; causal++) {
            problem p = make(300 + t, 1, 4, 2, 48, nks[t], 128);
            const int64_t n = p.h * p.nq * p.d;
            float *ref = malloc((size_t)n * 4), *mx = malloc((size_t)n * 4), *ocp = malloc((size_t)n * 4);
            mxa_attention_desc d_fp = recipe(MXA_RECIPE_FP32, causal), d_mx = recipe(MXA_RECIPE_MXATTENTION, causal),
                               d_ocp = recipe(MXA_RECIPE_OCP_DIRECT, causal);
            assert_int_equal(run_ref(&p, &d_fp, 64, ref, NULL, NULL), MXA_OK);
            assert_int_equal(run_ref(&p, &d_mx, 64, mx, NULL, NULL), MXA_OK);
            assert_int_equal(run_ref(&p, &d_ocp, 64, ocp, NULL, NULL), MXA_OK);
            for (int64_t i = 0; i < n; i++) assert_true(isfinite(mx[i]) && isfinite(ocp[i]));
            double e_mx = tu_nmse(mx, ref, n), e_ocp = tu_nmse(ocp, ref, n);
            print_message("nk=%lld causal=%d nmse mxattention %.3e ocp-direct %.3e\n", (long long)nks[t], causal, e_mx, e_ocp);
            assert_true(e_mx < 0.03);
            assert_true(e_ocp < 0.1);
            if (nks[t] >= 33) assert_true(e_mx < e_ocp);
            free(ref);
            free(mx);
            free(ocp);
            drop(&p);
        }
}

/* Results are deterministic for a Bc and depend on it only through P^. */
static void test_bc(void **state)
{
    (void)state;
    problem p = make(9, 1, 2, 2, 20, 200, 64);
    const int64_t n = p.h * p.nq * p.d;
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 0);
    assert_int_equal(run_ref(&p, &desc, 32, a, NULL, NULL), MXA_OK);
    assert_int_equal(run_ref(&p, &desc, 32, b, NULL, NULL), MXA_OK);
    assert_memory_equal(a, b, (size_t)n * 4);
    assert_int_equal(run_ref(&p, &desc, 128, b, NULL, NULL), MXA_OK);
    assert_true(memcmp(a, b, (size_t)n * 4) != 0); /* P^ is relative to the running max */
    assert_true(tu_nmse(a, b, n) < 1e-2);
    desc = recipe(MXA_RECIPE_FP32, 0); /* fp32 depends on Bc only through rounding */
    assert_int_equal(run_ref(&p, &desc, 32, a, NULL, NULL), MXA_OK);
    assert_int_equal(run_ref(&p, &desc, 4096, b, NULL, NULL), MXA_OK);
    assert_true(tu_nmse(a, b, n) < 1e-12);
    free(a);
    free(b);
    drop(&p);
}

/* f16/bf16 inputs and outputs and strided views go through the same numerics. */
static void test_dtypes_and_strides(void **state)
{
    (void)state;
    problem p = make(13, 1, 2, 2, 16, 40, 64);
    const int64_t nq = p.h * p.nq * p.d, nkv = p.hkv * p.nk * p.d;
    /* round inputs to f16 first so both runs see the same values */
    uint16_t *q16 = malloc((size_t)nq * 2), *k16 = malloc((size_t)nkv * 2), *v16 = malloc((size_t)nkv * 2);
    for (int64_t i = 0; i < nq; i++) p.q[i] = mxa_f16_to_f32(q16[i] = mxa_f32_to_f16(p.q[i]));
    for (int64_t i = 0; i < nkv; i++) p.k[i] = mxa_f16_to_f32(k16[i] = mxa_f32_to_f16(p.k[i]));
    for (int64_t i = 0; i < nkv; i++) p.v[i] = mxa_f16_to_f32(v16[i] = mxa_f32_to_f16(p.v[i]));
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 1);
    assert_int_equal(run_ref(&p, &desc, 64, NULL, NULL, NULL), MXA_OK);

    mxa_tensor q, k, v, o;
    mxa_tensor_init(&q, MXA_F16, 1, p.h, p.nq, p.d, q16);
    mxa_tensor_init(&k, MXA_F16, 1, p.hkv, p.nk, p.d, k16);
    mxa_tensor_init(&v, MXA_F16, 1, p.hkv, p.nk, p.d, v16);
    uint16_t *o16 = malloc((size_t)nq * 2);
    mxa_tensor_init(&o, MXA_BF16, 1, p.h, p.nq, p.d, o16);
    assert_int_equal(mxa_reference_attention(&desc, 64, &q, &k, &v, &o, NULL, NULL), MXA_OK);
    for (int64_t i = 0; i < nq; i++) assert_true(mxa_bf16_to_f32(o16[i]) == mxa_bf16_to_f32(mxa_f32_to_bf16(p.o[i])));

    /* q as a transposed view: memory [N, H, D], viewed as [1, H, N, D] */
    float *qt = malloc((size_t)nq * 4), *o2 = malloc((size_t)nq * 4);
    for (int64_t h = 0; h < p.h; h++)
        for (int64_t i = 0; i < p.nq; i++)
            memcpy(qt + (i * p.h + h) * p.d, p.q + (h * p.nq + i) * p.d, (size_t)p.d * 4);
    mxa_tensor_init(&q, MXA_F32, 1, p.h, p.nq, p.d, qt);
    q.strides[0] = nq; q.strides[1] = p.d; q.strides[2] = p.h * p.d; q.strides[3] = 1;
    k = tu_tensor(p.k, 1, p.hkv, p.nk, p.d);
    v = tu_tensor(p.v, 1, p.hkv, p.nk, p.d);
    o = tu_tensor(o2, 1, p.h, p.nq, p.d);
    assert_int_equal(mxa_reference_attention(&desc, 64, &q, &k, &v, &o, NULL, NULL), MXA_OK);
    assert_memory_equal(o2, p.o, (size_t)nq * 4);
    free(q16); free(k16); free(v16); free(o16); free(qt); free(o2);
    drop(&p);
}

/* The half-precision conversions round to nearest even, like hardware. */
static void test_half_conversions(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = mxa_f16_to_f32((uint16_t)h);
        if (isnan(f)) continue;
        assert_int_equal(mxa_f32_to_f16(f), h); /* round trip */
        assert_int_equal(mxa_f32_to_bf16(mxa_bf16_to_f32((uint16_t)h)), isnan(mxa_bf16_to_f32((uint16_t)h)) ? mxa_f32_to_bf16(mxa_bf16_to_f32((uint16_t)h)) : h);
    }
    assert_int_equal(mxa_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);          /* tie -> even */
    assert_int_equal(mxa_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);      /* tie -> even */
    assert_int_equal(mxa_f32_to_f16(65520.0f), 0x7c00);                 /* overflow */
    assert_int_equal(mxa_f32_to_f16(0x1p-25f), 0x0000);                 /* tie below min subnormal */
    assert_int_equal(mxa_f32_to_f16(0x1.8p-25f), 0x0001);
    assert_int_equal(mxa_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(mxa_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
}

/* The CPU device runs the same numerics through the public entry point. */
static void test_cpu_device_lse_and_bc(void **state)
{
    (void)state;
    mxa_runtime *rt;
    mxa_device *dev;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "cpu", &dev), MXA_OK);
    problem p = make(17, 1, 2, 1, 30, 130, 64);
    const int64_t n = p.h * p.nq * p.d, rows = p.h * p.nq;
    float *o = malloc((size_t)n * 4), *lse = malloc((size_t)rows * 4);
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 1);
    mxa_tensor q = tu_tensor(p.q, 1, p.h, p.nq, p.d), k = tu_tensor(p.k, 1, p.hkv, p.nk, p.d),
               v = tu_tensor(p.v, 1, p.hkv, p.nk, p.d), to = tu_tensor(o, 1, p.h, p.nq, p.d),
               tl = tu_tensor(lse, 1, p.h, p.nq, 1);
    mxa_attention_info info;
    assert_int_equal(mxa_attention(dev, &desc, &q, &k, &v, &to, &tl, &info), MXA_OK);
    assert_true(info.bc > 0 && info.bc % 32 == 0);
    assert_true(strlen(info.variant) > 0);
    assert_int_equal(run_ref(&p, &desc, info.bc, NULL, NULL, NULL), MXA_OK);
    assert_true(tu_nmse(o, p.o, n) < 1e-6);
    for (int64_t r = 0; r < rows; r++) assert_true(fabsf(lse[r] - p.lse[r]) <= 1e-4f * (1 + fabsf(p.lse[r])));
    free(o);
    free(lse);
    drop(&p);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp32_matches_float64), cmocka_unit_test(test_pnq_normalisation),
        cmocka_unit_test(test_row_max_is_exact),     cmocka_unit_test(test_permutation),
        cmocka_unit_test(test_quantizers_off),       cmocka_unit_test(test_recipes_and_tails),
        cmocka_unit_test(test_bc),                   cmocka_unit_test(test_dtypes_and_strides),
        cmocka_unit_test(test_half_conversions),     cmocka_unit_test(test_cpu_device_lse_and_bc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
