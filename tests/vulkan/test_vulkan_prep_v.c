/*
 * prep_v.comp's fp16 form (the register and shared-memory coopmat kernels' V^T) on the
 * device, both passes as the backend records them (vk_prep_v_dispatch), against
 * runtime/mxfp4.c: each value is its MXFP4 value divided by 2^E, E the largest block
 * exponent of its column, exactly in fp16, and colscale holds 2^E. Columns whose blocks span
 * many binades, an all-zero column, padding tokens, both rules, and several token counts.
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
#include "runtime/backend.h"
#include "runtime/mxfp4.h"
#include "runtime/tensor.h"
#include "testutil.h"
#include "vk_test_common.h"
#include "vk_test_probe.h"

void vk_rule_params(mxa_rule rule, uint32_t *kind, uint32_t *t);

static VkInstance g_inst = VK_NULL_HANDLE;
static vk_probe_data g_probe;
static vk_device *g_dev;

static int setup(void **state)
{
    (void)state;
    char reason[MXA_REASON_LEN] = "", name[128] = "";
    if (!vkt_probe_device(&g_inst, &g_probe, name, sizeof name, reason, sizeof reason)) return vkt_no_device("prep_v", reason);
    if (!vk_kernel_available(VK_K_PREP_V_F16)) {
        fprintf(stderr, "prep_v_f16 not built: skipped\n");
        return 0;
    }
    const uint32_t need = MXA_VK_F_FP16 | MXA_VK_F_STORAGE16;
    if ((g_probe.caps.flags & need) != need) {
        fprintf(stderr, "%s lacks fp16 arithmetic or 16-bit storage: skipped\n", name);
        return 0;
    }
    if (vk_device_open(&g_probe, &g_dev) != MXA_OK) return vkt_no_device("prep_v", mxa_last_error_message());
    fprintf(stderr, "testing prep_v_f16 on %s\n", name);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    vkt_release(&g_inst, &g_dev);
    return 0;
}

/* V [heads, n, d] through both passes: y = V^T [heads, d, n_pad] fp16, colscale [heads, d]. */
static void run_prep_v(int heads, int n, int n_pad, int d, mxa_rule rule, const float *v, uint16_t *y, uint32_t *colscale)
{
    vk_buffer *vin, *yb, *sb, *mb;
    assert_int_equal(vk_scratch(g_dev, 0, (uint64_t)heads * n * d * 4, &vin), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 1, (uint64_t)heads * d * n_pad * 2, &yb), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 2, (uint64_t)heads * d * 4, &sb), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 3, (uint64_t)heads * d * 4, &mb), MXA_OK);
    assert_int_equal(vk_buffer_write(g_dev, vin, 0, v, (size_t)heads * n * d * 4), MXA_OK);
    uint32_t kind, t;
    vk_rule_params(rule, &kind, &t);
    struct {
        uint32_t heads, n, n_pad, x_offset, quant, kind, t, pass, transpose, hkv;
    } pv = {(uint32_t)heads, (uint32_t)n, (uint32_t)n_pad, 0, 1, kind, t, 0, 1, 1};
    int32_t spec[VK_SPEC_COUNT] = {d};
    spec[VK_SPEC_IN_TYPE] = mxa_input_code(MXA_F32);
    const vk_buffer *bv[5] = {vin, yb, sb, mb, vin}; /* no key lengths: keylen is never read */
    vk_batch batch;
    assert_int_equal(vk_batch_begin(g_dev, 0, &batch), MXA_OK);
    assert_int_equal(vk_batch_fill(&batch, mb, (uint64_t)heads * d * 4), MXA_OK); /* maxima start at "no block" */
    assert_int_equal(vk_prep_v_dispatch(&batch, VK_K_PREP_V_F16, (uint64_t)heads, (uint64_t)n_pad, (uint64_t)d, spec, bv,
                                        &pv, sizeof pv),
                     MXA_OK);
    pv.pass = 1;
    assert_int_equal(vk_prep_v_dispatch(&batch, VK_K_PREP_V_F16, (uint64_t)heads, (uint64_t)n_pad, (uint64_t)d, spec, bv,
                                        &pv, sizeof pv),
                     MXA_OK);
    assert_int_equal(vk_batch_submit(&batch, NULL), MXA_OK);
    assert_int_equal(vk_buffer_read(g_dev, yb, 0, y, (size_t)heads * d * n_pad * 2), MXA_OK);
    assert_int_equal(vk_buffer_read(g_dev, sb, 0, colscale, (size_t)heads * d * 4), MXA_OK);
}

static void check_case(int heads, int n, int d, mxa_rule rule, uint64_t seed)
{
    const int n_pad = (n + 63) / 64 * 64, nblk = n_pad / 32;
    float *v = malloc((size_t)heads * n * d * 4), *col = malloc((size_t)n_pad * 4);
    uint16_t *y = malloc((size_t)heads * d * n_pad * 2);
    uint32_t *cs = malloc((size_t)heads * d * 4);
    assert_true(v && col && y && cs);
    tu_rng r = {seed};
    for (int hd = 0; hd < heads; hd++)
        for (int i = 0; i < n; i++)
            for (int c = 0; c < d; c++) {
                /* block exponents spread over 12 binades within a column, so E comes from one block */
                const int spread = (c * 7 + (i / 32) * 5 + hd) % 13 - 6;
                float x = ldexpf((float)tu_normal(&r), spread);
                if (hd == 0 && c == 5) x = 0.0f; /* an all-zero column: E = 0, every value 0 */
                v[((size_t)hd * n + i) * d + c] = x;
            }
    run_prep_v(heads, n, n_pad, d, rule, v, y, cs);
    int bad = 0;
    for (int hd = 0; hd < heads && bad < 5; hd++)
        for (int c = 0; c < d && bad < 5; c++) {
            int emax = INT32_MIN;
            for (int i = 0; i < n_pad; i++) col[i] = i < n ? v[((size_t)hd * n + i) * d + c] : 0.0f;
            for (int b = 0; b < nblk; b++) {
                float m = 0.0f;
                for (int i = 0; i < 32; i++) m = fmaxf(m, fabsf(col[b * 32 + i]));
                if (m > 0.0f && mxa_shared_exponent(m, rule) > emax) emax = mxa_shared_exponent(m, rule);
                mxa_fake_quantize_block(col + b * 32, 32, rule);
            }
            if (emax == INT32_MIN) emax = 0;
            float want_scale = ldexpf(1.0f, emax), got_scale;
            memcpy(&got_scale, &cs[hd * d + c], 4);
            if (got_scale != want_scale) {
                fprintf(stderr, "head %d column %d: colscale %g, want 2^%d\n", hd, c, got_scale, emax);
                bad++;
            }
            for (int i = 0; i < n_pad; i++) {
                const float got = mxa_f16_to_f32(y[((size_t)hd * d + c) * n_pad + i]), want = ldexpf(col[i], -emax);
                if (got != want && bad++ < 5)
                    fprintf(stderr, "head %d column %d token %d: %a, want %a\n", hd, c, i, got, want);
            }
        }
    assert_int_equal(bad, 0);
    free(v);
    free(col);
    free(y);
    free(cs);
}

static void test_prep_v_f16(void **state)
{
    (void)state;
    if (!g_dev) return; /* skipped in setup */
    /* n_pad / 32 = 4, 6, 2 and 10 blocks */
    check_case(3, 128, 64, mxa_rule_tfs(), 11);
    check_case(2, 170, 64, mxa_rule_tfs(), 12);
    check_case(2, 40, 128, mxa_rule_ocp(), 13);
    check_case(1, 300, 32, mxa_rule_ocp(), 14);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prep_v_f16),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
