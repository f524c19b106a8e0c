/*
 * End to end through the real HIP backend, with the test double running the
 * real kernel sources on the host emulator (tests/hip/emu): every variant's
 * output against the reference MXAttention with the same recipe and Bc.
 * scalar and int8-MFMA: bit-exact (same fp32 operations in the same order,
 * and the emulator's expf is the reference's). gfx950 scaled MFMA: the
 * instruction sums two blocks before adding, so only NMSE-close.
 * What this cannot show: that real AMD hardware matches the emulator's model
 * of the MFMA operand layouts (no AMD GPU was available).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_fake_util.h"
#include "runtime/tensor.h"
#include "testutil.h"

enum { B = 2, H = 4, HKV = 2, NQ = 37, NK = 70, DMAX = 128 };

static float q[B * H * NQ * DMAX], k[B * HKV * NK * DMAX], v[B * HKV * NK * DMAX];
static float o_hip[B * H * NQ * DMAX], o_ref[B * H * NQ * DMAX], l_hip[B * H * NQ], l_ref[B * H * NQ];

static void emulate(const char *arch, const char *kernel)
{
    use_fake(FAKE_HIP_EMU_PATH);
    setenv("MXA_HIPRTC_LIBRARY", FAKE_HIP_EMU_PATH, 1);
    setenv("FAKE_HIP_EMULATE", "1", 1);
    setenv("FAKE_HIP_ARCH", arch, 1);
    if (kernel) setenv("MXA_KERNEL", kernel, 1);
}

/* Runs one case on hip:0 and the reference; returns the NMSE of O (LSE checked alike). */
static double run_case(mxa_recipe recipe, int causal, int bc, int d, const char *variant)
{
    tu_rng rng = {(uint64_t)(1000 + d + bc + causal)};
    tu_fill_attention(&rng, q, k, v, B, H, HKV, NQ, NK, d);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, recipe);
    desc.causal = causal;
    desc.bc = bc;
    mxa_tensor tq, tk, tv, to, tl, ro, rl;
    mxa_tensor_init(&tq, MXA_F32, B, H, NQ, d, q);
    mxa_tensor_init(&tk, MXA_F32, B, HKV, NK, d, k);
    mxa_tensor_init(&tv, MXA_F32, B, HKV, NK, d, v);
    mxa_tensor_init(&to, MXA_F32, B, H, NQ, d, o_hip);
    mxa_tensor_init(&tl, MXA_F32, B, H, NQ, 1, l_hip);
    mxa_tensor_init(&ro, MXA_F32, B, H, NQ, d, o_ref);
    mxa_tensor_init(&rl, MXA_F32, B, H, NQ, 1, l_ref);
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_attention_info info;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "hip:0", &dev), MXA_OK);
    mxa_status st = mxa_attention(dev, &desc, &tq, &tk, &tv, &to, &tl, &info);
    if (st) fail_msg("hip attention: %s", mxa_last_error_message());
    assert_string_equal(info.variant, variant);
    assert_int_equal(mxa_reference_attention(&desc, bc, &tq, &tk, &tv, &ro, &rl, NULL), MXA_OK);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    const int64_t n = (int64_t)B * H * NQ * d;
    for (int i = 0; i < B * H * NQ; i++) assert_true(isfinite(l_ref[i]) == isfinite(l_hip[i]));
    return tu_nmse(o_hip, o_ref, n);
}

/* Bit-for-bit equality of O and LSE. */
static void expect_exact(int d)
{
    const int64_t n = (int64_t)B * H * NQ * d;
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&o_hip[i], &o_ref[i], 4) != 0) fail_msg("O[%lld]: %.9g vs reference %.9g", (long long)i, o_hip[i], o_ref[i]);
    for (int i = 0; i < B * H * NQ; i++)
        if (memcmp(&l_hip[i], &l_ref[i], 4) != 0) fail_msg("LSE[%d]: %.9g vs reference %.9g", i, l_hip[i], l_ref[i]);
}

static void test_scalar(void **state)
{
    (void)state;
    emulate("gfx942", "hip-scalar");
    run_case(MXA_RECIPE_MXATTENTION, 1, 64, 64, "hip-scalar");
    expect_exact(64);
    run_case(MXA_RECIPE_OCP_DIRECT, 0, 96, 64, "hip-scalar");
    expect_exact(64);
    run_case(MXA_RECIPE_FP32, 1, 64, 64, "hip-scalar");
    expect_exact(64);
    run_case(MXA_RECIPE_MXATTENTION, 0, 32, 32, "hip-scalar");
    expect_exact(32);
}

static void test_mfma_i8(void **state)
{
    (void)state;
    emulate("gfx942:sramecc+:xnack-", NULL);
    run_case(MXA_RECIPE_MXATTENTION, 1, 64, 64, "hip-mfma-i8");
    expect_exact(64);
    run_case(MXA_RECIPE_OCP_DIRECT, 0, 64, 64, "hip-mfma-i8");
    expect_exact(64);
    run_case(MXA_RECIPE_MXATTENTION, 1, 128, 128, "hip-mfma-i8");
    expect_exact(128);
    emulate("gfx90a", NULL); /* K = 8 */
    run_case(MXA_RECIPE_MXATTENTION, 1, 64, 64, "hip-mfma-i8");
    expect_exact(64);
}

static void test_mfma_fp4(void **state)
{
    (void)state;
    emulate("gfx950", NULL);
    double e = run_case(MXA_RECIPE_MXATTENTION, 1, 64, 64, "hip-mfma-fp4");
    if (e > 1e-12) fail_msg("gfx950 D=64 causal: NMSE %g", e);
    e = run_case(MXA_RECIPE_OCP_DIRECT, 0, 96, 64, "hip-mfma-fp4"); /* an odd number of key blocks per tile */
    if (e > 1e-12) fail_msg("gfx950 bc=96: NMSE %g", e);
    e = run_case(MXA_RECIPE_MXATTENTION, 0, 32, 32, "hip-mfma-fp4"); /* one D block: half an instruction */
    if (e > 1e-12) fail_msg("gfx950 D=32: NMSE %g", e);
}

/* ---- the optional inputs of docs/attention-inputs.md, 16-bit outputs, lse in a buffer */

static float bias[H * NQ * NK];
static uint8_t mask[B * NQ * NK];
static uint16_t o16[B * H * NQ * DMAX];

/* One extras case: bias [1, H, NQ, NK] (a few -inf), mask [B, 1, NQ, NK], key lengths, causal. */
typedef struct extras_case {
    int use_bias, use_mask, causal;
    int32_t lengths[B]; /* {-1, ..}: no key lengths */
} extras_case;

static void fill_extras(uint64_t seed, int d, const extras_case *c)
{
    tu_rng rng = {seed};
    tu_fill_attention(&rng, q, k, v, B, H, HKV, NQ, NK, d);
    for (int i = 0; i < B * HKV * NK * d; i++) /* columns whose outputs are f16 subnormals */
        if (i % d % 8 == 3) v[i] *= 1e-6f;
        else if (i % d % 8 == 5) v[i] *= 3e-5f;
    tu_fill_normal(&rng, bias, H * NQ * NK, 2.0f);
    for (int i = 0; i < H * NQ * NK; i += 37) bias[i] = -INFINITY;
    for (int i = 0; i < B * NQ * NK; i++) mask[i] = tu_uniform(&rng) > 0.2;
    for (int j = 0; j < NK; j++) mask[(1 * NQ + 5) * NK + j] = 0; /* batch 1, row 5 sees nothing */
    if (c->lengths[0] >= 0) /* padding tokens hold what would dominate a block were they quantized with it */
        for (int bb = 0; bb < B; bb++)
            for (int hh = 0; hh < HKV; hh++)
                for (int j = c->lengths[bb]; j < NK; j++)
                    for (int e = 0; e < d; e++) k[((bb * HKV + hh) * NK + j) * d + e] = v[((bb * HKV + hh) * NK + j) * d + e] = 1e4f;
}

/* Runs the case on hip:0 (o, lse on the host, or f16/bf16 o and lse in device buffers) and the reference. */
static void run_extras(const extras_case *c, int bc, int d, const char *variant, mxa_dtype o_dtype)
{
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.causal = c->causal;
    desc.bc = bc;
    mxa_tensor tq, tk, tv, to, tl, ro, rl, tb, tm;
    mxa_tensor_init(&tq, MXA_F32, B, H, NQ, d, q);
    mxa_tensor_init(&tk, MXA_F32, B, HKV, NK, d, k);
    mxa_tensor_init(&tv, MXA_F32, B, HKV, NK, d, v);
    mxa_tensor_init(&to, MXA_F32, B, H, NQ, d, o_hip);
    mxa_tensor_init(&tl, MXA_F32, B, H, NQ, 1, l_hip);
    mxa_tensor_init(&ro, MXA_F32, B, H, NQ, d, o_ref);
    mxa_tensor_init(&rl, MXA_F32, B, H, NQ, 1, l_ref);
    mxa_tensor_init(&tb, MXA_F32, 1, H, NQ, NK, bias);
    mxa_tensor_init(&tm, MXA_BOOL, B, 1, NQ, NK, mask);
    desc.bias = c->use_bias ? &tb : NULL;
    desc.mask = c->use_mask ? &tm : NULL;
    desc.key_lengths = c->lengths[0] >= 0 ? c->lengths : NULL;
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_buffer *ob = NULL, *lb = NULL;
    mxa_attention_info info;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "hip:0", &dev), MXA_OK);
    if (o_dtype != MXA_F32) {
        assert_int_equal(mxa_buffer_create(dev, (size_t)(B * H * NQ * d) * 2, &ob), MXA_OK);
        assert_int_equal(mxa_buffer_create(dev, (size_t)(B * H * NQ) * 4, &lb), MXA_OK);
        to.dtype = o_dtype, to.data = NULL, to.buffer = ob;
        tl.data = NULL, tl.buffer = lb;
    }
    if (mxa_attention(dev, &desc, &tq, &tk, &tv, &to, &tl, &info)) fail_msg("hip attention: %s", mxa_last_error_message());
    assert_string_equal(info.variant, variant);
    if (o_dtype != MXA_F32) {
        assert_int_equal(mxa_buffer_download(ob, 0, o16, (size_t)(B * H * NQ * d) * 2), MXA_OK);
        assert_int_equal(mxa_buffer_download(lb, 0, l_hip, sizeof l_hip), MXA_OK);
    }
    mxa_buffer_destroy(ob);
    mxa_buffer_destroy(lb);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    if (mxa_reference_attention(&desc, bc, &tq, &tk, &tv, &ro, &rl, NULL)) fail_msg("reference: %s", mxa_last_error_message());
    for (int i = 0; i < B * H * NQ; i++) assert_true(isfinite(l_ref[i]) == isfinite(l_hip[i]));
}

/* The 16-bit output against the reference's fp32 output rounded once on the host. */
static void expect_half(mxa_dtype dt, int d)
{
    int subnormal = 0;
    for (int64_t i = 0; i < (int64_t)B * H * NQ * d; i++) subnormal += o16[i] && !(o16[i] & 0x7c00);
    if (dt == MXA_F16 && subnormal < 100) fail_msg("only %d f16 subnormals: the case does not test them", subnormal);
    for (int64_t i = 0; i < (int64_t)B * H * NQ * d; i++) {
        const uint16_t want = dt == MXA_F16 ? mxa_f32_to_f16(o_ref[i]) : mxa_f32_to_bf16(o_ref[i]);
        if (o16[i] != want) fail_msg("O[%lld] %s: 0x%04x vs the reference's 0x%04x (%.9g)", (long long)i,
                                     dt == MXA_F16 ? "f16" : "bf16", o16[i], want, o_ref[i]);
    }
    for (int i = 0; i < B * H * NQ; i++)
        if (memcmp(&l_hip[i], &l_ref[i], 4) != 0) fail_msg("LSE[%d]: %.9g vs reference %.9g", i, l_hip[i], l_ref[i]);
}

static const extras_case extras_cases[] = {
    {1, 1, MXA_CAUSAL_NONE, {45, 70}},
    {1, 0, MXA_CAUSAL_TOP_LEFT, {20, 70}},
    {0, 1, MXA_CAUSAL_BOTTOM_RIGHT, {0, 50}},
    {1, 1, MXA_CAUSAL_BOTTOM_RIGHT, {-1, 0}},
    {0, 0, MXA_CAUSAL_TOP_LEFT, {-1, 0}},
};

/* Scalar and int8 MFMA follow the reference's operations: bit for bit, f16/bf16 included.
 * (The emulator is slow: every case on the main configurations, two on the others.) */
static void test_extras_exact(void **state)
{
    (void)state;
    static const struct {
        const char *arch, *kernel, *variant;
        int d, bc, cases;
    } runs[] = {{"gfx942", "hip-scalar", "hip-scalar", 64, 64, 5}, {"gfx942", "hip-scalar", "hip-scalar", 32, 32, 2},
                {"gfx942", NULL, "hip-mfma-i8", 64, 64, 5},        {"gfx90a", NULL, "hip-mfma-i8", 64, 64, 2}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++)
        for (int i = 0; i < runs[r].cases; i++) {
            emulate(runs[r].arch, runs[r].kernel);
            fill_extras(2000 + (uint64_t)i, runs[r].d, &extras_cases[i]);
            run_extras(&extras_cases[i], runs[r].bc, runs[r].d, runs[r].variant, MXA_F32);
            expect_exact(runs[r].d);
            if (i > 1) continue;
            const mxa_dtype half = i ? MXA_BF16 : MXA_F16;
            run_extras(&extras_cases[i], runs[r].bc, runs[r].d, runs[r].variant, half);
            expect_half(half, runs[r].d);
        }
}

/* gfx950's instruction sums two blocks before adding: NMSE-close, LSE within conformance's 1e-3. */
static void test_extras_fp4(void **state)
{
    (void)state;
    for (size_t i = 0; i < 3; i++) {
        emulate("gfx950", NULL);
        fill_extras(3000 + i, 64, &extras_cases[i]);
        run_extras(&extras_cases[i], 64, 64, "hip-mfma-fp4", MXA_F32);
        const double e = tu_nmse(o_hip, o_ref, (int64_t)B * H * NQ * 64);
        if (e > 1e-12) fail_msg("gfx950 extras case %zu: NMSE %g", i, e);
        for (int r = 0; r < B * H * NQ; r++)
            if (isfinite(l_ref[r]) && fabsf(l_hip[r] - l_ref[r]) > 1e-3f) fail_msg("LSE[%d] %g vs %g", r, l_hip[r], l_ref[r]);
    }
}

/* The key lengths reach the kernel: without them the same inputs give another result. */
static void test_extras_matter(void **state)
{
    (void)state;
    const extras_case with = {0, 0, MXA_CAUSAL_NONE, {45, 33}}, without = {0, 0, MXA_CAUSAL_NONE, {-1, 0}};
    emulate("gfx942", "hip-scalar");
    fill_extras(4000, 64, &with);
    run_extras(&without, 64, 64, "hip-scalar", MXA_F32);
    static float plain[B * H * NQ * DMAX];
    memcpy(plain, o_hip, sizeof plain);
    run_extras(&with, 64, 64, "hip-scalar", MXA_F32);
    expect_exact(64);
    assert_true(tu_nmse(plain, o_hip, (int64_t)B * H * NQ * 64) > 1e-3);
}

/* ---- pre-quantized K/V (mxa_prepare_kv) */

/* One case: recipe, causal alignment, key lengths ({-1, ..}: none). */
typedef struct kv_case {
    mxa_recipe recipe;
    int causal;
    int32_t lengths[B];
} kv_case;

/* Attention on a K/V prepared on a fresh hip:0 (k = v = NULL) into o_hip / l_hip, then on
 * the float32 K and V on the same device into o_ref / l_ref: the kernel reads the prepared
 * codes in place (no K or V prep is launched) and gets the same bits. */
static void run_kv(const kv_case *c, int bc, int d, const char *variant, uint64_t seed)
{
    tu_rng rng = {seed};
    tu_fill_attention(&rng, q, k, v, B, H, HKV, NQ, NK, d);
    if (c->lengths[0] >= 0) /* padding tokens that would change a V block were they quantized with it */
        for (int bb = 0; bb < B; bb++)
            for (int hh = 0; hh < HKV; hh++)
                for (int i = ((bb * HKV + hh) * NK + c->lengths[bb]) * d; i < (bb * HKV + hh + 1) * NK * d; i++)
                    k[i] = v[i] = 1e4f;
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, c->recipe);
    desc.causal = c->causal;
    desc.bc = bc;
    desc.key_lengths = c->lengths[0] >= 0 ? c->lengths : NULL;
    mxa_tensor tq, tk, tv, to, tl, ro, rl;
    mxa_tensor_init(&tq, MXA_F32, B, H, NQ, d, q);
    mxa_tensor_init(&tk, MXA_F32, B, HKV, NK, d, k);
    mxa_tensor_init(&tv, MXA_F32, B, HKV, NK, d, v);
    mxa_tensor_init(&to, MXA_F32, B, H, NQ, d, o_hip);
    mxa_tensor_init(&tl, MXA_F32, B, H, NQ, 1, l_hip);
    mxa_tensor_init(&ro, MXA_F32, B, H, NQ, d, o_ref);
    mxa_tensor_init(&rl, MXA_F32, B, H, NQ, 1, l_ref);
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_kv *kv = NULL;
    mxa_attention_info info;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "hip:0", &dev), MXA_OK);
    if (mxa_prepare_kv(dev, &desc, &tk, &tv, &kv)) fail_msg("mxa_prepare_kv: %s", mxa_last_error_message());
    desc.kv = kv;
    /* first, on a scratch no float32 call has filled with its quantized K and V */
    if (mxa_attention(dev, &desc, &tq, NULL, NULL, &to, &tl, &info)) fail_msg("prepared K/V: %s", mxa_last_error_message());
    assert_string_equal(info.variant, variant);
    assert_int_equal(log_count("launch mxa_prep_qk"), 1); /* Q only */
    assert_int_equal(log_count("launch mxa_prep_v"), 0);
    desc.kv = NULL;
    if (mxa_attention(dev, &desc, &tq, &tk, &tv, &ro, &rl, &info)) fail_msg("float32 K/V: %s", mxa_last_error_message());
    assert_string_equal(info.variant, variant);
    mxa_kv_destroy(kv);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    assert_int_equal(log_count("malloc"), log_count("free"));
}

/* Scalar and int8 MFMA (K = 16 and 8), both recipes, causal alignments and key lengths (GQA: H = 4, Hkv = 2);
 * gfx950's scaled MFMA too, which reads the same codes (bit for bit the float32 K/V on the same device). */
static void test_kv(void **state)
{
    (void)state;
    static const kv_case cases[] = {
        {MXA_RECIPE_MXATTENTION, MXA_CAUSAL_NONE, {-1, 0}},
        {MXA_RECIPE_OCP_DIRECT, MXA_CAUSAL_BOTTOM_RIGHT, {70, 33}},
        {MXA_RECIPE_MXATTENTION, MXA_CAUSAL_TOP_LEFT, {45, 20}},
    };
    static const struct {
        const char *arch, *kernel, *variant;
        int cases;
    } runs[] = {{"gfx942", "hip-scalar", "hip-scalar", 3}, {"gfx942", NULL, "hip-mfma-i8", 3},
                {"gfx90a", NULL, "hip-mfma-i8", 1},         {"gfx950", NULL, "hip-mfma-fp4", 1}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++)
        for (int i = 0; i < runs[r].cases; i++) {
            emulate(runs[r].arch, runs[r].kernel);
            run_kv(&cases[i], 64, 64, runs[r].variant, 5000 + (uint64_t)i);
            expect_exact(64);
        }
}

static void test_quantize(void **state)
{
    (void)state;
    enum { ROWS = 5, COLS = 100, NBL = 4 };
    static float x[ROWS * COLS];
    uint8_t c_hip[ROWS * NBL * 16], s_hip[ROWS * NBL], c_cpu[ROWS * NBL * 16], s_cpu[ROWS * NBL];
    tu_rng rng = {7};
    tu_fill_normal(&rng, x, ROWS * COLS, 3.0f);
    x[3] = 0.0f, x[40] = -0.0f, x[200] = 7.25f; /* UOS boundary */
    emulate("gfx942", NULL);
    mxa_runtime *rt = NULL;
    mxa_device *hip = NULL, *cpu = NULL;
    mxa_tensor t;
    mxa_tensor_init(&t, MXA_F32, 1, 1, ROWS, COLS, x);
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "hip:0", &hip), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "cpu", &cpu), MXA_OK);
    const mxa_rule rules[] = {mxa_rule_uos(), mxa_rule_ocp(), mxa_rule_tfs()};
    for (int r = 0; r < 3; r++) {
        assert_int_equal(mxa_quantize(hip, &t, rules[r], c_hip, s_hip), MXA_OK);
        assert_int_equal(mxa_quantize(cpu, &t, rules[r], c_cpu, s_cpu), MXA_OK);
        assert_memory_equal(c_hip, c_cpu, sizeof c_hip);
        assert_memory_equal(s_hip, s_cpu, sizeof s_hip);
    }
    mxa_device_close(hip);
    mxa_device_close(cpu);
    mxa_runtime_destroy(rt);
}

/* An MXFP8 P V (mxattention-fp8pv) has no HIP kernel yet: refused with one clear error,
 * outputs untouched, and the same device still runs mxattention; no MXFP8 quantizer either. */
static void test_fp8pv_refused(void **state)
{
    (void)state;
    emulate("gfx942", "hip-scalar");
    const int d = 64;
    tu_rng rng = {11};
    tu_fill_attention(&rng, q, k, v, B, H, HKV, NQ, NK, d);
    mxa_tensor tq, tk, tv, to;
    mxa_tensor_init(&tq, MXA_F32, B, H, NQ, d, q);
    mxa_tensor_init(&tk, MXA_F32, B, HKV, NK, d, k);
    mxa_tensor_init(&tv, MXA_F32, B, HKV, NK, d, v);
    mxa_tensor_init(&to, MXA_F32, B, H, NQ, d, o_hip);
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "hip:0", &dev), MXA_OK);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION_FP8PV);
    memset(o_hip, 0xff, sizeof(float) * (size_t)(B * H * NQ * d));
    assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, NULL), MXA_ERR_UNSUPPORTED);
    assert_non_null(strstr(mxa_last_error_message(), "MXFP8"));
    for (int64_t i = 0; i < (int64_t)B * H * NQ * d; i++) assert_true(isnan(o_hip[i]));
    uint8_t codes[NQ * 2 * 32], scales[NQ * 2];
    mxa_tensor tx;
    mxa_tensor_init(&tx, MXA_F32, 1, 1, NQ, d, q);
    assert_int_equal(mxa_quantize_mxfp8(dev, &tx, codes, scales), MXA_ERR_UNSUPPORTED);
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.bc = 64;
    assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, NULL), MXA_OK);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
}

int main(void)
{
    if (fake_begin()) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize),
        cmocka_unit_test(test_scalar),
        cmocka_unit_test(test_mfma_i8),
        cmocka_unit_test(test_mfma_fp4),
        cmocka_unit_test(test_extras_exact),
        cmocka_unit_test(test_extras_fp4),
        cmocka_unit_test(test_extras_matter),
        cmocka_unit_test(test_kv),
        cmocka_unit_test(test_fp8pv_refused),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fake_end();
    return failed;
}
