/*
 * The optional inputs of docs/attention-inputs.md (bias, mask, key lengths, causal
 * alignment), 16-bit outputs and lse in device buffers, and asynchronous calls: on
 * the reference and the CPU device, each with a case small enough to check by hand,
 * plus the float64 definition and the misuse errors.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/tensor.h"
#include "extras_problem.h"
#include "testutil.h"

static mxa_runtime *rt;
static mxa_device *cpu;

static int setup(void **state)
{
    (void)state;
    if (mxa_runtime_create(NULL, &rt) || mxa_device_open(rt, "cpu", &cpu)) return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mxa_device_close(cpu);
    mxa_runtime_destroy(rt);
    return 0;
}


typedef struct call_tensors {
    mxa_tensor q, k, v, o, lse, bias, mask;
    mxa_attention_desc desc;
} call_tensors;

/* The tensors of p (out/lse into p->o / p->lse) and desc with p's optional inputs. */
static void tensors(problem *p, const mxa_attention_desc *desc, call_tensors *t)
{
    t->q = tu_tensor(p->q, p->b, p->h, p->nq, p->d);
    t->k = tu_tensor(p->k, p->b, p->hkv, p->nk, p->d);
    t->v = tu_tensor(p->v, p->b, p->hkv, p->nk, p->d);
    t->o = tu_tensor(p->o, p->b, p->h, p->nq, p->d);
    t->lse = tu_tensor(p->lse, p->b, p->h, p->nq, 1);
    t->desc = *desc;
    if (p->bias) {
        t->bias = tu_tensor(p->bias, p->bb, p->bh, p->nq, p->nk);
        t->desc.bias = &t->bias;
    }
    if (p->mask) {
        assert_int_equal(mxa_tensor_init(&t->mask, MXA_BOOL, p->mb, p->mh, p->nq, p->nk, p->mask), MXA_OK);
        t->desc.mask = &t->mask;
    }
    t->desc.key_lengths = p->lengths;
}

static mxa_status run_ref(problem *p, const mxa_attention_desc *desc)
{
    call_tensors t;
    tensors(p, desc, &t);
    return mxa_reference_attention(&t.desc, desc->bc, &t.q, &t.k, &t.v, &t.o, &t.lse, NULL);
}

static mxa_status run_cpu(problem *p, const mxa_attention_desc *desc)
{
    call_tensors t;
    tensors(p, desc, &t);
    mxa_attention_info info;
    mxa_status st = mxa_attention(cpu, &t.desc, &t.q, &t.k, &t.v, &t.o, &t.lse, &info);
    if (!st) assert_int_equal(info.bc, desc->bc);
    return st;
}

/* Both runs of p: reference into ref/ref_lse, CPU into p->o / p->lse. */
static void run_both(problem *p, const mxa_attention_desc *desc, float *ref, float *ref_lse)
{
    assert_int_equal(run_ref(p, desc), MXA_OK);
    memcpy(ref, p->o, (size_t)(p->b * p->h * p->nq * p->d) * 4);
    memcpy(ref_lse, p->lse, (size_t)(p->b * p->h * p->nq) * 4);
    assert_int_equal(run_cpu(p, desc), MXA_OK);
}

static const float *v_row(const problem *p, int64_t b, int64_t kvh, int64_t j)
{
    return p->v + ((b * p->hkv + kvh) * p->nk + j) * p->d;
}

/* V^ (SPEC §2.2: V in blocks of 32 tokens per channel, zero padding after n tokens) of
 * token j of one kv head: quantized here through mxa_quantize of V transposed. */
static void v_hat_row(const problem *p, int64_t b, int64_t kvh, int64_t n, int64_t j, mxa_rule rule, float *out)
{
    const int64_t d = p->d, cols = (n + 31) / 32 * 32, nblk = cols / 32;
    float *vt = calloc((size_t)(d * cols), 4), *dec = malloc((size_t)(d * cols) * 4);
    uint8_t *codes = malloc((size_t)(d * nblk * 16)), *scales = malloc((size_t)(d * nblk));
    assert_true(vt && dec && codes && scales);
    for (int64_t t = 0; t < n; t++)
        for (int64_t c = 0; c < d; c++) vt[c * cols + t] = v_row(p, b, kvh, t)[c];
    mxa_tensor x = tu_tensor(vt, 1, 1, d, cols);
    assert_int_equal(mxa_quantize(cpu, &x, rule, codes, scales), MXA_OK);
    assert_int_equal(mxa_dequantize(codes, scales, d, cols, dec), MXA_OK);
    for (int64_t c = 0; c < d; c++) out[c] = dec[c * cols + j];
    free(vt), free(dec), free(codes), free(scales);
}

/* ------------------------------------------------------- hand-checked cases */

/* q = 0 makes every score 0: a bias of +20 on key 5 of head 1 (a [1, H] bias) makes it
 * dominate that head; e^-20 quantizes to P^ = 0, so o = V^_5 exactly (mxattention) and
 * o = v_5 to e^-20 (fp32). Head 0 has no bias: its output is the mean of V. */
static void test_bias_makes_one_key_dominate(void **state)
{
    (void)state;
    problem p = make(1, 1, 2, 2, 3, 32, 32); /* one P block: the others' P~ quantize to 0 beside 1 */
    memset(p.q, 0, (size_t)(p.h * p.nq * p.d) * 4);
    add_bias(&p, 1, 2);
    for (int64_t i = 0; i < p.nq; i++) p.bias[(1 * p.nq + i) * p.nk + 5] = 20.0f;
    float want[32];
    for (int r = 0; r < 2; r++) {
        mxa_attention_desc desc = recipe(r ? MXA_RECIPE_FP32 : MXA_RECIPE_MXATTENTION, 0);
        if (r) memcpy(want, v_row(&p, 0, 1, 5), sizeof want);
        else v_hat_row(&p, 0, 1, p.nk, 5, desc.rule, want);
        for (int dev = 0; dev < 2; dev++) {
            assert_int_equal(dev ? run_cpu(&p, &desc) : run_ref(&p, &desc), MXA_OK);
            for (int64_t i = 0; i < p.nq; i++) {
                const float *o = p.o + (1 * p.nq + i) * p.d;
                for (int c = 0; c < 32; c++) {
                    if (r) assert_true(fabsf(o[c] - want[c]) <= 1e-6f * (1.0f + fabsf(want[c])));
                    else assert_true(o[c] == want[c]);
                }
                /* lse = ln(e^20 + 31 e^0) */
                assert_true(fabs(p.lse[p.nq + i] - log(exp(20.0) + 31.0)) < 1e-5);
            }
            if (r) { /* head 0: uniform weights, o = the mean of V (fp32 rounding) */
                for (int c = 0; c < 32; c++) {
                    double mean = 0.0;
                    for (int64_t j = 0; j < p.nk; j++) mean += v_row(&p, 0, 0, j)[c];
                    mean /= (double)p.nk;
                    assert_true(fabs(p.o[c] - mean) < 1e-5);
                }
                assert_true(fabs(p.lse[0] - log(32.0)) < 1e-5);
            }
        }
    }
    drop(&p);
}

/* A mask hiding all but key 7 gives o = V^_7 (mxattention: P^ = 1 exactly) and lse = s_7;
 * a bias of -inf on the same keys hides them identically. */
static void test_mask_leaves_one_key(void **state)
{
    (void)state;
    problem p = make(2, 1, 1, 1, 4, 64, 64); /* a full tile: AVX-512's unmasked softmax meets the -inf */
    add_mask(&p, 1, 1);
    memset(p.mask, 0, (size_t)(p.nq * p.nk));
    for (int64_t i = 0; i < p.nq; i++) p.mask[i * p.nk + 7] = 1;
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 0);
    float want[64];
    v_hat_row(&p, 0, 0, p.nk, 7, desc.rule, want);
    const int64_t n = p.nq * p.d;
    float *masked = malloc((size_t)n * 4), *lse = malloc((size_t)p.nq * 4);
    for (int dev = 0; dev < 2; dev++) {
        assert_int_equal(dev ? run_cpu(&p, &desc) : run_ref(&p, &desc), MXA_OK);
        for (int64_t i = 0; i < p.nq; i++)
            for (int c = 0; c < 64; c++) assert_true(p.o[i * p.d + c] == want[c]);
        memcpy(masked, p.o, (size_t)n * 4);
        memcpy(lse, p.lse, (size_t)p.nq * 4);
        /* the same keys hidden by -inf in a bias instead */
        uint8_t *mask = p.mask;
        p.mask = NULL;
        add_bias(&p, 1, 1);
        for (int64_t e = 0; e < p.nq * p.nk; e++) p.bias[e] = mask[e] ? 0.0f : -INFINITY;
        assert_int_equal(dev ? run_cpu(&p, &desc) : run_ref(&p, &desc), MXA_OK);
        assert_memory_equal(p.o, masked, (size_t)n * 4);
        assert_memory_equal(p.lse, lse, (size_t)p.nq * 4);
        free(p.bias);
        p.bias = NULL;
        p.mask = mask;
    }
    free(masked), free(lse);
    drop(&p);
}

/* Key length 0 gives o = 0 and lse = -inf; a fully masked row the same; the other
 * batch is exactly what it is alone. */
static void test_empty_rows(void **state)
{
    (void)state;
    problem p = make(3, 2, 2, 1, 5, 33, 32);
    p.lengths = malloc(2 * sizeof(int32_t));
    p.lengths[0] = 0, p.lengths[1] = 33;
    add_mask(&p, 2, 1);
    memset(p.mask + (1 * p.nq + 2) * p.nk, 0, (size_t)p.nk); /* batch 1, row 2: nothing visible */
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 0);
    for (int dev = 0; dev < 2; dev++) {
        assert_int_equal(dev ? run_cpu(&p, &desc) : run_ref(&p, &desc), MXA_OK);
        for (int64_t h = 0; h < 2; h++)
            for (int64_t i = 0; i < p.nq; i++) {
                const int64_t rb0 = h * p.nq + i, rb1 = (2 + h) * p.nq + i;
                assert_true(isinf(p.lse[rb0]) && p.lse[rb0] < 0);
                for (int c = 0; c < 32; c++) assert_true(p.o[rb0 * p.d + c] == 0.0f);
                if (i == 2) {
                    assert_true(isinf(p.lse[rb1]) && p.lse[rb1] < 0);
                    for (int c = 0; c < 32; c++) assert_true(p.o[rb1 * p.d + c] == 0.0f);
                } else {
                    assert_true(isfinite(p.lse[rb1]));
                }
            }
    }
    drop(&p);
}

/* Key lengths are lengths: batch b equals a call of that batch alone with Nk = L_b
 * (bias cut to those columns), bit for bit, on the reference and the CPU, for every
 * recipe and with bottom-right causal aligned to L_b. 37 is not a multiple of 32: V's
 * block holding key 36 is zero-padded, not filled with the keys after it. */
static void test_key_lengths_are_lengths(void **state)
{
    (void)state;
    const int32_t lengths[3] = {37, 100, 1};
    const mxa_recipe recipes[3] = {MXA_RECIPE_MXATTENTION, MXA_RECIPE_OCP_DIRECT, MXA_RECIPE_FP32};
    for (int ri = 0; ri < 3; ri++)
        for (int causal = 0; causal < 2; causal++) {
            problem p = make(4 + (uint64_t)ri, 3, 2, 1, 20, 100, 64);
            for (int64_t e = 0; e < p.b * p.hkv * p.nk * p.d; e++) p.v[e] += 8.0f * (float)((e / p.d) % p.nk >= 37);
            p.lengths = malloc(sizeof lengths);
            memcpy(p.lengths, lengths, sizeof lengths);
            add_bias(&p, 3, 1);
            tu_rng g = {9};
            for (int64_t e = 0; e < 3 * p.nq * p.nk; e++) p.bias[e] = (float)(4.0 * tu_uniform(&g) - 3.0);
            mxa_attention_desc desc = recipe(recipes[ri], causal);
            for (int dev = 0; dev < 2; dev++) {
                assert_int_equal(dev ? run_cpu(&p, &desc) : run_ref(&p, &desc), MXA_OK);
                for (int64_t b = 0; b < 3; b++) {
                    const int64_t n = lengths[b];
                    problem a = make(0, 1, 2, 1, 20, n, 64);
                    memcpy(a.q, p.q + b * 2 * p.nq * p.d, (size_t)(2 * p.nq * p.d) * 4);
                    memcpy(a.k, p.k + b * p.nk * p.d, (size_t)(n * p.d) * 4);
                    memcpy(a.v, p.v + b * p.nk * p.d, (size_t)(n * p.d) * 4);
                    add_bias(&a, 1, 1);
                    for (int64_t i = 0; i < p.nq; i++)
                        memcpy(a.bias + i * n, p.bias + (b * p.nq + i) * p.nk, (size_t)n * 4);
                    assert_int_equal(dev ? run_cpu(&a, &desc) : run_ref(&a, &desc), MXA_OK);
                    assert_memory_equal(a.o, p.o + b * 2 * p.nq * p.d, (size_t)(2 * p.nq * p.d) * 4);
                    assert_memory_equal(a.lse, p.lse + b * 2 * p.nq, (size_t)(2 * p.nq) * 4);
                    drop(&a);
                }
            }
            drop(&p);
        }
}

/* Top-left (torch's is_causal) and bottom-right alignment at Nq = 2, Nk = 5 (fp32, exact
 * where one key is visible): top-left row 0 sees key 0 alone (o = v_0), bottom-right row 0
 * sees keys 0..3; at Nq = 5, Nk = 2 bottom-right leaves rows 0..2 empty, top-left none.
 * At Nq = Nk both are the same, bit for bit. */
static void test_causal_alignment(void **state)
{
    (void)state;
    for (int dev = 0; dev < 2; dev++) {
        problem p = make(5, 1, 1, 1, 2, 5, 32);
        mxa_attention_desc tl = recipe(MXA_RECIPE_FP32, MXA_CAUSAL_TOP_LEFT), br = recipe(MXA_RECIPE_FP32, MXA_CAUSAL_BOTTOM_RIGHT);
        float o_tl[64], o_br[64];
        assert_int_equal(dev ? run_cpu(&p, &tl) : run_ref(&p, &tl), MXA_OK);
        memcpy(o_tl, p.o, sizeof o_tl);
        assert_memory_equal(o_tl, v_row(&p, 0, 0, 0), 32 * 4);
        assert_int_equal(dev ? run_cpu(&p, &br) : run_ref(&p, &br), MXA_OK);
        memcpy(o_br, p.o, sizeof o_br);
        assert_true(memcmp(o_br, o_tl, 32 * 4) != 0);
        assert_true(memcmp(o_br + 32, o_tl + 32, 32 * 4) != 0);
        /* the same rows with a mask that spells out each alignment */
        add_mask(&p, 1, 1);
        for (int64_t i = 0; i < 2; i++)
            for (int64_t j = 0; j < 5; j++) p.mask[i * 5 + j] = j <= i;
        mxa_attention_desc none = recipe(MXA_RECIPE_FP32, 0);
        assert_int_equal(dev ? run_cpu(&p, &none) : run_ref(&p, &none), MXA_OK);
        assert_memory_equal(p.o, o_tl, sizeof o_tl);
        for (int64_t i = 0; i < 2; i++)
            for (int64_t j = 0; j < 5; j++) p.mask[i * 5 + j] = j <= i + 3;
        assert_int_equal(dev ? run_cpu(&p, &none) : run_ref(&p, &none), MXA_OK);
        assert_memory_equal(p.o, o_br, sizeof o_br);
        drop(&p);

        problem t = make(6, 1, 1, 1, 5, 2, 32);
        assert_int_equal(dev ? run_cpu(&t, &br) : run_ref(&t, &br), MXA_OK);
        for (int64_t i = 0; i < 5; i++) assert_true(i < 3 ? isinf(t.lse[i]) : isfinite(t.lse[i]));
        assert_int_equal(dev ? run_cpu(&t, &tl) : run_ref(&t, &tl), MXA_OK);
        for (int64_t i = 0; i < 5; i++) assert_true(isfinite(t.lse[i]));
        assert_memory_equal(t.o, v_row(&t, 0, 0, 0), 32 * 4); /* row 0: key 0 alone */
        drop(&t);

        problem s = make(7, 2, 2, 2, 70, 70, 64);
        mxa_attention_desc mtl = recipe(MXA_RECIPE_MXATTENTION, MXA_CAUSAL_TOP_LEFT);
        mxa_attention_desc mbr = recipe(MXA_RECIPE_MXATTENTION, MXA_CAUSAL_BOTTOM_RIGHT);
        const size_t n = (size_t)(4 * 70 * 64) * 4;
        float *first = malloc(n);
        assert_int_equal(dev ? run_cpu(&s, &mtl) : run_ref(&s, &mtl), MXA_OK);
        memcpy(first, s.o, n);
        assert_int_equal(dev ? run_cpu(&s, &mbr) : run_ref(&s, &mbr), MXA_OK);
        assert_memory_equal(first, s.o, n);
        free(first);
        drop(&s);
    }
}

/* Broadcasting: a [1, H] and a [B, 1] bias give what their expansion to [B, H] gives,
 * bit for bit; a zero bias and an all-true mask give what no bias and no mask give. */
static void test_broadcast_and_neutral(void **state)
{
    (void)state;
    problem p = make(8, 2, 3, 3, 17, 45, 32);
    const int64_t n = p.b * p.h * p.nq * p.d, per = p.nq * p.nk;
    float *want = malloc((size_t)n * 4), *plain = malloc((size_t)n * 4);
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 1);
    for (int dev = 0; dev < 2; dev++) {
        assert_int_equal(dev ? run_cpu(&p, &desc) : run_ref(&p, &desc), MXA_OK);
        memcpy(plain, p.o, (size_t)n * 4);
        add_bias(&p, 1, 1);
        add_mask(&p, 1, 1);
        assert_int_equal(dev ? run_cpu(&p, &desc) : run_ref(&p, &desc), MXA_OK);
        assert_memory_equal(p.o, plain, (size_t)n * 4);
        free(p.bias), free(p.mask);
        p.bias = NULL, p.mask = NULL;
        for (int shape = 0; shape < 2; shape++) {
            const int64_t bb = shape ? 2 : 1, bh = shape ? 1 : 3;
            problem small = p;
            add_bias(&small, bb, bh);
            tu_rng g = {10 + (uint64_t)shape};
            for (int64_t e = 0; e < bb * bh * per; e++) small.bias[e] = (float)(14.0 * tu_uniform(&g) - 11.0);
            assert_int_equal(dev ? run_cpu(&small, &desc) : run_ref(&small, &desc), MXA_OK);
            memcpy(want, small.o, (size_t)n * 4);
            problem full = p;
            add_bias(&full, 2, 3);
            for (int64_t b = 0; b < 2; b++)
                for (int64_t h = 0; h < 3; h++)
                    memcpy(full.bias + (b * 3 + h) * per, small.bias + ((shape ? b : 0) * bh + (shape ? 0 : h)) * per,
                           (size_t)per * 4);
            assert_int_equal(dev ? run_cpu(&full, &desc) : run_ref(&full, &desc), MXA_OK);
            assert_memory_equal(full.o, want, (size_t)n * 4);
            assert_true(memcmp(want, plain, (size_t)n * 4) != 0);
            free(small.bias), free(full.bias);
        }
    }
    free(want), free(plain);
    drop(&p);
}

/* The definition in float64 (fp32 recipe): softmax(q k^T scale + bias) v over the visible
 * keys, with a [B, 1] mask, key lengths and both alignments; and the CPU against the
 * reference with every recipe (within fp32 rounding of the same algorithm). */
static void test_definition(void **state)
{
    (void)state;
    for (int causal = 0; causal < 3; causal++) {
        problem p = make(11, 2, 2, 1, 24, 75, 64);
        const int64_t n = p.b * p.h * p.nq * p.d, rows = p.b * p.h * p.nq;
        add_bias(&p, 1, 2);
        add_mask(&p, 2, 1);
        p.lengths = malloc(2 * sizeof(int32_t));
        p.lengths[0] = 75, p.lengths[1] = 50;
        tu_rng g = {12};
        for (int64_t e = 0; e < 2 * p.nq * p.nk; e++) {
            p.bias[e] = (float)(14.0 * tu_uniform(&g) - 11.0);
            p.mask[e] = tu_uniform(&g) > 0.2;
        }
        mxa_attention_desc desc = recipe(MXA_RECIPE_FP32, causal);
        assert_int_equal(run_ref(&p, &desc), MXA_OK);
        const float scale = 0.125f;
        for (int64_t b = 0; b < 2; b++)
            for (int64_t h = 0; h < 2; h++)
                for (int64_t i = 0; i < p.nq; i++) {
                    const int64_t row = (b * 2 + h) * p.nq + i, len = p.lengths[b];
                    double s[75], m = -INFINITY, l = 0.0, o[64] = {0};
                    for (int64_t j = 0; j < len; j++) {
                        const int visible = p.mask[(b * p.nq + i) * p.nk + j] &&
                                            !(causal == 1 && j > i + len - p.nq) && !(causal == 2 && j > i);
                        double dot = 0.0;
                        for (int c = 0; c < 64; c++) dot += (double)p.q[row * 64 + c] * p.k[(b * p.nk + j) * 64 + c];
                        s[j] = visible ? dot * scale + p.bias[(h * p.nq + i) * p.nk + j] : -INFINITY;
                        m = fmax(m, s[j]);
                    }
                    if (m == -INFINITY) {
                        assert_true(isinf(p.lse[row]));
                        for (int c = 0; c < 64; c++) assert_true(p.o[row * 64 + c] == 0.0f);
                        continue;
                    }
                    for (int64_t j = 0; j < len; j++) {
                        const double e = s[j] == -INFINITY ? 0.0 : exp(s[j] - m);
                        l += e;
                        for (int c = 0; c < 64; c++) o[c] += e * v_row(&p, b, 0, j)[c];
                    }
                    for (int c = 0; c < 64; c++) assert_true(fabs(p.o[row * 64 + c] - o[c] / l) < 2e-5);
                    assert_true(fabs(p.lse[row] - (m + log(l))) < 1e-4);
                }
        float *ref = malloc((size_t)n * 4), *ref_lse = malloc((size_t)rows * 4);
        const mxa_recipe recipes[3] = {MXA_RECIPE_MXATTENTION, MXA_RECIPE_OCP_DIRECT, MXA_RECIPE_FP32};
        for (int ri = 0; ri < 3; ri++) {
            desc = recipe(recipes[ri], causal);
            run_both(&p, &desc, ref, ref_lse);
            assert_true(tu_nmse(p.o, ref, n) < 1e-6);
            for (int64_t r = 0; r < rows; r++)
                assert_true(isinf(ref_lse[r]) ? p.lse[r] == ref_lse[r] : fabsf(p.lse[r] - ref_lse[r]) < 1e-4f);
        }
        free(ref), free(ref_lse);
        drop(&p);
    }
}

/* A bias in f16 or strided over a larger array is the same bias (the runtime gathers it). */
static void test_bias_dtypes_and_strides(void **state)
{
    (void)state;
    problem p = make(13, 1, 2, 2, 9, 40, 32);
    add_bias(&p, 1, 2);
    uint16_t *half = malloc((size_t)(2 * 9 * 40) * 2);
    float *wide = malloc((size_t)(2 * 9 * 80) * 4);
    tu_rng g = {14};
    for (int64_t e = 0; e < 2 * 9 * 40; e++) {
        half[e] = mxa_f32_to_f16((float)(6.0 * tu_uniform(&g) - 3.0));
        p.bias[e] = mxa_f16_to_f32(half[e]);
        wide[(e / 40) * 80 + e % 40] = p.bias[e];
    }
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 0);
    const size_t n = (size_t)(2 * 9 * 32) * 4;
    float *want = malloc(n);
    assert_int_equal(run_cpu(&p, &desc), MXA_OK);
    memcpy(want, p.o, n);
    call_tensors t;
    tensors(&p, &desc, &t);
    mxa_tensor hb;
    assert_int_equal(mxa_tensor_init(&hb, MXA_F16, 1, 2, 9, 40, half), MXA_OK);
    t.desc.bias = &hb;
    memset(p.o, 0, n);
    assert_int_equal(mxa_attention(cpu, &t.desc, &t.q, &t.k, &t.v, &t.o, NULL, NULL), MXA_OK);
    assert_memory_equal(p.o, want, n);
    mxa_tensor sb = tu_tensor(wide, 1, 2, 9, 40);
    sb.strides[0] = 2 * 9 * 80, sb.strides[1] = 9 * 80, sb.strides[2] = 80, sb.strides[3] = 1;
    t.desc.bias = &sb;
    memset(p.o, 0, n);
    assert_int_equal(mxa_attention(cpu, &t.desc, &t.q, &t.k, &t.v, &t.o, NULL, NULL), MXA_OK);
    assert_memory_equal(p.o, want, n);
    free(half), free(wide), free(want);
    drop(&p);
}

/* ------------------------------------------------------- device-buffer I/O */

/* f16 and bf16 outputs in a (CPU) device buffer are the f32 result rounded once; lse in a
 * buffer is the host lse; bias and mask may live in buffers too. */
static void test_buffer_outputs(void **state)
{
    (void)state;
    problem p = make(15, 1, 2, 1, 33, 70, 64);
    add_bias(&p, 1, 2);
    add_mask(&p, 1, 1);
    tu_rng g = {16};
    for (int64_t e = 0; e < 2 * p.nq * p.nk; e++) p.bias[e] = (float)(4.0 * tu_uniform(&g) - 3.0);
    for (int64_t e = 0; e < p.nq * p.nk; e++) p.mask[e] = tu_uniform(&g) > 0.1;
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 1);
    const int64_t n = 2 * p.nq * p.d, rows = 2 * p.nq;
    assert_int_equal(run_cpu(&p, &desc), MXA_OK);
    float *want = malloc((size_t)n * 4), *want_lse = malloc((size_t)rows * 4), *lse = malloc((size_t)rows * 4);
    uint16_t *half = malloc((size_t)n * 2);
    memcpy(want, p.o, (size_t)n * 4);
    memcpy(want_lse, p.lse, (size_t)rows * 4);
    call_tensors t;
    tensors(&p, &desc, &t);
    const size_t side = (size_t)(2 * p.nq * p.nk) * 4;
    mxa_buffer *ob, *lb, *sb;
    assert_int_equal(mxa_buffer_create(cpu, (size_t)n * 4 + 64, &ob), MXA_OK);
    assert_int_equal(mxa_buffer_create(cpu, (size_t)rows * 4 + 16, &lb), MXA_OK);
    assert_int_equal(mxa_buffer_create(cpu, side + (size_t)(p.nq * p.nk) + 8, &sb), MXA_OK);
    assert_int_equal(mxa_buffer_upload(sb, 0, p.bias, side), MXA_OK);
    assert_int_equal(mxa_buffer_upload(sb, side + 8, p.mask, (size_t)(p.nq * p.nk)), MXA_OK);
    mxa_tensor bias = t.bias, mask = t.mask, lt = t.lse;
    bias.data = NULL, bias.buffer = sb, bias.offset = 0;
    mask.data = NULL, mask.buffer = sb, mask.offset = side + 8;
    lt.data = NULL, lt.buffer = lb, lt.offset = 16;
    t.desc.bias = &bias, t.desc.mask = &mask;
    const mxa_dtype dts[3] = {MXA_F32, MXA_F16, MXA_BF16};
    for (int i = 0; i < 3; i++) {
        mxa_tensor o;
        assert_int_equal(mxa_tensor_init(&o, dts[i], 1, 2, p.nq, p.d, p.o), MXA_OK);
        o.data = NULL, o.buffer = ob, o.offset = 64;
        assert_int_equal(mxa_attention(cpu, &t.desc, &t.q, &t.k, &t.v, &o, &lt, NULL), MXA_OK);
        assert_int_equal(mxa_buffer_download(lb, 16, lse, (size_t)rows * 4), MXA_OK);
        assert_memory_equal(lse, want_lse, (size_t)rows * 4);
        if (dts[i] == MXA_F32) {
            assert_int_equal(mxa_buffer_download(ob, 64, p.o, (size_t)n * 4), MXA_OK);
            assert_memory_equal(p.o, want, (size_t)n * 4);
            continue;
        }
        assert_int_equal(mxa_buffer_download(ob, 64, half, (size_t)n * 2), MXA_OK);
        for (int64_t e = 0; e < n; e++)
            assert_int_equal(half[e], dts[i] == MXA_F16 ? mxa_f32_to_f16(want[e]) : mxa_f32_to_bf16(want[e]));
    }
    mxa_buffer_destroy(ob), mxa_buffer_destroy(lb), mxa_buffer_destroy(sb);
    free(want), free(want_lse), free(lse), free(half);
    drop(&p);
}

/* ------------------------------------------------------------- asynchrony */

/* mxa_attention_async + mxa_event_wait gives the bytes of mxa_attention; waiting twice is
 * fine; destroying an event without waiting is clean (ASan sees no leak). */
static void test_async(void **state)
{
    (void)state;
    problem p = make(17, 2, 2, 2, 40, 90, 64);
    add_bias(&p, 1, 2);
    p.lengths = malloc(2 * sizeof(int32_t));
    p.lengths[0] = 61, p.lengths[1] = 90;
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 1);
    const size_t n = (size_t)(p.b * p.h * p.nq * p.d) * 4, nl = (size_t)(p.b * p.h * p.nq) * 4;
    assert_int_equal(run_cpu(&p, &desc), MXA_OK);
    float *want = malloc(n), *want_lse = malloc(nl);
    memcpy(want, p.o, n);
    memcpy(want_lse, p.lse, nl);
    memset(p.o, 0, n);
    memset(p.lse, 0, nl);
    call_tensors t;
    tensors(&p, &desc, &t);
    mxa_event *ev = NULL;
    assert_int_equal(mxa_attention_async(cpu, &t.desc, &t.q, &t.k, &t.v, &t.o, &t.lse, &ev), MXA_OK);
    assert_non_null(ev);
    p.lengths[0] = 3; /* the call copied them: changing the caller's array now changes nothing */
    mxa_attention_info info;
    assert_int_equal(mxa_event_wait(ev, &info), MXA_OK);
    assert_int_equal(info.bc, 64);
    assert_true(info.variant[0] != '\0');
    assert_memory_equal(p.o, want, n);
    assert_memory_equal(p.lse, want_lse, nl);
    assert_int_equal(mxa_event_wait(ev, NULL), MXA_OK);
    mxa_event_destroy(ev);

    p.lengths[0] = 61;
    assert_int_equal(mxa_attention_async(cpu, &t.desc, &t.q, &t.k, &t.v, &t.o, &t.lse, &ev), MXA_OK);
    mxa_event_destroy(ev); /* never waited for */
    mxa_event_destroy(NULL);

    /* misuse */
    assert_int_equal(mxa_attention_async(cpu, &t.desc, &t.q, &t.k, &t.v, &t.o, &t.lse, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_event_wait(NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    t.desc.causal = 3;
    ev = (mxa_event *)&t; /* must be reset to NULL on failure */
    assert_int_equal(mxa_attention_async(cpu, &t.desc, &t.q, &t.k, &t.v, &t.o, &t.lse, &ev), MXA_ERR_INVALID_ARGUMENT);
    assert_null(ev);
    free(want), free(want_lse);
    drop(&p);
}

/* ---------------------------------------------------------------- misuse */

/* The NVFP4 baseline takes a host bias as the MXFP4 reference does (added to the scaled
 * scores): a zero bias changes nothing, and +20 on one key makes that key's (NVFP4) V row
 * the output, on the reference and the CPU device alike. */
static void test_nvfp4_bias(void **state)
{
    (void)state;
    problem p = make(3, 1, 2, 2, 3, 32, 32);
    memset(p.q, 0, (size_t)(p.h * p.nq * p.d) * 4); /* every score 0: uniform weights without a bias */
    mxa_attention_desc desc = recipe(MXA_RECIPE_OCP_DIRECT, 0);
    desc.format = MXA_FORMAT_NVFP4;
    const size_t osize = (size_t)(p.h * p.nq * p.d);
    float *plain = malloc(osize * 4);
    assert_non_null(plain);
    assert_int_equal(run_ref(&p, &desc), MXA_OK);
    memcpy(plain, p.o, osize * 4);
    add_bias(&p, 1, 2); /* zeros */
    for (int dev = 0; dev < 2; dev++) {
        assert_int_equal(dev ? run_cpu(&p, &desc) : run_ref(&p, &desc), MXA_OK);
        assert_memory_equal(p.o, plain, osize * 4);
    }
    for (int64_t i = 0; i < p.nq; i++) p.bias[(1 * p.nq + i) * p.nk + 5] = 20.0f;
    const float *v5 = v_row(&p, 0, 1, 5);
    float vmax = 0.0f;
    for (int c = 0; c < 32; c++) vmax = fmaxf(vmax, fabsf(v5[c]));
    for (int dev = 0; dev < 2; dev++) {
        assert_int_equal(dev ? run_cpu(&p, &desc) : run_ref(&p, &desc), MXA_OK);
        for (int64_t i = 0; i < p.nq; i++) {
            const float *o = p.o + (1 * p.nq + i) * p.d, *was = plain + (1 * p.nq + i) * p.d;
            float off_v5 = 0.0f, off_plain = 0.0f;
            for (int c = 0; c < 32; c++) {
                off_v5 = fmaxf(off_v5, fabsf(o[c] - v5[c]));
                off_plain = fmaxf(off_plain, fabsf(o[c] - was[c]));
            }
            assert_true(off_v5 <= 0.25f * vmax);   /* V row 5 up to NVFP4's rounding of it */
            assert_true(off_plain > 0.25f * vmax); /* not the mean of V any more */
        }
        assert_memory_equal(p.o, plain, (size_t)(p.nq * p.d) * 4); /* head 0 has no bias */
    }
    /* a bias in a device buffer is refused, the output untouched */
    call_tensors t;
    tensors(&p, &desc, &t);
    const size_t side = (size_t)(2 * p.nq * p.nk) * 4;
    mxa_buffer *sb;
    assert_int_equal(mxa_buffer_create(cpu, side, &sb), MXA_OK);
    assert_int_equal(mxa_buffer_upload(sb, 0, p.bias, side), MXA_OK);
    mxa_tensor bias = t.bias;
    bias.data = NULL, bias.buffer = sb, bias.offset = 0;
    t.desc.bias = &bias;
    for (size_t e = 0; e < osize; e++) p.o[e] = 7.0f;
    assert_int_equal(mxa_attention(cpu, &t.desc, &t.q, &t.k, &t.v, &t.o, &t.lse, NULL), MXA_ERR_UNSUPPORTED);
    assert_non_null(strstr(mxa_last_error_message(), "bias in a device buffer"));
    for (size_t e = 0; e < osize; e++) assert_true(p.o[e] == 7.0f);
    mxa_buffer_destroy(sb);
    free(plain);
    drop(&p);
}

static void expect_fail(problem *p, const mxa_attention_desc *desc, mxa_status want, const char *words)
{
    const size_t n = (size_t)(p->b * p->h * p->nq * p->d) * 4;
    memset(p->o, 0x5a, n);
    call_tensors t;
    tensors(p, desc, &t);
    if (desc->bias) t.desc.bias = desc->bias;
    if (desc->mask) t.desc.mask = desc->mask;
    if (desc->key_lengths) t.desc.key_lengths = desc->key_lengths;
    assert_int_equal(mxa_attention(cpu, &t.desc, &t.q, &t.k, &t.v, &t.o, &t.lse, NULL), want);
    assert_non_null(strstr(mxa_last_error_message(), words));
    for (size_t i = 0; i < n; i++) assert_int_equal(((unsigned char *)p->o)[i], 0x5a); /* nothing written */
    assert_int_equal(mxa_reference_attention(&t.desc, 64, &t.q, &t.k, &t.v, &t.o, &t.lse, NULL), want);
}

static void test_misuse(void **state)
{
    (void)state;
    problem p = make(19, 2, 2, 2, 8, 40, 32);
    float *bias = calloc(2 * 2 * 8 * 40, 4);
    uint8_t *mask = malloc(2 * 2 * 8 * 40);
    memset(mask, 1, 2 * 2 * 8 * 40);
    mxa_attention_desc desc = recipe(MXA_RECIPE_MXATTENTION, 0);
    mxa_tensor t;

    desc.bias = &t;
    t = tu_tensor(bias, 2, 2, 8, 39); /* Nk - 1 columns */
    expect_fail(&p, &desc, MXA_ERR_INVALID_ARGUMENT, "bias is [2, 2, 8, 39]");
    t = tu_tensor(bias, 1, 3, 8, 40); /* 3 heads of 2 */
    expect_fail(&p, &desc, MXA_ERR_INVALID_ARGUMENT, "bias");
    mxa_tensor_init(&t, MXA_BOOL, 1, 1, 8, 40, mask);
    expect_fail(&p, &desc, MXA_ERR_INVALID_ARGUMENT, "float");
    t = tu_tensor(bias, 2, 2, 8, 40);
    bias[77] = NAN;
    expect_fail(&p, &desc, MXA_ERR_NON_FINITE, "NaN");
    bias[77] = INFINITY;
    expect_fail(&p, &desc, MXA_ERR_NON_FINITE, "+Inf");
    bias[77] = 0.0f;
    desc.bias = NULL;

    desc.mask = &t;
    t = tu_tensor(bias, 2, 1, 8, 40); /* a float mask */
    expect_fail(&p, &desc, MXA_ERR_INVALID_ARGUMENT, "MXA_BOOL");
    mxa_tensor_init(&t, MXA_BOOL, 2, 1, 7, 40, mask);
    expect_fail(&p, &desc, MXA_ERR_INVALID_ARGUMENT, "mask is [2, 1, 7, 40]");
    desc.mask = NULL;

    const int32_t too_long[2] = {40, 41}, negative[2] = {-1, 3};
    desc.key_lengths = too_long;
    expect_fail(&p, &desc, MXA_ERR_INVALID_ARGUMENT, "key_lengths[1] = 41");
    desc.key_lengths = negative;
    expect_fail(&p, &desc, MXA_ERR_INVALID_ARGUMENT, "key_lengths[0] = -1");
    desc.key_lengths = NULL;

    desc.causal = 3;
    expect_fail(&p, &desc, MXA_ERR_INVALID_ARGUMENT, "causal is 3");
    desc.causal = -1;
    expect_fail(&p, &desc, MXA_ERR_INVALID_ARGUMENT, "causal is -1");
    desc.causal = 0;

    /* the NVFP4 baseline takes no mask, key lengths or top-left causal (a host bias: test_nvfp4_bias) */
    mxa_attention_desc nv = desc;
    nv.format = MXA_FORMAT_NVFP4;
    nv.causal = MXA_CAUSAL_TOP_LEFT;
    call_tensors c;
    tensors(&p, &nv, &c);
    assert_int_equal(mxa_reference_attention(&c.desc, 64, &c.q, &c.k, &c.v, &c.o, &c.lse, NULL), MXA_ERR_UNSUPPORTED);
    nv.causal = 0;
    const int32_t fine[2] = {40, 40};
    nv.key_lengths = fine;
    tensors(&p, &nv, &c);
    c.desc.key_lengths = fine;
    assert_int_equal(mxa_attention(cpu, &c.desc, &c.q, &c.k, &c.v, &c.o, &c.lse, NULL), MXA_ERR_UNSUPPORTED);
    assert_int_equal(mxa_reference_attention(&c.desc, 64, &c.q, &c.k, &c.v, &c.o, &c.lse, NULL), MXA_ERR_UNSUPPORTED);

    free(bias), free(mask);
    drop(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bias_makes_one_key_dominate),
        cmocka_unit_test(test_mask_leaves_one_key),
        cmocka_unit_test(test_empty_rows),
        cmocka_unit_test(test_key_lengths_are_lengths),
        cmocka_unit_test(test_causal_alignment),
        cmocka_unit_test(test_broadcast_and_neutral),
        cmocka_unit_test(test_definition),
        cmocka_unit_test(test_bias_dtypes_and_strides),
        cmocka_unit_test(test_nvfp4_bias),
        cmocka_unit_test(test_buffer_outputs),
        cmocka_unit_test(test_async),
        cmocka_unit_test(test_misuse),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
