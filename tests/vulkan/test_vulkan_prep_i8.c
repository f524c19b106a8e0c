/*
 * prep_qk.comp built with OUT_I8 (prep_qk_i8), run on the device and held against
 * runtime/mxfp4.c: every int8 * |scale| / 2 must be the reference MXFP4 value exactly,
 * the scale's sign must follow the narrow/wide rule (nonzero blocks' exponents within
 * 3), head padding rows must be zeros with scale 1 (an all-zero row is narrow with
 * Emin = 0), and the row past the last head must keep what was there before. The int8 codes and scales are also compared with
 * the exact encoding the shader's header comment describes, so a change of format
 * shows up here even when it still decodes correctly.
 *
 * Internal API on purpose (vk_device, vk_batch_*): the kernel's output format is not
 * observable through mxa's public calls.
 */
#include <limits.h>
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
#include "runtime/mxfp4.h"
#include "testutil.h"
#include "vk_test_common.h"
#include "vk_test_probe.h"

/* vk_quantize.c: the rule as the shaders take it (not in vk_common.h). */
void vk_rule_params(mxa_rule rule, uint32_t *kind, uint32_t *t);

#define MAX_D 128
#define NARROW_SPREAD 3 /* the largest exponent spread of a "narrow" row */
#define SENTINEL 0xA5   /* output bytes before the dispatch: a row nobody writes keeps it */
/* floats of NaN before the input (a wrong x_offset poisons the row): 7 takes the kernel's
 * one-float loads, 8 its four-float loads */
#define X_OFFSET_BY1 7
#define X_OFFSET_BY4 8

typedef struct prep_pc { /* prep_qk.comp's push constants */
    uint32_t rows_pad, n, n_pad, x_offset, hadamard, quant, kind, t;
    float norm;
} prep_pc;

static VkInstance g_inst = VK_NULL_HANDLE;
static vk_probe_data g_probe;
static vk_device *g_dev;
static int g_subgroup_checks; /* runs of the subgroup form */

/* The device $MXA_TEST_VULKAN_DEVICE = vulkan:N names (the N-th Vulkan 1.1 device that
 * probes, as the backend counts them; default 0), opened the way the backend opens it. */
static int setup(void **state)
{
    (void)state;
    char reason[MXA_REASON_LEN] = "", name[128] = "";
    if (!vkt_probe_device(&g_inst, &g_probe, name, sizeof name, reason, sizeof reason)) return vkt_no_device("prep_qk_i8", reason);
    fprintf(stderr, "testing prep_qk_i8 on %s\n", name);
    if (!vk_kernel_available(VK_K_PREP_QK_I8)) return vkt_no_device("prep_qk_i8", "prep_qk_i8 was not built");
    if (vk_device_open(&g_probe, &g_dev) != MXA_OK) return vkt_no_device("prep_qk_i8", mxa_last_error_message());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    vkt_release(&g_inst, &g_dev);
    return 0;
}

/* What one row must become: an independent MXFP4 decode (dec) and the exact encoding. */
typedef struct expect {
    float dec[MAX_D];
    int8_t q[MAX_D];
    float scale[MAX_D / 32];
    int narrow;
} expect;

static void expect_row(const float *src, int d, int hadamard, mxa_rule rule, expect *e)
{
    float v[MAX_D];
    uint8_t codes[MAX_D], sbyte[MAX_D / 32];
    int emin = INT_MAX, emax = INT_MIN;
    memcpy(v, src, (size_t)d * sizeof *v);
    if (hadamard) mxa_hadamard(v, d); /* includes the * 1/sqrt(d), as prep_qk.comp's * norm */
    for (int b = 0; b < d / 32; b++) {
        float m = 0.0f;
        mxa_quantize_block(v + 32 * b, 32, rule, codes + 32 * b, &sbyte[b]);
        for (int i = 0; i < 32; i++) m = fmaxf(m, fabsf(v[32 * b + i]));
        if (m != 0.0f) { /* all-zero blocks do not count towards the spread */
            const int eb = sbyte[b] - 127;
            emin = eb < emin ? eb : emin;
            emax = eb > emax ? eb : emax;
        }
    }
    if (emax == INT_MIN) emin = emax = 0;
    e->narrow = emax - emin <= NARROW_SPREAD;
    for (int b = 0; b < d / 32; b++) {
        const int eb = sbyte[b] - 127, sh = e->narrow ? (eb - emin < 0 ? 0 : eb - emin > 3 ? 3 : eb - emin) : 0;
        e->scale[b] = e->narrow ? ldexpf(1.0f, emin) : -ldexpf(1.0f, eb);
        for (int i = 32 * b; i < 32 * b + 32; i++) {
            e->dec[i] = mxa_decode(codes[i], sbyte[b]);
            e->q[i] = (int8_t)(mxa_e2m1_doubled[codes[i]] * (1 << sh));
        }
    }
}

/*
 * Runs prep_qk_i8 on `rows` rows of d floats (after x_offset floats of NaN), heads of n
 * rows padded to n_pad, and checks every output row. Returns the number of narrow rows.
 */
static int run_check_form(int form, int x_offset, const float *x, int rows, int d, int n, int n_pad, int hadamard,
                          mxa_rule rule)
{
    assert_int_equal(rows % n, 0); /* whole heads, as vk_attention.c passes them */
    const int nb = d / 32, heads = rows / n, out_rows = heads * n_pad + 1; /* +1: past the end */
    const size_t xbytes = (size_t)(x_offset + rows * d) * 4, ybytes = (size_t)out_rows * d,
                 sbytes = (size_t)out_rows * nb * 4;
    float *xin = malloc(xbytes), *scales = malloc(sbytes);
    int8_t *y = malloc(ybytes);
    uint8_t *fill = malloc(sbytes > ybytes ? sbytes : ybytes);
    assert_non_null(xin);
    assert_non_null(scales);
    assert_non_null(y);
    assert_non_null(fill);
    for (int i = 0; i < x_offset; i++) xin[i] = NAN;
    memcpy(xin + x_offset, x, (size_t)rows * d * 4);
    memset(fill, SENTINEL, sbytes > ybytes ? sbytes : ybytes);

    prep_pc pc = {(uint32_t)(heads * n_pad), (uint32_t)n, (uint32_t)n_pad, (uint32_t)x_offset, hadamard != 0, 1, 0, 0, mxa_hadamard_norm(d)};
    vk_rule_params(rule, &pc.kind, &pc.t);
    vk_buffer *xb, *yb, *sb;
    vk_batch batch;
    assert_int_equal(vk_scratch(g_dev, 0, xbytes, &xb), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 1, ybytes, &yb), MXA_OK);
    assert_int_equal(vk_scratch(g_dev, 2, sbytes, &sb), MXA_OK);
    assert_int_equal(vk_buffer_write(g_dev, xb, 0, xin, xbytes), MXA_OK);
    assert_int_equal(vk_buffer_write(g_dev, yb, 0, fill, ybytes), MXA_OK);
    assert_int_equal(vk_buffer_write(g_dev, sb, 0, fill, sbytes), MXA_OK);
    const vk_buffer *binds[3] = {xb, yb, sb};
    assert_int_equal(vk_batch_begin(g_dev, 0, &batch), MXA_OK);
    assert_int_equal(vk_prep_qk_dispatch(&batch, VK_K_PREP_QK_I8, form, (uint64_t)(heads * n_pad), (uint64_t)d, MXA_F32, binds, &pc,
                                         sizeof pc), MXA_OK);
    assert_int_equal(vk_batch_submit(&batch, NULL), MXA_OK);
    assert_int_equal(vk_buffer_read(g_dev, yb, 0, y, ybytes), MXA_OK);
    assert_int_equal(vk_buffer_read(g_dev, sb, 0, scales, sbytes), MXA_OK);

    int bad = 0, narrow_rows = 0;
    for (int o = 0; o < out_rows; o++) {
        const int head = o / n_pad, r = head * n + o % n_pad;
        if (o == heads * n_pad) { /* past the end: untouched */
            if (memcmp(y + (size_t)o * d, fill, (size_t)d) || memcmp(scales + (size_t)o * nb, fill, (size_t)nb * 4))
                if (bad++ < 8) fprintf(stderr, "output row %d (past the end) was written\n", o);
            continue;
        }
        if (o % n_pad >= n) { /* padding: zeros, scale 1 */
            int ok = 1;
            for (int i = 0; i < d; i++) ok &= y[(size_t)o * d + i] == 0;
            for (int b = 0; b < nb; b++) ok &= scales[(size_t)o * nb + b] == 1.0f;
            if (!ok && bad++ < 8) fprintf(stderr, "padding row %d is not zeros with scale 1\n", o);
            continue;
        }
        expect e;
        expect_row(x + (size_t)r * d, d, hadamard, rule, &e);
        narrow_rows += e.narrow;
        const int8_t *q = y + (size_t)o * d;
        const float *s = scales + (size_t)o * nb;
        for (int b = 0; b < nb; b++)
            if ((s[b] > 0.0f) != e.narrow || memcmp(&s[b], &e.scale[b], 4)) {
                if (bad++ < 8)
                    fprintf(stderr, "row %d block %d: scale %a, want %a (%s row)\n", r, b, (double)s[b], (double)e.scale[b],
                            e.narrow ? "narrow" : "wide");
            }
        for (int i = 0; i < d; i++) {
            /* exact in double: |q| <= 96 times a power of two */
            const double got = (double)q[i] * fabs((double)s[i / 32]) * 0.5;
            const int bound = e.narrow ? 96 : 12;
            if (got != (double)e.dec[i] || q[i] != e.q[i] || q[i] > bound || q[i] < -bound) {
                if (bad++ < 8)
                    fprintf(stderr, "row %d element %d (input %a): int8 %d scale %a decodes to %a, want int8 %d = %a (%s row)\n",
                            r, i, (double)x[(size_t)r * d + i], q[i], (double)s[i / 32], got, e.q[i], (double)e.dec[i],
                            e.narrow ? "narrow" : "wide");
            }
        }
    }
    if (bad)
        fprintf(stderr, "%d mismatches (%s form): d %d rows %d n %d n_pad %d hadamard %d rule %d q %g\n", bad,
                form == VK_PREP_QK_SUBGROUP ? "subgroup" : "shared-memory", d, rows, n, n_pad, hadamard, (int)rule.kind,
                (double)rule.q);
    free(xin);
    free(scales);
    free(y);
    free(fill);
    assert_int_equal(bad, 0);
    return narrow_rows;
}

/* Both forms of the kernel (prep_qk.comp, and prep_qk_subgroup.comp where the device runs it):
 * each must write the exact encoding. Returns the number of narrow rows. */
static int run_check_at(int x_offset, const float *x, int rows, int d, int n, int n_pad, int hadamard, mxa_rule rule)
{
    uint32_t per, sg;
    const int narrow = run_check_form(VK_PREP_QK_SHARED, x_offset, x, rows, d, n, n_pad, hadamard, rule);
    if (vk_prep_qk_subgroup(g_dev, (uint64_t)d, &per, &sg)) {
        g_subgroup_checks++;
        assert_int_equal(run_check_form(VK_PREP_QK_SUBGROUP, x_offset, x, rows, d, n, n_pad, hadamard, rule), narrow);
    }
    return narrow;
}

static int run_check(const float *x, int rows, int d, int n, int n_pad, int hadamard, mxa_rule rule)
{
    return run_check_at(X_OFFSET_BY1, x, rows, d, n, n_pad, hadamard, rule);
}

/* run_check through both of the kernel's load paths; the narrow count depends on the data only. */
static int run_check_both_loads(const float *x, int rows, int d, int n, int n_pad, int hadamard, mxa_rule rule)
{
    run_check_at(X_OFFSET_BY1, x, rows, d, n, n_pad, hadamard, rule);
    return run_check_at(X_OFFSET_BY4, x, rows, d, n, n_pad, hadamard, rule);
}

static const int dims[] = {32, 64, 128};

/* (7) Every case runs under OCP and the ceiling rule (q = 7.25), some also under q = 6. */
static mxa_rule rule_of(int i)
{
    return i == 0 ? mxa_rule_ocp() : i == 1 ? mxa_rule_uos() /* ceiling, q = 7.25 */ : mxa_rule_tfs() /* q = 6 */;
}

/* (1) Gaussian rows, a few of them on E2M1 rounding ties; 37 rows leave the last
 * workgroup partly idle (16, 32 or 64 rows per workgroup). */
static void test_gaussian(void **state)
{
    (void)state;
    if (!g_dev) skip();
    enum { rows = 37 };
    float *x = malloc(sizeof(float) * rows * MAX_D);
    assert_non_null(x);
    for (int di = 0; di < 3; di++)
        for (int ri = 0; ri < 3; ri++)
            for (int had = 0; had < 2; had++) {
                const int d = dims[di];
                tu_rng rng = {(uint64_t)(1000 * d + 10 * ri + had)};
                tu_fill_normal(&rng, x, (int64_t)rows * d, 1.0f);
                for (int i = 0; i < 4 * d; i++) x[i] = (float)floor(x[i] * 8.0) / 4.0f; /* ties k/4 */
                const int narrow = run_check_both_loads(x, rows, d, rows, rows, had, rule_of(ri));
                assert_true(narrow >= rows / 2); /* the common case must be the narrow one */
            }
    free(x);
}

/* (2) One block per row 2^10 larger than the others: wide without the rotation. */
static void test_outlier_block(void **state)
{
    (void)state;
    if (!g_dev) skip();
    enum { rows = 16 };
    float *x = malloc(sizeof(float) * rows * MAX_D);
    assert_non_null(x);
    for (int di = 1; di < 3; di++) /* D = 32 has a single block: never wide */
        for (int ri = 0; ri < 2; ri++)
            for (int had = 0; had < 2; had++) {
                const int d = dims[di];
                tu_rng rng = {(uint64_t)(2000 * d + 10 * ri + had)};
                tu_fill_normal(&rng, x, (int64_t)rows * d, 1.0f);
                for (int r = 0; r < rows; r++)
                    for (int i = 0; i < 32; i++) x[r * d + 32 * (r % (d / 32)) + i] *= 1024.0f;
                const int narrow = run_check(x, rows, d, rows, rows, had, rule_of(ri));
                if (!had) assert_int_equal(narrow, 0);
            }
    free(x);
}

/* (3) and (4): an all-zero block (signed zeros) among others; rows that are all zero. */
static void test_zero_blocks(void **state)
{
    (void)state;
    if (!g_dev) skip();
    enum { rows = 6 };
    float x[rows * MAX_D];
    for (int di = 0; di < 3; di++)
        for (int ri = 0; ri < 2; ri++)
            for (int had = 0; had < 2; had++) {
                const int d = dims[di];
                tu_rng rng = {(uint64_t)(3000 * d + 10 * ri + had)};
                tu_fill_normal(&rng, x, (int64_t)rows * d, 3.0f);
                for (int i = 0; i < 32; i++) {
                    x[0 * d + i] = (i & 1) ? -0.0f : 0.0f;     /* row 0: block 0 zero */
                    x[1 * d + d - 32 + i] = -0.0f;             /* row 1: last block zero */
                    x[2 * d + d - 32 + i] *= 64.0f;            /* row 2: zero block, at D = 128 wide */
                    x[2 * d + i] = 0.0f;
                }
                for (int i = 0; i < d; i++) {
                    x[3 * d + i] = 0.0f;                        /* rows 3, 4: all zero */
                    x[4 * d + i] = -0.0f;
                }
                const int narrow = run_check(x, rows, d, rows, rows, had, rule_of(ri));
                assert_true(narrow >= 4);
            }
}

/* (5) Block maxima 1.5 * 2^s (exponent s - 2 under all three rules): spread 3 is
 * narrow, spread 4 wide, an all-zero block does not count. */
static void test_spread_boundary(void **state)
{
    (void)state;
    if (!g_dev) skip();
    enum { rows = 6, d = 128, Z = 99 };
    static const int s[rows][4] = {
        {0, 3, 1, 2}, {0, 4, 1, 2}, {-5, -2, -2, -4}, {7, 3, 3, 3}, {Z, 5, 2, Z}, {Z, 6, 2, Z},
    };
    static const int want_narrow[rows] = {1, 0, 1, 0, 1, 0};
    float x[rows * d];
    for (int ri = 0; ri < 3; ri++) {
        tu_rng rng = {(uint64_t)(4000 + ri)};
        for (int r = 0; r < rows; r++)
            for (int b = 0; b < 4; b++)
                for (int i = 0; i < 32; i++) {
                    const float u = (float)(1.5 * (2.0 * tu_uniform(&rng) - 1.0)); /* |u| < 1.5 */
                    const float m = i == (r * 7 + b) % 32 ? ((r + b) & 1 ? -1.5f : 1.5f) : u;
                    x[r * d + 32 * b + i] = s[r][b] == Z ? 0.0f : ldexpf(m, s[r][b]);
                }
        for (int r = 0; r < rows; r++) {
            expect e;
            expect_row(x + r * d, d, 0, rule_of(ri), &e);
            assert_int_equal(e.narrow, want_narrow[r]); /* the inputs are what this test means them to be */
        }
        assert_int_equal(run_check(x, rows, d, rows, rows, 0, rule_of(ri)), 3);
    }
}

/* (6) The rotation on attention-like rows (outlier channels) and on spikes (one spike
 * rotates to +-5 * norm everywhere; two of 1e3 and 1e-3 are wide unrotated). */
static void test_hadamard(void **state)
{
    (void)state;
    if (!g_dev) skip();
    enum { rows = 9 };
    float x[rows * MAX_D], k[rows * MAX_D], v[rows * MAX_D];
    for (int di = 0; di < 3; di++)
        for (int ri = 0; ri < 2; ri++) {
            const int d = dims[di];
            tu_rng rng = {(uint64_t)(5000 * d + ri)};
            tu_fill_attention(&rng, x, k, v, 1, 1, 1, rows, rows, d);
            for (int i = 0; i < d; i++) x[i] = i == d / 3 ? 5.0f : 0.0f;
            for (int i = 0; i < d; i++) x[d + i] = i == 0 ? -1e-3f : i == d - 1 ? 1e3f : 0.0f;
            run_check(x, rows, d, rows, rows, 1, rule_of(ri));
            run_check(x, rows, d, rows, rows, 0, rule_of(ri));
            run_check(k, rows, d, rows, rows, 1, rule_of(ri));
        }
}

/* (8) Heads of n = 5 rows padded to 8: padding rows are written as zeros. */
static void test_padding(void **state)
{
    (void)state;
    if (!g_dev) skip();
    enum { n = 5, n_pad = 8 };
    float x[2 * n * MAX_D];
    for (int di = 0; di < 3; di++)
        for (int had = 0; had < 2; had++) {
            const int d = dims[di];
            tu_rng rng = {(uint64_t)(6000 * d + had)};
            tu_fill_normal(&rng, x, (int64_t)2 * n * d, 2.0f);
            for (int i = 0; i < 32; i++) x[n * d + i] *= 4096.0f; /* head 1, row 0: wide when d > 32 */
            run_check_both_loads(x, 2 * n, d, n, n_pad, had, rule_of(had));
            run_check_both_loads(x, n, d, n, n_pad, had, rule_of(had)); /* one head */
        }
}

/* (8b) Seven heads of n = 37 rows padded to 40: 280 rows, several workgroups of either form
 * (the tests above fit in one or two), the last one partly past the end. */
static void test_many_rows(void **state)
{
    (void)state;
    if (!g_dev) skip();
    enum { heads = 7, n = 37, n_pad = 40 };
    static float x[heads * n * MAX_D];
    for (int di = 0; di < 3; di++)
        for (int had = 0; had < 2; had++) {
            const int d = dims[di];
            tu_rng rng = {(uint64_t)(6500 * d + had)};
            tu_fill_normal(&rng, x, (int64_t)heads * n * d, 2.0f);
            for (int r = 0; r < heads * n; r += 11) x[r * d] *= 4096.0f; /* some wide rows */
            run_check_both_loads(x, heads * n, d, n, n_pad, had, rule_of(had));
        }
}

/* (9) The ends of the E8M0 range: subnormal inputs (block exponent -127, scale 2^-127 itself
 * subnormal) and values near 2^124. The rotation only where everything stays normal: its
 * float arithmetic on subnormals is the device's business, the format's exactness is not. */
static void test_magnitudes(void **state)
{
    (void)state;
    if (!g_dev) skip();
    enum { rows = 8, d = 128 };
    static const int shift[] = {-140, -130, -100, 120};
    float x[rows * d];
    for (int si = 0; si < 4; si++)
        for (int ri = 0; ri < 2; ri++)
            for (int had = 0; had < 2; had++) {
                if (had && shift[si] < -100) continue;
                tu_rng rng = {(uint64_t)(7000 + 10 * si + 2 * ri + had)};
                tu_fill_normal(&rng, x, (int64_t)rows * d, 1.0f);
                for (int i = 0; i < rows * d; i++) x[i] = ldexpf(x[i], shift[si] + (i / 32) % 3);
                run_check(x, rows, d, rows, rows, had, rule_of(ri));
            }
}

/* (10) Last: a device with subgroup shuffles ran the subgroup form at every head size above,
 * so its checks were not skipped silently. */
static void test_subgroup_form_ran(void **state)
{
    (void)state;
    if (!g_dev) skip();
    if (!(g_dev->probe->caps.flags & MXA_VK_F_SUBGROUP_SHUFFLE) || !vk_kernel_available(VK_K_PREP_QK_SG_I8)) {
        fprintf(stderr, "no subgroup shuffles (or prep_qk_subgroup not built): the shared-memory form only\n");
        skip();
    }
    uint32_t per, sg;
    for (int di = 0; di < 3; di++) assert_true(vk_prep_qk_subgroup(g_dev, (uint64_t)dims[di], &per, &sg));
    fprintf(stderr, "the subgroup form ran %d checks\n", g_subgroup_checks);
    assert_true(g_subgroup_checks > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gaussian),        cmocka_unit_test(test_outlier_block), cmocka_unit_test(test_zero_blocks),
        cmocka_unit_test(test_spread_boundary), cmocka_unit_test(test_hadamard),      cmocka_unit_test(test_padding),
        cmocka_unit_test(test_many_rows),        cmocka_unit_test(test_magnitudes),      cmocka_unit_test(test_subgroup_form_ran),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
