/*
 * Bias, mask, key lengths and causal alignment (docs/attention-inputs.md) in the Vulkan
 * attention kernels: against the reference at the same Bc, and the invariants that must
 * hold bit for bit on one device (all-true mask == no mask, zero bias == no bias, a mask ==
 * a -inf bias, key lengths == one call per batch with Nk = L_b, top-left == bottom-right at
 * Nq = Nk). CTest runs it once per kernel lavapipe has (MXA_KERNEL=scalar, intdot); on a GPU
 * MXA_KERNEL names a cooperative-matrix kernel.
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

#include "extras_problem.h"
#include "testutil.h"
#include "vk_test_common.h"

/* As test_vulkan_attention.c: block products are exact, so only fp32 summation order,
 * exp() ulps and the log2(e) folded into the bias differ; an ulp moving one P~ across an
 * E2M1 boundary flips one code (NMSE ~1e-8..1e-7). A wrong index or mask gives > 1e-3. */
static const double nmse_limit[3] = {/* mxattention */ 1e-6, /* ocp-direct */ 1e-6, /* fp32 */ 1e-10};

static mxa_runtime *rt;
static mxa_device *dev;
static const char *kernel; /* MXA_KERNEL, or NULL */
static double worst[3];

static int setup(void **state)
{
    (void)state;
    kernel = getenv("MXA_KERNEL");
    if (!vkt_open(&rt, &dev)) return vkt_required() ? -1 : 0;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int r = 0; r < 3; r++) print_message("worst NMSE %s: %.3g\n", mxa_recipe_name((mxa_recipe)r), worst[r]);
    vkt_close();
    return 0;
}


static int64_t rows_of(const problem *p) { return p->b * p->h * p->nq; }

/* Runs p on the Vulkan device (vk = 1) or the reference (vk = 0) into p->o / p->lse. */
static void run(problem *p, const mxa_attention_desc *base, int vk)
{
    mxa_attention_desc desc = *base;
    mxa_tensor tq = tu_tensor(p->q, p->b, p->h, p->nq, p->d), tk = tu_tensor(p->k, p->b, p->hkv, p->nk, p->d);
    mxa_tensor tv = tu_tensor(p->v, p->b, p->hkv, p->nk, p->d), to = tu_tensor(p->o, p->b, p->h, p->nq, p->d);
    mxa_tensor tl = tu_tensor(p->lse, p->b, p->h, p->nq, 1), tb, tm;
    mxa_buffer *mbuf = NULL;
    if (p->bias) {
        tb = tu_tensor(p->bias, p->bb, p->bh, p->nq, p->nk);
        desc.bias = &tb;
    }
    if (p->mask) {
        assert_int_equal(mxa_tensor_init(&tm, MXA_BOOL, p->mb, p->mh, p->nq, p->nk, p->mask), MXA_OK);
        if (vk && p->mask_offset) {
            const size_t bytes = (size_t)(p->mb * p->mh * p->nq * p->nk);
            /* the exact size, ending inside a word: the kernels read the mask as words, so
             * mxa must give the buffer its whole last word */
            assert_int_equal(mxa_buffer_create(dev, p->mask_offset + bytes, &mbuf), MXA_OK);
            assert_int_equal(mxa_buffer_upload(mbuf, p->mask_offset, p->mask, bytes), MXA_OK);
            tm.data = NULL;
            tm.buffer = mbuf;
            tm.offset = p->mask_offset;
        }
        desc.mask = &tm;
    }
    desc.key_lengths = p->lengths;
    if (!vk) {
        assert_int_equal(mxa_reference_attention(&desc, desc.bc, &tq, &tk, &tv, &to, &tl, NULL), MXA_OK);
        return;
    }
    mxa_attention_info info;
    const mxa_status st = mxa_attention(dev, &desc, &tq, &tk, &tv, &to, &tl, &info);
    if (st) print_message("mxa_attention: %s\n", mxa_last_error_message());
    assert_int_equal(st, MXA_OK);
    assert_int_equal(info.bc, desc.bc);
    /* the kernel under test ran (unquantized P has no exact int8 form: intdot leaves it to scalar) */
    if (kernel && (desc.quantize & MXA_QUANT_P) && !strstr(info.variant, kernel)) {
        print_message("MXA_KERNEL=%s but the call ran %s\n", kernel, info.variant);
        fail();
    }
    mxa_buffer_destroy(mbuf);
}

/* p on the device against the reference: NMSE of o, lse to 1e-3, empty rows exact. */
static void check_against_reference(problem *p, const mxa_attention_desc *desc, mxa_recipe rec, const char *what)
{
    const int r = (int)rec;
    const int64_t n = rows_of(p) * p->d;
    float *ref = malloc((size_t)n * 4), *ref_lse = malloc((size_t)rows_of(p) * 4);
    assert_true(ref && ref_lse);
    run(p, desc, 0);
    memcpy(ref, p->o, (size_t)n * 4);
    memcpy(ref_lse, p->lse, (size_t)rows_of(p) * 4);
    run(p, desc, 1);
    for (int64_t i = 0; i < rows_of(p); i++) {
        if (isinf(ref_lse[i])) {
            if (!(isinf(p->lse[i]) && p->lse[i] < 0)) print_message("%s: row %lld lse %g, reference -inf\n", what, (long long)i, (double)p->lse[i]);
            assert_true(isinf(p->lse[i]) && p->lse[i] < 0);
            for (int64_t c = 0; c < p->d; c++) assert_true(p->o[i * p->d + c] == 0.0f);
        } else {
            const double err = fabs((double)p->lse[i] - ref_lse[i]);
            if (!(err < 1e-3 * (1.0 + fabs(ref_lse[i]))))
                print_message("%s: row %lld lse %g, reference %g\n", what, (long long)i, (double)p->lse[i], (double)ref_lse[i]);
            assert_true(err < 1e-3 * (1.0 + fabs(ref_lse[i])));
        }
    }
    const double e = tu_nmse(p->o, ref, n);
    if (e > worst[r]) worst[r] = e;
    if (e > nmse_limit[r]) {
        print_message("%s (%s): NMSE %.3g\n", what, mxa_recipe_name((mxa_recipe)r), e);
        for (int64_t i = 0; i < rows_of(p); i++) {
            const double ei = tu_max_abs_diff(p->o + i * p->d, ref + i * p->d, p->d);
            if (ei > 1e-5) print_message("  row %lld: max |diff| %.3g lse %.9g ref %.9g\n", (long long)i, ei, (double)p->lse[i], (double)ref_lse[i]);
        }
    }
    assert_true(e <= nmse_limit[r]);
    free(ref), free(ref_lse);
}

/* p on the device; o and lse copied out (caller frees). */
static void run_device_copy(problem *p, const mxa_attention_desc *desc, float **o, float **lse)
{
    run(p, desc, 1);
    *o = malloc((size_t)(rows_of(p) * p->d) * 4);
    *lse = malloc((size_t)rows_of(p) * 4);
    assert_true(*o && *lse);
    memcpy(*o, p->o, (size_t)(rows_of(p) * p->d) * 4);
    memcpy(*lse, p->lse, (size_t)rows_of(p) * 4);
}

static void assert_same_as(const problem *p, const float *o, const float *lse)
{
    assert_memory_equal(p->o, o, (size_t)(rows_of(p) * p->d) * 4);
    assert_memory_equal(p->lse, lse, (size_t)rows_of(p) * 4);
}

static const mxa_recipe recipes[3] = {MXA_RECIPE_MXATTENTION, MXA_RECIPE_OCP_DIRECT, MXA_RECIPE_FP32};

/* ------------------------------------------------------------------ bias */

/* Relative-position biases [1, H] in -11..+3 (all-mpnet-base-v2's range) and [B, 1], an
 * ALiBi bias with bottom-right causal, and -inf entries: against the reference. Tails in
 * both Nq (33: a partial workgroup) and Nk (100: a partial tile), GQA. */
static void test_bias(void **state)
{
    (void)state;
    if (!dev) skip();
    for (int ri = 0; ri < 3; ri++) {
        problem p = make(11 + (uint64_t)ri, 2, 4, 2, 33, 100, 64);
        for (int shape = 0; shape < 2; shape++) {
            add_bias(&p, shape ? 2 : 1, shape ? 1 : 4);
            tu_rng g = {20 + (uint64_t)shape};
            for (int64_t e = 0; e < p.bb * p.bh * p.nq * p.nk; e++) p.bias[e] = (float)(14.0 * tu_uniform(&g) - 11.0);
            p.bias[5] = -INFINITY;         /* one key of row 0 hidden by the bias */
            p.bias[p.nk + 63] = -INFINITY; /* the last key of row 1's first tile */
            const mxa_attention_desc desc = recipe(recipes[ri], 0);
            check_against_reference(&p, &desc, recipes[ri], shape ? "bias [B,1]" : "bias [1,H]");
            free(p.bias);
            p.bias = NULL;
        }
        /* ALiBi: -slope_h * (i - j) with slope_h = 2^-(h + 1), bottom-right aligned */
        add_bias(&p, 1, 4);
        for (int64_t h = 0; h < 4; h++)
            for (int64_t i = 0; i < p.nq; i++)
                for (int64_t j = 0; j < p.nk; j++)
                    p.bias[(h * p.nq + i) * p.nk + j] = -ldexpf(1.0f, -(int)h - 1) * (float)(i + p.nk - p.nq - j);
        mxa_attention_desc desc = recipe(recipes[ri], MXA_CAUSAL_BOTTOM_RIGHT);
        check_against_reference(&p, &desc, recipes[ri], "alibi");
        drop(&p);
    }
}

/* ------------------------------------------------------------------ mask */

/* A [B, 1] padding mask (batch 1 sees its first 70 keys), then a random mask [B, H] with a
 * fully hidden row and a row that sees one key, in a device buffer at an odd byte offset
 * (the kernels read bytes out of words): against the reference. */
static void test_mask(void **state)
{
    (void)state;
    if (!dev) skip();
    for (int ri = 0; ri < 3; ri++) {
        problem p = make(31 + (uint64_t)ri, 2, 2, 1, 40, 130, 64);
        const mxa_attention_desc desc = recipe(recipes[ri], 0);
        add_mask(&p, 2, 1);
        for (int64_t i = 0; i < p.nq; i++) memset(p.mask + (p.nq + i) * p.nk + 70, 0, (size_t)(p.nk - 70));
        check_against_reference(&p, &desc, recipes[ri], "padding mask");
        free(p.mask);
        add_mask(&p, 2, 2);
        tu_rng g = {40};
        for (int64_t e = 0; e < 4 * p.nq * p.nk; e++) p.mask[e] = tu_uniform(&g) < 0.7;
        memset(p.mask + 3 * p.nk, 0, (size_t)p.nk); /* batch 0, head 0, row 3: nothing visible */
        memset(p.mask + (p.nq + 5) * p.nk, 0, (size_t)p.nk); /* head 1, row 5: key 129 alone */
        p.mask[(p.nq + 5) * p.nk + 129] = 1;
        p.mask_offset = 3;
        check_against_reference(&p, &desc, recipes[ri], "random mask in a buffer");
        assert_true(isinf(p.lse[3]) && p.lse[3] < 0);
        drop(&p);
    }
}

/* ------------------------------------------------------------ key lengths */

/* Key lengths {37, 150, 0, 1} with a [B, 1] bias, without and with bottom-right causal
 * aligned to L_b, against the reference; then each batch bit for bit against a call of that
 * batch alone with Nk = L_b (bias cut to those columns). The keys after 37 hold large V
 * values, so V's block holding key 36 must be zero-padded, not filled with them. Nq 100 with L_b 37
 * leaves the first 63 rows of batch 0 without a key under causal: whole workgroups whose
 * tiles are all skipped. */
static void test_key_lengths(void **state)
{
    (void)state;
    if (!dev) skip();
    const int32_t lengths[4] = {37, 150, 0, 1};
    for (int ri = 0; ri < 3; ri++)
        for (int causal = 0; causal < 2; causal++) {
            problem p = make(50 + (uint64_t)(ri * 2 + causal), 4, 2, 1, 100, 150, 64);
            for (int64_t e = 0; e < p.b * p.hkv * p.nk * p.d; e++) p.v[e] += 8.0f * (float)((e / p.d) % p.nk >= 37);
            /* and their first 32 K values 16 times the rest: "wide" int8 rows (prep_qk.comp), which
             * must not move a tile of narrow keys to the wide path when they do not exist */
            for (int64_t e = 0; e < p.b * p.hkv * p.nk * p.d; e++)
                if ((e / p.d) % p.nk >= 37 && e % p.d < 32) p.k[e] *= 16.0f;
            p.lengths = malloc(sizeof lengths);
            memcpy(p.lengths, lengths, sizeof lengths);
            add_bias(&p, 4, 1);
            tu_rng g = {60};
            for (int64_t e = 0; e < 4 * p.nq * p.nk; e++) p.bias[e] = (float)(4.0 * tu_uniform(&g) - 3.0);
            const mxa_attention_desc desc = recipe(recipes[ri], causal);
            check_against_reference(&p, &desc, recipes[ri], causal ? "key lengths, causal" : "key lengths");
            for (int64_t b = 0; b < 4; b++) {
                const int64_t n = lengths[b], per = 2 * p.nq;
                if (n == 0) { /* no key: o = 0, lse = -inf */
                    for (int64_t r = b * per; r < (b + 1) * per; r++) {
                        assert_true(isinf(p.lse[r]) && p.lse[r] < 0);
                        for (int64_t c = 0; c < p.d; c++) assert_true(p.o[r * p.d + c] == 0.0f);
                    }
                    continue;
                }
                problem a = make(0, 1, 2, 1, p.nq, n, p.d);
                memcpy(a.q, p.q + b * per * p.d, (size_t)(per * p.d) * 4);
                memcpy(a.k, p.k + b * p.nk * p.d, (size_t)(n * p.d) * 4);
                memcpy(a.v, p.v + b * p.nk * p.d, (size_t)(n * p.d) * 4);
                add_bias(&a, 1, 1);
                for (int64_t i = 0; i < p.nq; i++) memcpy(a.bias + i * n, p.bias + (b * p.nq + i) * p.nk, (size_t)n * 4);
                run(&a, &desc, 1);
                assert_memory_equal(a.o, p.o + b * per * p.d, (size_t)(per * p.d) * 4);
                assert_memory_equal(a.lse, p.lse + b * per, (size_t)per * 4);
                drop(&a);
            }
            drop(&p);
        }
}

/* --------------------------------------------------------- causal alignment */

/* Top-left causal at Nq < Nk and Nq > Nk (no row is empty; bottom-right would empty rows)
 * against the reference; at Nq = Nk top-left equals bottom-right bit for bit. */
static void test_top_left(void **state)
{
    (void)state;
    if (!dev) skip();
    const int64_t sizes[3][2] = {{20, 150}, {150, 70}, {90, 90}};
    for (int ri = 0; ri < 3; ri++)
        for (int si = 0; si < 3; si++) {
            problem p = make(70 + (uint64_t)(ri * 3 + si), 1, 2, 2, sizes[si][0], sizes[si][1], 64);
            const mxa_attention_desc tl = recipe(recipes[ri], MXA_CAUSAL_TOP_LEFT);
            check_against_reference(&p, &tl, recipes[ri], "top-left");
            for (int64_t r = 0; r < rows_of(&p); r++) assert_true(isfinite(p.lse[r]));
            if (p.nq == p.nk) {
                float *o, *lse;
                run_device_copy(&p, &tl, &o, &lse);
                memset(p.o, 0xff, (size_t)(rows_of(&p) * p.d) * 4); /* NaN: the next run must write it all */
                memset(p.lse, 0xff, (size_t)rows_of(&p) * 4);
                const mxa_attention_desc br = recipe(recipes[ri], MXA_CAUSAL_BOTTOM_RIGHT);
                run(&p, &br, 1);
                assert_same_as(&p, o, lse);
                free(o), free(lse);
            }
            drop(&p);
        }
}

/* ------------------------------------------------------------- invariants */

/* On one device, bit for bit: an all-true mask and a zero bias change nothing (their
 * pipelines read them, the plain one does not), and a mask equals a -inf bias on the same
 * keys; then everything at once (bias, mask, key lengths, top-left) against the reference. */
static void test_neutral_and_equivalent(void **state)
{
    (void)state;
    if (!dev) skip();
    for (int ri = 0; ri < 3; ri++) {
        problem p = make(90 + (uint64_t)ri, 2, 2, 2, 65, 97, 64);
        const mxa_attention_desc desc = recipe(recipes[ri], MXA_CAUSAL_BOTTOM_RIGHT);
        float *o, *lse;
        run_device_copy(&p, &desc, &o, &lse);
        add_mask(&p, 1, 1);
        run(&p, &desc, 1);
        assert_same_as(&p, o, lse);
        free(p.mask);
        p.mask = NULL;
        add_bias(&p, 2, 2);
        run(&p, &desc, 1);
        assert_same_as(&p, o, lse);
        free(o), free(lse);

        /* a mask, and the same keys hidden by -inf in a bias */
        tu_rng g = {100};
        for (int64_t e = 0; e < 4 * p.nq * p.nk; e++) p.bias[e] = tu_uniform(&g) < 0.3 ? -INFINITY : 0.0f;
        run_device_copy(&p, &desc, &o, &lse);
        float *bias = p.bias;
        p.bias = NULL;
        add_mask(&p, 2, 2);
        for (int64_t e = 0; e < 4 * p.nq * p.nk; e++) p.mask[e] = bias[e] == 0.0f;
        run(&p, &desc, 1);
        assert_same_as(&p, o, lse);
        free(o), free(lse);

        /* all at once */
        p.bias = bias;
        for (int64_t e = 0; e < 4 * p.nq * p.nk; e++) p.bias[e] = (float)(3.0 * tu_uniform(&g) - 2.0);
        p.lengths = malloc(2 * sizeof(int32_t));
        p.lengths[0] = 97, p.lengths[1] = 33;
        const mxa_attention_desc tl = recipe(recipes[ri], MXA_CAUSAL_TOP_LEFT);
        check_against_reference(&p, &tl, recipes[ri], "everything");
        drop(&p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bias),
        cmocka_unit_test(test_mask),
        cmocka_unit_test(test_key_lengths),
        cmocka_unit_test(test_top_left),
        cmocka_unit_test(test_neutral_and_equivalent),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
