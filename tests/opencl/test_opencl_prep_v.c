/*
 * mxa_prep_v_i8 (prep.cl), the V prep of the tensor-core kernel cl-mma-ptx, run on the test's
 * OpenCL device (CI: PoCL; cl-mma-ptx itself needs NVIDIA). Its two passes put each column's
 * codes on one unit 2^(E - 4), E the column's largest block exponent, so that the attention
 * kernel can chain a tile's key blocks in one int32 product. Checked against the host's
 * quantizer for every key, column and block: code x factor x 2^(E - 4) is exactly the MXFP4
 * value; |code| <= 96; the factor is 1 exactly where the block lies within 3 binades of E, and
 * a key block is flagged exactly where some column's block does not. Data: blocks 2^-2 and
 * 2^-6 below the rest, an all-zero column, an all-zero block, a tail past the last key, both
 * exponent rules.
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

#include "backends/opencl/cl_internal.h"
#include "runtime/mxfp4.h"

enum { HKV = 2, N = 200, NPAD = 256, D = 64, NBLK = NPAD / 32 };

/* prep.cl's layout of a 32-key block: byte p holds key v_key(p); word w sits at word_pos(w) */
static int v_key(int p)
{
    const int w = p >> 2, i = p & 3, t = w & 3;
    return (w >= 4 ? 16 : 0) + (i < 2 ? 2 * t + i : 8 + 2 * t + (i - 2));
}
static int word_pos(int w) { return (w & 3) * 2 + (w >> 2); }

static float value(int h, int j, int c)
{
    if (c == 5) return 0.0f;                      /* a column with no nonzero block */
    if (c == 9 && j / 32 == 3) return 0.0f;       /* a zero block inside a nonzero column */
    const float x = sinf(0.37f * (float)(h * 7919 + j * 131 + c * 17)) * (1.0f + (float)(c % 7));
    const int blk = j / 32;
    if ((blk + h) % 3 == 1) return x * (1.0f / 64.0f); /* 6 binades down: a factor, its block flagged */
    if ((blk + c) % 4 == 2) return x * 0.25f;          /* 2 binades down: shifted codes */
    return x;
}

static cl_impl *g_dev;
static mxa_probed_device g_devs[8];
static int g_count;

static int setup(void **state)
{
    (void)state;
    char reason[256] = "";
    if (mxa_cl_probe(g_devs, 8, &g_count, reason, sizeof reason) != MXA_OK || g_count == 0) {
        fprintf(stderr, "no OpenCL device (%s): skipped\n", reason);
        return 0;
    }
    void *impl = NULL;
    if (mxa_cl_open(&g_devs[0], &impl) != MXA_OK) {
        fprintf(stderr, "opening %s failed: %s\n", g_devs[0].info.name, mxa_last_error_message());
        return -1;
    }
    g_dev = impl;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (g_dev) mxa_cl_close(g_dev);
    mxa_cl_release(g_devs, g_count);
    g_dev = NULL;
    return 0;
}

static void check_rule(mxa_rule rule)
{
    const mxa_cl_api *cl = g_dev->cl;
    static float x[HKV * N * D];
    for (int h = 0; h < HKV; h++)
        for (int j = 0; j < N; j++)
            for (int c = 0; c < D; c++) x[(h * N + j) * D + c] = value(h, j, c);
    cl_mem xb, out, exps, colx;
    const size_t colx_words = (size_t)HKV * (D + NBLK);
    assert_int_equal(mxa_cl_scratch(g_dev, SCRATCH_V, sizeof x, &xb), MXA_OK);
    assert_int_equal(mxa_cl_scratch(g_dev, SCRATCH_VP, (size_t)HKV * D * NPAD, &out), MXA_OK);
    assert_int_equal(mxa_cl_scratch(g_dev, SCRATCH_VS, (size_t)HKV * NBLK * D * 4, &exps), MXA_OK);
    assert_int_equal(mxa_cl_scratch(g_dev, SCRATCH_VX, colx_words * 4, &colx), MXA_OK);
    assert_int_equal(cl->EnqueueWriteBuffer(g_dev->queue, xb, CL_TRUE, 0, sizeof x, x, 0, NULL, NULL), CL_SUCCESS);
    const cl_uint zero = 0;
    assert_int_equal(cl->EnqueueFillBuffer(g_dev->queue, colx, &zero, 4, 0, colx_words * 4, 0, NULL, NULL), CL_SUCCESS);
    cl_program prog;
    cl_kernel k;
    assert_int_equal(mxa_cl_program(g_dev, CL_FAMILY_PREP, "-cl-std=CL1.2", &prog), MXA_OK);
    assert_int_equal(mxa_cl_kernel(g_dev, prog, "mxa_prep_v_i8", &k), MXA_OK);
    const cl_rule_args ra = mxa_cl_rule_args(rule);
    const cl_ulong off = 0;
    const cl_int n = N, npad = NPAD, d = D, has_klen = 0, hkv = HKV, in16 = 0;
    for (cl_int pass = 0; pass < 2; pass++) {
        cl_args a = {cl, k, 0, CL_SUCCESS};
        mxa_cl_arg(&a, sizeof xb, &xb);
        mxa_cl_arg(&a, sizeof off, &off);
        mxa_cl_arg(&a, sizeof in16, &in16); /* float32 input */
        mxa_cl_arg(&a, sizeof n, &n);
        mxa_cl_arg(&a, sizeof npad, &npad);
        mxa_cl_arg(&a, sizeof d, &d);
        mxa_cl_arg(&a, sizeof xb, &xb); /* key lengths: unused (has_klen 0) */
        mxa_cl_arg(&a, sizeof has_klen, &has_klen);
        mxa_cl_arg(&a, sizeof hkv, &hkv);
        mxa_cl_arg(&a, sizeof ra.ceil_rule, &ra.ceil_rule);
        mxa_cl_arg(&a, sizeof ra.thr, &ra.thr);
        mxa_cl_arg(&a, sizeof ra.pow2_dec, &ra.pow2_dec);
        mxa_cl_arg(&a, sizeof out, &out);
        mxa_cl_arg(&a, sizeof exps, &exps);
        mxa_cl_arg(&a, sizeof colx, &colx);
        mxa_cl_arg(&a, sizeof pass, &pass);
        const size_t global[3] = {D, NBLK, HKV};
        assert_int_equal(mxa_cl_launch(g_dev, &a, 3, global, NULL, NULL, NULL, "mxa_prep_v_i8"), MXA_OK);
    }
    cl->ReleaseKernel(k);
    static int8_t codes[HKV * D * NPAD];
    static float factor[HKV * NBLK * D];
    static cl_uint cx[HKV * (D + NBLK)];
    assert_int_equal(cl->EnqueueReadBuffer(g_dev->queue, out, CL_TRUE, 0, sizeof codes, codes, 0, NULL, NULL), CL_SUCCESS);
    assert_int_equal(cl->EnqueueReadBuffer(g_dev->queue, exps, CL_TRUE, 0, sizeof factor, factor, 0, NULL, NULL), CL_SUCCESS);
    assert_int_equal(cl->EnqueueReadBuffer(g_dev->queue, colx, CL_TRUE, 0, sizeof cx, cx, 0, NULL, NULL), CL_SUCCESS);

    int low_blocks = 0, shifted_blocks = 0;
    for (int h = 0; h < HKV; h++) {
        int flagged[NBLK] = {0};
        for (int c = 0; c < D; c++) {
            /* the host's exponents and values, block by block */
            float want[NPAD];
            int e[NBLK], emax = -1000;
            for (int b = 0; b < NBLK; b++) {
                float m = 0.0f;
                for (int j = 0; j < 32; j++) {
                    const int key = b * 32 + j;
                    want[key] = key < N ? x[(h * N + key) * D + c] : 0.0f;
                    m = fmaxf(m, fabsf(want[key]));
                }
                e[b] = m == 0.0f ? -1000 : mxa_shared_exponent(m, rule);
                if (e[b] > emax) emax = e[b];
                mxa_fake_quantize_block(want + b * 32, 32, rule);
            }
            assert_int_equal(cx[h * D + c], emax == -1000 ? 0u : (cl_uint)(emax + 128));
            for (int b = 0; b < NBLK; b++) {
                const float f = factor[(h * NBLK + b) * D + c];
                const int low = e[b] != -1000 && e[b] < emax - 3;
                assert_true(low ? f == ldexpf(1.0f, e[b] - emax + 3) : f == 1.0f);
                flagged[b] |= low;
                low_blocks += low;
                shifted_blocks += e[b] != -1000 && e[b] < emax && !low;
                const int8_t *blk = codes + ((size_t)(h * D + c) * NPAD + (size_t)b * 32);
                for (int w = 0; w < 8; w++)
                    for (int i = 0; i < 4; i++) {
                        const int code = blk[word_pos(w) * 4 + i], key = b * 32 + v_key(4 * w + i);
                        assert_true(code >= -96 && code <= 96);
                        const double got = emax == -1000 ? 0.0 : ldexp((double)code * f, emax - 4);
                        if (got != (double)want[key])
                            fail_msg("head %d column %d key %d: code %d x %g x 2^%d = %g, MXFP4 gives %g", h, c, key, code,
                                     (double)f, emax - 4, got, (double)want[key]);
                    }
            }
        }
        for (int b = 0; b < NBLK; b++) assert_int_equal(cx[HKV * D + h * NBLK + b] != 0, flagged[b]);
    }
    /* the data reach every case: blocks with a factor and blocks shifted by 1..3 */
    assert_true(low_blocks > 0 && shifted_blocks > 0);
}

static void test_prep_v_aligned(void **state)
{
    (void)state;
    if (!g_dev) {
        skip();
        return;
    }
    check_rule((mxa_rule){MXA_RULE_OCP, 0.0f});
    check_rule((mxa_rule){MXA_RULE_CEIL, 7.25f});
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_prep_v_aligned)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
