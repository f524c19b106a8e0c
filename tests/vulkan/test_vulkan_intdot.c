/*
 * attn_intdot.comp under every tiling the host may pick, run directly (internal API:
 * vk_device, vk_batch_*) on prep_qk_i8 / prep_v_i8 outputs. Every tiling (local size, BR,
 * OR, OCH: specialization constants 3, 5, 6, 7) must give the same output and LSE bit for
 * bit: each element's fp32 operations and their order are the same whatever the tiles. And
 * each case must match mxa_reference_run at Bc 64 (NMSE <= 1e-6, as
 * test_vulkan_attention.c, and the LSE within 1e-3 relative), including the wide-row path,
 * direct placement, rows without any visible key (causal, nq > nk), GQA, D 32..256 and
 * D = 96 (no rotation). Tilings whose shared memory exceeds the device's limit are skipped.
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

#include "backends/vulkan/vk_common.h"
#include "runtime/hadamard.h"
#include "runtime/reference.h"
#include "testutil.h"
#include "vk_test_common.h"
#include "vk_test_probe.h"

void vk_rule_params(mxa_rule rule, uint32_t *kind, uint32_t *t);

static VkInstance g_inst = VK_NULL_HANDLE;
static vk_probe_data g_probe;
static vk_device *g_dev;

/* The device $MXA_TEST_VULKAN_DEVICE = vulkan:N names, opened as the backend opens it. */
static int setup(void **state)
{
    (void)state;
    char reason[MXA_REASON_LEN] = "", name[128] = "";
    if (!vkt_probe_device(&g_inst, &g_probe, name, sizeof name, reason, sizeof reason)) return vkt_no_device("intdot", reason);
    fprintf(stderr, "testing attn_intdot on %s (subgroup size %u, shared memory %u)\n", name, g_probe.caps.subgroup_size,
            g_probe.caps.max_shared);
    /* a build or device without the kernel skips (it is not a failure of the device) */
    if (!vk_kernel_available(VK_K_ATTN_INTDOT) || !vk_kernel_available(VK_K_PREP_V_I8) ||
        !vk_kernel_available(VK_K_PREP_QK_I8)) {
        fprintf(stderr, "attn_intdot / prep_v_i8 / prep_qk_i8 not built: skipped\n");
        return 0;
    }
    if (!(g_probe.caps.flags & MXA_VK_F_INT_DOT) || !(g_probe.caps.flags & MXA_VK_F_SUBGROUP_SHUFFLE) || g_probe.caps.subgroup_size < 8) {
        fprintf(stderr, "the device lacks integer dot products, subgroup shuffles or 8-wide subgroups: skipped\n");
        return 0;
    }
    if (vk_device_open(&g_probe, &g_dev) != MXA_OK) return vkt_no_device("intdot", mxa_last_error_message());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    vkt_release(&g_inst, &g_dev);
    return 0;
}

typedef struct tiling {
    int threads, br, or_, och;
} tiling;

/* What the kernel's header comment gives, in bytes. */
static uint32_t shared_bytes(int d, int br) { return (uint32_t)(br * d + 64 * d + 256 + 8 * d + 64 * br + 12 * br); }

static int tiling_fits(tiling t, int d)
{
    const int rg2 = t.br / t.or_;
    if (t.threads % 8 || (8 * t.br) % t.threads || t.br % t.or_ || t.threads % rg2) return 0;
    const int cg = t.threads / rg2;
    if (d % cg) return 0;
    if (t.threads % (int)g_probe.caps.subgroup_size && t.threads > (int)g_probe.caps.subgroup_size) return 0;
    return shared_bytes(d, t.br) <= g_probe.caps.max_shared;
}

typedef struct acase {
    int b, h, hkv, nq, nk, d, causal;
    mxa_recipe recipe;
    int wide; /* scale one 32-wide block of some Q and K rows by 2^9: wide rows without the rotation */
} acase;

/* Runs prep_qk_i8, prep_v_i8 and attn_intdot with tiling t; o [b,h,nq,d], lse [b,h,nq]. */
static void run_intdot(const acase *c, const mxa_attention_desc *desc, const float *q, const float *k, const float *v,
                       tiling t, float *o, float *lse)
{
    const uint64_t b = (uint64_t)c->b, h = (uint64_t)c->h, hkv = (uint64_t)c->hkv, nq = (uint64_t)c->nq,
                   nk = (uint64_t)c->nk, d = (uint64_t)c->d;
    const uint64_t nq_pad = (nq + (uint64_t)t.br - 1) / (uint64_t)t.br * (uint64_t)t.br, nk_pad = (nk + 63) / 64 * 64;
    const uint64_t nb = d / 32;
    vk_buffer *qin, *kin, *vin, *qp, *kp, *vp, *qs, *ks, *vs, *vmax, *ob, *lb;
    assert_int_equal(vk_scratch(g_dev, 0, b * h * nq * d * 4, &qin), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 1, b * hkv * nk * d * 4, &kin), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 2, b * hkv * nk * d * 4, &vin), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 3, b * h * nq_pad * d, &qp), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 4, b * hkv * nk_pad * d, &kp), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 5, b * hkv * nk_pad * d, &vp), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 6, b * h * nq_pad * nb * 4, &qs), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 7, b * hkv * nk_pad * nb * 4, &ks), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 8, b * hkv * d * (nk_pad / 32) * 4, &vs), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 9, b * hkv * d * 4, &vmax), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 10, b * h * nq * d * 4, &ob), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 11, b * h * nq * 4, &lb), MXA_OK);
    assert_int_equal(vk_buffer_write(g_dev, qin, 0, q, b * h * nq * d * 4), MXA_OK);
    assert_int_equal(vk_buffer_write(g_dev, kin, 0, k, b * hkv * nk * d * 4), MXA_OK);
    assert_int_equal(vk_buffer_write(g_dev, vin, 0, v, b * hkv * nk * d * 4), MXA_OK);

    uint32_t kind, tq;
    vk_rule_params(desc->rule, &kind, &tq);
    const uint32_t pnq = desc->placement == MXA_PLACEMENT_PNQ;
    struct {
        uint32_t rows_pad, n, n_pad, x_offset, hadamard, quant, kind, t;
        float norm;
    } pq = {(uint32_t)(b * h * nq_pad), (uint32_t)nq, (uint32_t)nq_pad, 0, desc->hadamard != 0, 1, kind, tq,
            mxa_hadamard_norm((int)d)},
      pk = {(uint32_t)(b * hkv * nk_pad), (uint32_t)nk, (uint32_t)nk_pad, 0, desc->hadamard != 0, 1, kind, tq,
            mxa_hadamard_norm((int)d)};
    struct {
        uint32_t heads, n, n_pad, x_offset, quant, kind, t, pass, transpose, hkv;
    } pv = {(uint32_t)(b * hkv), (uint32_t)nk, (uint32_t)nk_pad, 0, 1, kind, tq, 1, 1, (uint32_t)hkv};
    struct {
        uint32_t h, hkv, nq, nk, nq_pad, nk_pad, o_offset, causal, quant_p, pnq, kind, t;
        float scale;
        uint32_t lse_offset, bias_offset, bias_sb, bias_sh, mask_offset, mask_sb, mask_sh; /* no extras */
    } pa = {(uint32_t)h, (uint32_t)hkv, (uint32_t)nq, (uint32_t)nk, (uint32_t)nq_pad, (uint32_t)nk_pad, 0,
            (uint32_t)c->causal, 1, pnq, kind, tq, desc->scale, 0, 0, 0, 0, 0, 0, 0};
    const int32_t spec_d[VK_SPEC_COUNT] = {(int32_t)d};
    const int32_t spec[VK_SPEC_COUNT] = {(int32_t)d, 64, 0, t.threads, (int32_t)(1 | pnq << 1 | kind << 2), t.br, t.or_, t.och};
    const vk_buffer *bq[3] = {qin, qp, qs}, *bk[3] = {kin, kp, ks}, *bv[4] = {vin, vp, vs, vmax};
    const vk_buffer *ba[8] = {qp, kp, vp, qs, ks, vs, ob, lb};
    uint32_t gx, gy;
    vk_batch batch;
    assert_int_equal(vk_batch_begin(g_dev, 0, &batch), MXA_OK);
    const uint32_t qk_rows = 64 / (uint32_t)nb;
    vk_grid_1d(b * h * nq_pad, qk_rows, &gx, &gy);
    assert_int_equal(vk_batch_dispatch(&batch, VK_K_PREP_QK_I8, spec_d, 0, bq, 3, &pq, sizeof pq, gx, gy, 1), MXA_OK);
    vk_grid_1d(b * hkv * nk_pad, qk_rows, &gx, &gy);
    assert_int_equal(vk_batch_dispatch(&batch, VK_K_PREP_QK_I8, spec_d, 0, bk, 3, &pk, sizeof pk, gx, gy, 1), MXA_OK);
    vk_grid_1d(b * hkv * (nk_pad / 32) * d, 64, &gx, &gy);
    assert_int_equal(vk_batch_dispatch(&batch, VK_K_PREP_V_I8, spec_d, 0, bv, 4, &pv, sizeof pv, gx, gy, 1), MXA_OK);
    assert_int_equal(vk_batch_dispatch(&batch, VK_K_ATTN_INTDOT, spec, 0, ba, 8, &pa, sizeof pa,
                                       (uint32_t)(nq_pad / (uint64_t)t.br), (uint32_t)h, (uint32_t)b),
                     MXA_OK);
    assert_int_equal(vk_batch_submit(&batch, NULL), MXA_OK);
    assert_int_equal(vk_buffer_read(g_dev, ob, 0, o, b * h * nq * d * 4), MXA_OK);
    assert_int_equal(vk_buffer_read(g_dev, lb, 0, lse, b * h * nq * 4), MXA_OK);
}

static const tiling tilings[] = {
    {128, 64, 4, 8}, /* D <= 128 default */
    {128, 32, 4, 8}, /* D > 128 default */
    {256, 64, 4, 8}, {256, 128, 4, 8}, {128, 64, 8, 4}, {64, 16, 2, 2}, {32, 16, 4, 8},
};

static void run_case(const acase *c, uint64_t seed)
{
    const int64_t nq_el = (int64_t)c->b * c->h * c->nq * c->d, nk_el = (int64_t)c->b * c->hkv * c->nk * c->d,
                  rows = (int64_t)c->b * c->h * c->nq;
    float *q = malloc((size_t)nq_el * 4), *k = malloc((size_t)nk_el * 4), *v = malloc((size_t)nk_el * 4);
    float *ref = malloc((size_t)nq_el * 4), *ref_lse = malloc((size_t)rows * 4);
    float *o = malloc((size_t)nq_el * 4), *lse = malloc((size_t)rows * 4);
    float *o0 = malloc((size_t)nq_el * 4), *lse0 = malloc((size_t)rows * 4);
    assert_true(q && k && v && ref && ref_lse && o && lse && o0 && lse0);
    tu_rng r = {seed};
    tu_fill_attention(&r, q, k, v, c->b, c->h, c->hkv, c->nq, c->nk, c->d);
    if (c->wide && c->d >= 64) {
        for (int64_t i = 0; i < (int64_t)c->b * c->h * c->nq; i += 3)
            for (int x = 32; x < 64; x++) q[i * c->d + x] *= 512.0f;
        for (int64_t i = 0; i < (int64_t)c->b * c->hkv * c->nk; i += 5)
            for (int x = 0; x < 32; x++) k[i * c->d + x] *= 512.0f;
    }
    mxa_attention_desc desc;
    assert_int_equal(mxa_attention_desc_init(&desc, c->recipe), MXA_OK);
    desc.causal = c->causal;
    desc.bc = 64;
    desc.scale = 1.0f / sqrtf((float)c->d);
    if (c->d & (c->d - 1)) desc.hadamard = 0; /* the rotation needs a power of two */
    const mxa_attention_dims dims = {c->b, c->h, c->hkv, c->nq, c->nk, c->d, desc.scale};
    assert_int_equal(mxa_reference_run(&desc, 64, &dims, NULL, q, k, v, ref, ref_lse, NULL), MXA_OK);

    int ran = 0;
    for (size_t ti = 0; ti < sizeof tilings / sizeof tilings[0]; ti++) {
        const tiling t = tilings[ti];
        if (!tiling_fits(t, c->d)) continue;
        run_intdot(c, &desc, q, k, v, t, o, lse);
        const double e = tu_nmse(o, ref, nq_el);
        int lse_bad = 0;
        for (int64_t i = 0; i < rows; i++) {
            if (isinf(ref_lse[i])) {
                lse_bad += !(isinf(lse[i]) && lse[i] < 0);
                for (int x = 0; x < c->d; x++) lse_bad += o[i * c->d + x] != 0.0f;
            } else {
                lse_bad += !(fabs((double)lse[i] - ref_lse[i]) < 1e-3 * (1.0 + fabs(ref_lse[i])));
            }
        }
        int differ = 0;
        if (ran) differ = memcmp(o, o0, (size_t)nq_el * 4) != 0 || memcmp(lse, lse0, (size_t)rows * 4) != 0;
        if (e > 1e-6 || lse_bad || differ || getenv("MXA_TEST_VERBOSE"))
            print_message("%s b%d h%d/%d nq%d nk%d d%d causal%d wide%d, tiling %d/%d/%d/%d: NMSE %.3g, LSE bad %d%s\n",
                          mxa_recipe_name(c->recipe), c->b, c->h, c->hkv, c->nq, c->nk, c->d, c->causal, c->wide,
                          t.threads, t.br, t.or_, t.och, e, lse_bad, differ ? ", differs from the first tiling" : "");
        assert_true(e <= 1e-6);
        assert_int_equal(lse_bad, 0);
        assert_false(differ);
        if (!ran) {
            memcpy(o0, o, (size_t)nq_el * 4);
            memcpy(lse0, lse, (size_t)rows * 4);
        }
        ran++;
    }
    assert_true(ran > 0);
    free(q); free(k); free(v); free(ref); free(ref_lse); free(o); free(lse); free(o0); free(lse0);
}

static void test_shapes(void **state)
{
    (void)state;
    if (!g_dev) skip();
    static const acase cases[] = {
        {1, 2, 1, 70, 130, 64, 0, MXA_RECIPE_MXATTENTION, 0},
        {1, 1, 1, 90, 65, 128, 1, MXA_RECIPE_MXATTENTION, 0}, /* nq > nk: rows with no key */
        {1, 1, 1, 33, 1, 32, 0, MXA_RECIPE_MXATTENTION, 0},
        {1, 1, 1, 20, 100, 256, 1, MXA_RECIPE_MXATTENTION, 0},
        {1, 1, 1, 40, 130, 96, 0, MXA_RECIPE_OCP_DIRECT, 0},
        {2, 4, 2, 17, 130, 64, 1, MXA_RECIPE_OCP_DIRECT, 0}, /* GQA, direct placement */
        {1, 1, 1, 64, 128, 128, 0, MXA_RECIPE_OCP_DIRECT, 1}, /* wide rows */
        {1, 1, 1, 50, 90, 64, 1, MXA_RECIPE_MXATTENTION, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], 1000 + i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
