/*
 * The CPU backend against the reference, on every instruction-set path this
 * machine supports: tile quantization and rotation bit for bit, mxa_quantize
 * bit for bit, attention over every switch within measured NMSE bounds.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/cpu_quant.h"
#include "runtime/hadamard.h"
#include "runtime/mxfp4.h"
#include "testutil.h"

#define L CPU_LANES

/* NMSE bounds vs the reference with the same Bc, set from measurement on
 * these cases: quantized recipes 0 on the portable path (libm expf: bit for
 * bit), <= 1.8e-15 on AVX2, AVX-512 and AMX (a polynomial exp within ~1 ulp moves
 * alpha and P~ by an ulp; a P^ code flip would cost more, hence the margin);
 * fp32 paths (any quantizer off) <= 2.1e-13 (FMA, another summation order). */
#define NMSE_QUANT 1e-10
#define NMSE_FP32 1e-11

static const char *isa_env[] = {"portable", "avx2", "avx512", "amx"};

/* Values of every magnitude, exact E2M1 ties and rounding boundaries. */
static float tricky(tu_rng *r, int i)
{
    static const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 7.25f, 1.8125f, 1.5f, 8.0f};
    switch (i % 5) {
    case 0: return (float)tu_normal(r);
    case 1: return ldexpf(ties[tu_next(r) % 12], (int)(tu_next(r) % 20) - 10) * ((tu_next(r) & 1) ? -1.0f : 1.0f);
    case 2: return ldexpf((float)tu_normal(r), (int)(tu_next(r) % 240) - 120);
    case 3: return (tu_next(r) % 7 == 0) ? -0.0f : (float)tu_uniform(r) * 1e-3f;
    default: return nextafterf(ldexpf(7.25f, (int)(tu_next(r) % 10) - 5), (tu_next(r) & 1) ? 0.0f : 100.0f);
    }
}

static void test_quantize_tiles(void **state)
{
    (void)state;
    tu_rng r = {7};
    const mxa_rule rules[] = {mxa_rule_ocp(), mxa_rule_tfs(), mxa_rule_uos(), {MXA_RULE_CEIL, 8.0f}, {MXA_RULE_CEIL, 6.5f}};
    enum { NB = 4 };
    static float x[NB * 32 * L], dec[NB * 32 * L], col[32];
    static uint8_t nib[NB * 32 * L], sb[NB * L];
    static uint32_t packed[NB * CPU_WORDS * L];
    static float scale[NB * L];
    static int32_t sum[NB * L];
    for (int isa = 0; isa < CPU_ISA_COUNT; isa++) {
        if (!cpu_isa_supported((cpu_isa)isa)) continue;
        const cpu_kernels *k = cpu_isa_kernels((cpu_isa)isa);
        for (int rep = 0; rep < 40; rep++)
            for (size_t ri = 0; ri < sizeof rules / sizeof rules[0]; ri++) {
                for (int i = 0; i < NB * 32 * L; i++) x[i] = tricky(&r, i / L + rep);
                if (rep == 3) x[5 * L + 2] = NAN; /* a NaN block in lane 2 */
                if (rep == 4) for (int i = 0; i < 32; i++) x[i * L + 1] = 0.0f;
                const cpu_quant_out out = {packed, scale, dec, nib, sb, sum};
                k->quantize(x, NB, cpu_rule_of(rules[ri].kind, rules[ri].q), 0, &out);
                for (int b = 0; b < NB; b++)
                    for (int l = 0; l < L; l++) {
                        uint8_t codes[32], s;
                        for (int i = 0; i < 32; i++) col[i] = x[(b * 32 + i) * L + l];
                        mxa_quantize_block(col, 32, rules[ri], codes, &s);
                        assert_int_equal(sb[b * L + l], s);
                        int32_t want_sum = 0;
                        for (int i = 0; i < 32; i++) {
                            assert_int_equal(nib[(b * 32 + i) * L + l], codes[i]);
                            const uint32_t w = packed[(b * CPU_WORDS + i / 4) * L + l];
                            assert_int_equal((int8_t)(w >> (8 * (i % 4))), s == 0xff ? 0 : mxa_e2m1_doubled[codes[i]]);
                            want_sum += s == 0xff ? 0 : mxa_e2m1_doubled[codes[i]];
                            const float want = mxa_decode(codes[i], s), got = dec[(b * 32 + i) * L + l];
                            assert_true((isnan(want) && isnan(got)) || memcmp(&want, &got, 4) == 0);
                        }
                        assert_int_equal(sum[b * L + l], want_sum);
                    }
            }
    }
}

static void test_rotate_tiles(void **state)
{
    (void)state;
    tu_rng r = {11};
    static float x[256 * L], row[256];
    for (int isa = 0; isa < CPU_ISA_COUNT; isa++) {
        if (!cpu_isa_supported((cpu_isa)isa)) continue;
        for (int d = 32; d <= 256; d *= 2) {
            tu_fill_normal(&r, x, d * L, 3.0f);
            float copy[256 * L];
            memcpy(copy, x, sizeof(float) * (size_t)d * L);
            cpu_isa_kernels((cpu_isa)isa)->rotate(x, d);
            for (int l = 0; l < L; l++) {
                for (int c = 0; c < d; c++) row[c] = copy[c * L + l];
                mxa_hadamard(row, d);
                for (int c = 0; c < d; c++) assert_memory_equal(&row[c], &x[c * L + l], 4);
            }
        }
    }
}

/* The softmax kernels' P^ (PNQ, no float P wanted: the AVX-512 and AMX paths read each code
 * off the score itself) against a model in double precision: every block exponent and the
 * row sums exactly, every code exactly unless P~ lies within a few ulps of an E2M1 boundary
 * of its block, where an exp within its error bound may land on either side. The scores
 * put P~ 1e-5 (84 ulps) to either side of each boundary, at random in between, and in
 * blocks 2^-5 to 2^-120 below the row maximum; one row has a masked tail. */
static void test_softmax_p_codes(void **state)
{
    (void)state;
    enum { BC = 128, NBLK = BC / 32 };
    static const double bounds[] = {0.5, 1.5, 2.5, 3.5, 5.0, 7.0, 10.0};
    const mxa_rule rules[] = {mxa_rule_uos(), mxa_rule_ocp()};
    static float s[BC * L], ps[BC * L];
    static uint32_t pp[NBLK * CPU_WORDS * L];
    static float psc[NBLK * L];
    tu_rng r = {23};
    for (int isa = 0; isa < CPU_ISA_COUNT; isa++) {
        if (!cpu_isa_supported((cpu_isa)isa)) continue;
        const cpu_kernels *k = cpu_isa_kernels((cpu_isa)isa);
        int near = 0, checked = 0;
        for (size_t ri = 0; ri < sizeof rules / sizeof rules[0]; ri++)
            for (int rep = 0; rep < 24; rep++) {
                const double base = 4.0 * tu_normal(&r);
                int32_t lim[L];
                for (int l = 0; l < L; l++) {
                    lim[l] = l == 3 ? 100 : BC - 1;
                    const int step = l == 5 ? 40 : 5; /* binades between blocks */
                    for (int b = 0; b < NBLK; b++) {
                        const double mb = b == 0 ? 1.0 : 1.3 * ldexp(1.0, -step * b + (int)(tu_next(&r) % 3));
                        uint8_t codes[32], sb;
                        float one = (float)mb;
                        mxa_quantize_block(&one, 1, rules[ri], codes, &sb);
                        const double unit = ldexp(1.0, (int)sb - 128); /* 2^(e - 1): P~ = w unit */
                        for (int i = 0; i < 32; i++) {
                            double p = mb * exp2(-6.0 * tu_uniform(&r));
                            const double w = bounds[tu_next(&r) % 7] * (1.0 + ((tu_next(&r) & 1) ? 1e-5 : -1e-5));
                            if (i % 3 == 1 && w * unit < mb) p = w * unit;
                            if (i == 0) p = mb; /* the block maximum (x = 0 in block 0) */
                            s[(b * 32 + i) * L + l] = (float)(base + log(p));
                        }
                    }
                }
                memcpy(ps, s, sizeof s);
                float m[L], lsum[L], alpha[L];
                for (int l = 0; l < L; l++) m[l] = -INFINITY, lsum[l] = 0.0f;
                const cpu_softmax_args a = {s, BC, lim, m, lsum, alpha, 1, 1, 0, cpu_rule_of(rules[ri].kind, rules[ri].q),
                                            pp, psc, 0, NULL, NULL};
                k->softmax(&a);
                for (int l = 0; l < L; l++) {
                    double want_l = 0.0;
                    for (int b = 0; b < NBLK; b++) {
                        float pt[32];
                        double x[32];
                        for (int i = 0; i < 32; i++) {
                            const int j = b * 32 + i;
                            x[i] = j > lim[l] ? -INFINITY : (double)ps[j * L + l] - (double)m[l];
                            pt[i] = (float)exp(x[i]);
                        }
                        uint8_t codes[32], sb;
                        mxa_quantize_block(pt, 32, rules[ri], codes, &sb);
                        assert_true(psc[b * L + l] == ldexpf(1.0f, (int)sb - 127));
                        const double unit = ldexp(1.0, (int)sb - 128);
                        for (int i = 0; i < 32; i++) {
                            const int got = (int)(pp[(b * CPU_WORDS + i / 4) * L + l] >> (8 * (i % 4)) & 0xffu);
                            want_l += got * unit;
                            checked++;
                            if (got == mxa_e2m1_doubled[codes[i]]) continue;
                            const double w = exp(x[i]) / unit, tol = (8.0 + 2.0 * fabs(x[i])) * 0x1p-23;
                            int close = 0;
                            for (int bi = 0; bi < 7; bi++) close |= fabs(w - bounds[bi]) <= tol * bounds[bi];
                            if (!close) printf("  %s lane %d key %d: x %.9g w %.9g code %d, want %d\n", isa_env[isa], l,
                                               b * 32 + i, x[i], w, got, mxa_e2m1_doubled[codes[i]]);
                            assert_true(close);
                            near++;
                        }
                    }
                    assert_true(fabs(lsum[l] - want_l) <= 1e-6 * want_l);
                }
            }
        printf("  %-8s %d P^ codes, %d on the other side of a boundary they lie within ulps of\n", isa_env[isa], checked, near);
    }
}

/* The fused P V of tiles whose P^ blocks span 0 to 20 binades in some row: the softmax
 * reports the chains the widest row needs (CPU_FUSED_SHIFT_P + 1 binades each, none past
 * CPU_FUSED_CHAINS), and pv_fused over them gives what the per-block pv_int gives on the
 * unfused form of the same tile, to fp32 summation order (a block in the wrong chain or
 * with the wrong shift is off by a factor of 2 or more). */
static void test_softmax_p_chains(void **state)
{
    (void)state;
    enum { BC = 256, NBLK = BC / 32, DV = 32 };
    static const int vcodes[] = {0, 1, 2, 3, 4, 6, 8, 12};
    static float s[BC * L], s1[BC * L], psc[NBLK * L], psc8[CPU_FUSED_CHAINS * L], acc[DV * L], acc1[DV * L];
    static uint32_t pp[CPU_FUSED_CHAINS * NBLK * CPU_WORDS * L], pp1[NBLK * CPU_WORDS * L];
    static int8_t vt[DV * BC];
    static float vsc[DV], vscb[DV * NBLK];
    const mxa_rule rule = mxa_rule_uos();
    tu_rng r = {31};
    for (int isa = 0; isa < CPU_ISA_COUNT; isa++) {
        if (!cpu_isa_supported((cpu_isa)isa) || !cpu_isa_kernels((cpu_isa)isa)->pv_fused) continue;
        const cpu_kernels *k = cpu_isa_kernels((cpu_isa)isa);
        int seen[CPU_FUSED_CHAINS + 1] = {0};
        for (int rep = 0; rep < 84; rep++) {
            const int spread = rep % 21, wide = (int)(tu_next(&r) % L); /* lane `wide` spans it all */
            for (int l = 0; l < L; l++) {
                const double base = 3.0 * tu_normal(&r);
                for (int b = 0; b < NBLK; b++) {
                    const int off = b == 0 ? 0 : (l == wide && b == 1 + rep % (NBLK - 1)) ? spread : (int)(tu_next(&r) % (spread + 1));
                    for (int i = 0; i < 32; i++) {
                        const double pt = ldexp(i == 0 ? 1.0 : exp2(-3.0 * tu_uniform(&r)), -off);
                        s[(b * 32 + i) * L + l] = (float)(base + log(pt));
                    }
                }
            }
            for (int c = 0; c < DV; c++) {
                vsc[c] = ldexpf(1.0f, c % 5 - 4);
                for (int b = 0; b < NBLK; b++) vscb[c * NBLK + b] = vsc[c];
                for (int j = 0; j < BC; j++) {
                    const int v = vcodes[tu_next(&r) % 8];
                    vt[c * BC + j] = (int8_t)((tu_next(&r) & 1) ? -v : v);
                }
            }
            memcpy(s1, s, sizeof s);
            int32_t lim[L];
            float m[L], lsum[L], alpha[L], m1[L], lsum1[L], alpha1[L];
            for (int l = 0; l < L; l++) lim[l] = BC - 1, m[l] = m1[l] = -INFINITY, lsum[l] = lsum1[l] = 0.0f;
            int chains = -1;
            const cpu_rule cr = cpu_rule_of(rule.kind, rule.q);
            const cpu_softmax_args fa = {s, BC, lim, m, lsum, alpha, 1, 1, 0, cr, pp, psc, 1, psc8, &chains};
            const cpu_softmax_args ua = {s1, BC, lim, m1, lsum1, alpha1, 1, 1, 0, cr, pp1, psc, 0, NULL, NULL};
            k->softmax(&fa);
            k->softmax(&ua);
            /* the chains the unfused form's block exponents call for */
            int span = 0;
            for (int l = 0; l < L; l++) {
                int lo = 1000, hi = -1000;
                for (int b = 0; b < NBLK; b++) {
                    const int e = ilogbf(psc[b * L + l]);
                    lo = e < lo ? e : lo;
                    hi = e > hi ? e : hi;
                }
                span = hi - lo > span ? hi - lo : span;
            }
            const int want = span / (CPU_FUSED_SHIFT_P + 1) + 1;
            assert_int_equal(chains, want <= CPU_FUSED_CHAINS ? want : 0);
            seen[chains]++;
            if (!chains) continue;
            for (int i = 0; i < DV * L; i++) acc[i] = acc1[i] = 0.0f;
            const cpu_pv_fused_args pf = {pp, psc8, chains, vt, BC, vsc, 1, NBLK * CPU_WORDS, DV, alpha, acc};
            const cpu_pv_int_args pi = {pp1, psc, vt, BC, vscb, NBLK, NBLK, DV, alpha1, acc1};
            k->pv_fused(&pf);
            k->pv_int(&pi);
            for (int c = 0; c < DV; c++)
                for (int l = 0; l < L; l++) {
                    double mag = 0.0; /* the sum of the terms' magnitudes bounds fp32 summation error */
                    for (int j = 0; j < BC; j++) {
                        const int code = (int)(pp1[((j / 32) * CPU_WORDS + (j % 32) / 4) * L + l] >> (8 * (j % 4)) & 0xffu);
                        mag += fabs((double)code * psc[(j / 32) * L + l] * vt[c * BC + j] * vsc[c]);
                    }
                    assert_true(fabs((double)acc[c * L + l] - (double)acc1[c * L + l]) <= 32.0 * 0x1p-24 * mag);
                }
        }
        printf("  %-8s tiles by chain count (0: per-block form): %d %d %d %d\n", isa_env[isa], seen[0], seen[1], seen[2],
               seen[3]);
        for (int c = 0; c <= CPU_FUSED_CHAINS; c++) assert_true(seen[c] > 0);
    }
}

/* Every ISA's tile transpose against its definition: whole and partial register blocks, rows past
 * `valid` read as zero, destination words outside the transposed ones untouched, any alignment. */
static void test_transpose(void **state)
{
    (void)state;
    static const int shapes[][3] = {{16, 16, 128}, {16, 5, 128}, {16, 0, 64}, {32, 32, 16}, {8, 8, 16}, {24, 20, 40}, {13, 11, 7}};
    static uint32_t src[64 * 160];
    static unsigned char dst[4 * 160 * 80 + 1];
    tu_rng r = {31};
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) src[i] = (uint32_t)tu_next(&r);
    for (int isa = 0; isa < CPU_ISA_COUNT; isa++) {
        if (!cpu_isa_supported((cpu_isa)isa)) continue;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int rows = shapes[si][0], valid = shapes[si][1], cols = shapes[si][2], ds = rows + 3;
            memset(dst, 0xA5, sizeof dst);
            cpu_isa_kernels((cpu_isa)isa)->transpose(src, 160, rows, valid, cols, dst + 1, ds); /* misaligned */
            for (int c = 0; c < cols; c++)
                for (int x = 0; x < ds; x++) {
                    uint32_t got;
                    memcpy(&got, dst + 1 + 4 * (c * ds + x), 4);
                    const uint32_t want = x >= rows ? 0xA5A5A5A5u : x < valid ? src[x * 160 + c] : 0u;
                    assert_int_equal(got, want);
                }
        }
    }
}

static mxa_device *open_cpu(mxa_runtime **rt, int isa, const char *threads)
{
    setenv("MXA_CPU_ISA", isa_env[isa], 1);
    if (threads) setenv("MXA_NUM_THREADS", threads, 1); else unsetenv("MXA_NUM_THREADS");
    mxa_device *dev = NULL;
    assert_int_equal(mxa_runtime_create(NULL, rt), MXA_OK);
    assert_int_equal(mxa_device_open(*rt, "cpu", &dev), MXA_OK);
    mxa_device_info info;
    assert_int_equal(mxa_device_info_of(dev, &info), MXA_OK);
    return dev;
}

static void test_quantize_api(void **state)
{
    (void)state;
    tu_rng r = {3};
    const int64_t rows = 37, d = 200, nblk = 7;
    float *x = malloc(sizeof(float) * rows * d);
    uint8_t *codes = malloc((size_t)(rows * nblk * 16)), *sc = malloc((size_t)(rows * nblk));
    uint8_t *rc = malloc((size_t)(rows * nblk * 16)), *rs = malloc((size_t)(rows * nblk));
    for (int i = 0; i < rows * d; i++) x[i] = tricky(&r, i);
    for (int64_t i = 0; i < rows; i++) mxa_quantize_row(x + i * d, d, mxa_rule_uos(), rc + i * nblk * 16, rs + i * nblk);
    for (int isa = 0; isa < CPU_ISA_COUNT; isa++) {
        if (!cpu_isa_supported((cpu_isa)isa)) continue;
        mxa_runtime *rt;
        mxa_device *dev = open_cpu(&rt, isa, NULL);
        mxa_tensor t = tu_tensor(x, 1, 1, rows, d);
        assert_int_equal(mxa_quantize(dev, &t, mxa_rule_uos(), codes, sc), MXA_OK);
        assert_memory_equal(codes, rc, (size_t)(rows * nblk * 16));
        assert_memory_equal(sc, rs, (size_t)(rows * nblk));
        mxa_device_close(dev);
        mxa_runtime_destroy(rt);
    }
    free(x); free(codes); free(sc); free(rc); free(rs);
}

typedef struct cfg {
    const char *name;
    mxa_recipe recipe;
    int b, h, hkv, nq, nk, d, causal, bc;
    int hadamard;       /* -1: the recipe's */
    uint32_t quantize;  /* 0xff: the recipe's */
    int placement;      /* -1: the recipe's */
    float q;            /* > 0: CEIL rule with this q */
} cfg;

static const cfg cases[] = {
    {"mxattention", MXA_RECIPE_MXATTENTION, 1, 2, 2, 96, 96, 64, 0, 64, -1, 0xff, -1, 0},
    {"mxattention causal gqa", MXA_RECIPE_MXATTENTION, 2, 4, 2, 80, 80, 128, 1, 32, -1, 0xff, -1, 0},
    {"mxattention tails", MXA_RECIPE_MXATTENTION, 1, 3, 1, 37, 75, 32, 0, 64, -1, 0xff, -1, 0},
    {"mxattention causal nq<nk", MXA_RECIPE_MXATTENTION, 1, 2, 2, 21, 150, 64, 1, 64, -1, 0xff, -1, 0},
    {"mxattention causal nq>nk", MXA_RECIPE_MXATTENTION, 1, 2, 1, 70, 40, 64, 1, 32, -1, 0xff, -1, 0},
    {"mxattention d256 bc128", MXA_RECIPE_MXATTENTION, 1, 1, 1, 50, 300, 256, 0, 128, -1, 0xff, -1, 0},
    {"ocp-direct", MXA_RECIPE_OCP_DIRECT, 1, 2, 2, 64, 100, 64, 0, 64, -1, 0xff, -1, 0},
    {"ocp-direct causal d96", MXA_RECIPE_OCP_DIRECT, 1, 2, 1, 48, 48, 96, 1, 32, -1, 0xff, -1, 0},
    {"fp32", MXA_RECIPE_FP32, 1, 2, 1, 50, 77, 64, 0, 64, -1, 0xff, -1, 0},
    {"fp32 causal", MXA_RECIPE_FP32, 1, 2, 2, 64, 64, 128, 1, 128, -1, 0xff, -1, 0},
    {"hadamard fp32", MXA_RECIPE_FP32, 1, 1, 1, 40, 70, 64, 0, 64, 1, 0xff, -1, 0},
    {"qk only", MXA_RECIPE_MXATTENTION, 1, 2, 2, 40, 90, 64, 0, 64, -1, MXA_QUANT_QK, -1, 0},
    {"v only", MXA_RECIPE_MXATTENTION, 1, 2, 2, 40, 90, 64, 0, 64, -1, MXA_QUANT_V, -1, 0},
    {"p only direct", MXA_RECIPE_MXATTENTION, 1, 2, 2, 40, 90, 64, 0, 64, -1, MXA_QUANT_P, MXA_PLACEMENT_DIRECT, 0},
    {"qk+p", MXA_RECIPE_MXATTENTION, 1, 2, 2, 40, 90, 64, 1, 64, -1, MXA_QUANT_QK | MXA_QUANT_P, -1, 0},
    {"v+p no rotation", MXA_RECIPE_MXATTENTION, 1, 2, 2, 40, 90, 64, 0, 64, 0, MXA_QUANT_V | MXA_QUANT_P, -1, 0},
    {"uos direct", MXA_RECIPE_MXATTENTION, 1, 2, 2, 64, 64, 64, 0, 32, -1, 0xff, MXA_PLACEMENT_DIRECT, 0},
    {"tfs pnq", MXA_RECIPE_MXATTENTION, 1, 2, 2, 64, 64, 64, 1, 64, -1, 0xff, -1, 6.0f},
    {"q=8 pnq", MXA_RECIPE_MXATTENTION, 1, 2, 2, 64, 64, 64, 0, 64, -1, 0xff, -1, 8.0f},
    {"mxattention d32 bc256", MXA_RECIPE_MXATTENTION, 2, 2, 1, 33, 600, 32, 1, 256, -1, 0xff, -1, 0},
    /* AMX: QK^T in the triple layout and P V in the general one (4 B tiles) share one tile configuration */
    {"mxattention d128 bc256", MXA_RECIPE_MXATTENTION, 1, 2, 1, 40, 520, 128, 0, 256, -1, 0xff, -1, 0},
    {"ocp-direct bc4096", MXA_RECIPE_OCP_DIRECT, 1, 1, 1, 17, 300, 64, 0, 4096, -1, 0xff, -1, 0},
    {"fp32 d256 causal", MXA_RECIPE_FP32, 1, 2, 1, 40, 90, 256, 1, 32, -1, 0xff, -1, 0},
};

static void run_case(const cfg *c, int isa, const char *threads, double *nmse_out, float *o_out)
{
    tu_rng r = {1234};
    const int64_t nq = (int64_t)c->b * c->h * c->nq * c->d, nk = (int64_t)c->b * c->hkv * c->nk * c->d;
    const int64_t rows = (int64_t)c->b * c->h * c->nq;
    float *q = malloc(sizeof(float) * nq), *k = malloc(sizeof(float) * nk), *v = malloc(sizeof(float) * nk);
    float *o = malloc(sizeof(float) * nq), *ro = malloc(sizeof(float) * nq);
    float *lse = malloc(sizeof(float) * rows), *rlse = malloc(sizeof(float) * rows);
    tu_fill_attention(&r, q, k, v, c->b, c->h, c->hkv, c->nq, c->nk, c->d);
    mxa_attention_desc desc;
    assert_int_equal(mxa_attention_desc_init(&desc, c->recipe), MXA_OK);
    if (c->hadamard >= 0) desc.hadamard = c->hadamard;
    if (c->quantize != 0xff) desc.quantize = c->quantize;
    if (c->placement >= 0) desc.placement = (mxa_placement)c->placement;
    if (c->q > 0) desc.rule = (mxa_rule){MXA_RULE_CEIL, c->q};
    desc.causal = c->causal;
    desc.bc = c->bc;
    mxa_tensor tq = tu_tensor(q, c->b, c->h, c->nq, c->d), tk = tu_tensor(k, c->b, c->hkv, c->nk, c->d);
    mxa_tensor tv = tu_tensor(v, c->b, c->hkv, c->nk, c->d), to = tu_tensor(o, c->b, c->h, c->nq, c->d);
    mxa_tensor tro = tu_tensor(ro, c->b, c->h, c->nq, c->d);
    mxa_tensor tl = tu_tensor(lse, c->b, c->h, c->nq, 1), trl = tu_tensor(rlse, c->b, c->h, c->nq, 1);
    assert_int_equal(mxa_reference_attention(&desc, c->bc, &tq, &tk, &tv, &tro, &trl, NULL), MXA_OK);
    mxa_runtime *rt;
    mxa_device *dev = open_cpu(&rt, isa, threads);
    mxa_attention_info info;
    assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &to, &tl, &info), MXA_OK);
    assert_int_equal(info.bc, c->bc);
    *nmse_out = tu_nmse(o, ro, nq);
    for (int64_t i = 0; i < rows; i++) {
        if (isinf(rlse[i])) {
            assert_true(isinf(lse[i]) && lse[i] < 0);
        } else {
            assert_true(fabsf(lse[i] - rlse[i]) <= 1e-5f * (1.0f + fabsf(rlse[i])));
        }
    }
    if (o_out) memcpy(o_out, o, sizeof(float) * nq);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    free(q); free(k); free(v); free(o); free(ro); free(lse); free(rlse);
}

/* Every path: portable, AVX2, AVX-512 and AMX with their fused kernels, and
 * AVX-512 with the per-block kernels only (MXA_CPU_FUSED=0). */
static void test_attention_matches_reference(void **state)
{
    (void)state;
    for (int path = 0; path < 5; path++) {
        const int isa = path < 4 ? path : 2;
        if (!cpu_isa_supported((cpu_isa)isa)) continue;
        setenv("MXA_CPU_FUSED", path == 4 ? "0" : "1", 1);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const cfg *c = &cases[i];
            double nmse;
            run_case(c, isa, NULL, &nmse, NULL);
            const int fp32_path = c->recipe == MXA_RECIPE_FP32 || c->quantize != 0xff;
            printf("  %-8s %-26s nmse %.3e\n", path == 4 ? "avx512/b" : isa_env[isa], c->name, nmse);
            assert_true(nmse <= (fp32_path ? NMSE_FP32 : NMSE_QUANT));
        }
    }
    unsetenv("MXA_CPU_FUSED");
}

/* Items are independent, so the thread count must not change a bit. */
static void test_threads_deterministic(void **state)
{
    (void)state;
    const cfg *c = &cases[1];
    const int64_t n = (int64_t)c->b * c->h * c->nq * c->d;
    float *o1 = malloc(sizeof(float) * n), *o3 = malloc(sizeof(float) * n);
    double nmse;
    int isa = CPU_ISA_COUNT - 1;
    while (isa > 0 && !cpu_isa_supported((cpu_isa)isa)) isa--;
    run_case(c, isa, "1", &nmse, o1);
    run_case(c, isa, "3", &nmse, o3);
    assert_memory_equal(o1, o3, sizeof(float) * n);
    free(o1);
    free(o3);
}

/* PNQ with V = 1 gives O = 1 in every row (SPEC §2 invariant). */
static void test_pnq_ones(void **state)
{
    (void)state;
    enum { N = 100, D = 64 };
    static float q[N * D], k[N * D], v[N * D], o[N * D];
    tu_rng r = {5};
    tu_fill_attention(&r, q, k, v, 1, 1, 1, N, N, D);
    for (int i = 0; i < N * D; i++) v[i] = 1.0f;
    for (int isa = 0; isa < CPU_ISA_COUNT; isa++) {
        if (!cpu_isa_supported((cpu_isa)isa)) continue;
        mxa_runtime *rt;
        mxa_device *dev = open_cpu(&rt, isa, NULL);
        mxa_attention_desc desc;
        mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
        desc.causal = 1;
        mxa_tensor tq = tu_tensor(q, 1, 1, N, D), tk = tu_tensor(k, 1, 1, N, D), tv = tu_tensor(v, 1, 1, N, D);
        mxa_tensor to = tu_tensor(o, 1, 1, N, D);
        assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, NULL), MXA_OK);
        for (int i = 0; i < N * D; i++) assert_true(fabsf(o[i] - 1.0f) < 1e-6f);
        mxa_device_close(dev);
        mxa_runtime_destroy(rt);
    }
}

/* allow_non_finite: NaN goes where the reference sends it. A NaN in one query
 * row makes all its scores NaN, so the row never has a maximum and comes out
 * as 0 (a row with no visible key); the other rows never see it. A NaN in one
 * key makes that key's score NaN in every row, next to finite ones, so every
 * row comes out NaN (the one-pass PNQ softmax must notice it and hand the tile
 * to the two-pass form). */
static void test_nan_propagates(void **state)
{
    (void)state;
    enum { N = 70, D = 64 };
    static float q[N * D], k[N * D], v[N * D], o[N * D], ro[N * D];
    for (int run = 0; run < 2 * CPU_ISA_COUNT; run++) { /* the NaN in Q, then in K, on every ISA */
        const int in_k = run / CPU_ISA_COUNT, isa = run % CPU_ISA_COUNT;
        if (!cpu_isa_supported((cpu_isa)isa)) continue;
        tu_rng r = {9};
        tu_fill_attention(&r, q, k, v, 1, 1, 1, N, N, D);
        if (in_k) k[10 * D + 3] = NAN;
        else q[5 * D + 7] = NAN;
        for (int recipe = 0; recipe < 3; recipe++) {
            mxa_runtime *rt;
            mxa_device *dev = open_cpu(&rt, isa, NULL);
            mxa_attention_desc desc;
            mxa_attention_desc_init(&desc, (mxa_recipe)recipe);
            desc.allow_non_finite = 1;
            desc.bc = 64;
            mxa_tensor tq = tu_tensor(q, 1, 1, N, D), tk = tu_tensor(k, 1, 1, N, D), tv = tu_tensor(v, 1, 1, N, D);
            mxa_tensor to = tu_tensor(o, 1, 1, N, D), tro = tu_tensor(ro, 1, 1, N, D);
            assert_int_equal(mxa_reference_attention(&desc, 64, &tq, &tk, &tv, &tro, NULL, NULL), MXA_OK);
            assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, NULL), MXA_OK);
            for (int i = 0; i < N * D; i++) assert_int_equal(isnan(o[i]) != 0, isnan(ro[i]) != 0);
            if (!in_k) assert_true(o[5 * D] == ro[5 * D] && !isnan(o[4 * D]));
            mxa_device_close(dev);
            mxa_runtime_destroy(rt);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_tiles),
        cmocka_unit_test(test_rotate_tiles),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_softmax_p_codes),
        cmocka_unit_test(test_softmax_p_chains),
        cmocka_unit_test(test_quantize_api),
        cmocka_unit_test(test_attention_matches_reference),
        cmocka_unit_test(test_threads_deterministic),
        cmocka_unit_test(test_pnq_ones),
        cmocka_unit_test(test_nan_propagates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
