/*
 * AVX2 + FMA kernels (compiled with -mavx2 -mfma; called only when cpuid
 * says so). The int8 block products use vpmaddubsw, summed in int16 over a
 * block, then one vpmaddwd (see dot_pairs); the rest is cpu_lanes.h, which the
 * compiler vectorizes with these flags, with a polynomial exp.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* e^x to about 1 ulp, lane-wise and branch-free so that it vectorizes. */
static inline float cpu_avx2_exp(float x)
{
    x = x < -104.0f ? -104.0f : x; /* NaN stays NaN */
    x = x > 88.5f ? 88.5f : x;
    const float t = x * 1.44269504088896341f + 12582912.0f; /* round to an integer: 1.5 * 2^23 */
    const float n = t - 12582912.0f;
    uint32_t tb;
    memcpy(&tb, &t, sizeof tb);
    const int32_t ni = (int32_t)(tb - 0x4b400000u);
    float r = x - n * 0.693359375f; /* exact: the high part of ln 2 has 9 bits */
    r = r - n * -2.12194440e-4f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    /* 2^n in two normal halves, so a subnormal result is rounded once */
    const int32_t n1 = ni / 2, n2 = ni - n1;
    const uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    return (p * s1) * s2;
}

#define CPU_FN(name) cpu_avx2_##name
#define CPU_EXP(x) cpu_avx2_exp(x)
#define CPU_HAVE_QK_INT 1
#define CPU_HAVE_PV_INT 1
#define CPU_HAVE_F32 1
#include "cpu_lanes.h"

static inline __m256i bcast_word(const int8_t *p)
{
    int32_t w;
    memcpy(&w, p, sizeof w);
    return _mm256_set1_epi32(w);
}

/* A block's 8 words of u8 x s8 products summed in int16, widened once: a pair
 * of products is at most 2 * 24 * 12 = 576 (Q + 12 by K; P^ codes <= 12 by V
 * give half that), so the 8 pair sums of a block stay within 4608, exact. The
 * add saturates, though it never does here, so that the compiler keeps it a
 * chain (it reassociates vpaddw into a tree and spills the products). */
static inline __m256i dot_pairs(__m256i acc16, __m256i a, __m256i b)
{
    return _mm256_adds_epi16(acc16, _mm256_maddubs_epi16(a, b));
}

static inline __m256i widen_block(__m256i acc16)
{
    return _mm256_madd_epi16(acc16, _mm256_set1_epi16(1));
}

/* Four keys by both 8-row halves per pass: each Q word is loaded once for
 * four keys, each K word broadcast once for both halves. */
static void cpu_avx2_qk_int(const cpu_qk_int_args *a)
{
    const int dblk = a->dblk, d = dblk * 32;
    const __m256 scale = _mm256_set1_ps(a->scale);
    for (int j = 0; j < a->nkeys; j += 4) {
        __m256 dot[4][2];
        for (int r = 0; r < 4; r++) dot[r][0] = dot[r][1] = _mm256_setzero_ps();
        for (int b = 0; b < dblk; b++) {
            __m256i acc[4][2];
            for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
            const int8_t *k = a->k + (size_t)j * d + b * 32;
            for (int t = 0; t < CPU_WORDS; t++) {
                const uint32_t *qw = a->qp + (size_t)(b * CPU_WORDS + t) * CPU_LANES;
                const __m256i q0 = _mm256_loadu_si256((const __m256i *)qw), q1 = _mm256_loadu_si256((const __m256i *)(qw + 8));
                for (int r = 0; r < 4; r++) {
                    const __m256i kw = bcast_word(k + r * d + 4 * t);
                    acc[r][0] = dot_pairs(acc[r][0], q0, kw);
                    acc[r][1] = dot_pairs(acc[r][1], q1, kw);
                }
            }
            for (int r = 0; r < 4; r++) {
                const __m256i corr = _mm256_set1_epi32(a->kcorr[(j + r) * dblk + b]);
                const __m256 ks = _mm256_set1_ps(a->ksc[(j + r) * dblk + b]);
                for (int h = 0; h < 2; h++) {
                    const __m256 sc = _mm256_mul_ps(_mm256_loadu_ps(a->qsc + b * CPU_LANES + 8 * h), ks);
                    const __m256 sum = _mm256_cvtepi32_ps(_mm256_add_epi32(widen_block(acc[r][h]), corr));
                    dot[r][h] = _mm256_fmadd_ps(sum, sc, dot[r][h]); /* exact product */
                }
            }
        }
        for (int r = 0; r < 4; r++)
            for (int h = 0; h < 2; h++) _mm256_storeu_ps(a->s + (j + r) * CPU_LANES + 8 * h, _mm256_mul_ps(dot[r][h], scale));
    }
}

/* Four output columns by both halves, their block sums kept in registers over
 * the tile's blocks; then acc = alpha * acc + pv, in the reference's order. */
static void cpu_avx2_pv_int(const cpu_pv_int_args *a)
{
    const __m256 alpha[2] = {_mm256_loadu_ps(a->alpha), _mm256_loadu_ps(a->alpha + 8)};
    for (int c = 0; c < a->d; c += 4) {
        __m256 pv[4][2];
        for (int r = 0; r < 4; r++) pv[r][0] = pv[r][1] = _mm256_setzero_ps();
        for (int b = 0; b < a->blocks; b++) {
            __m256i acc[4][2];
            for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
            const int8_t *v = a->vt + c * a->vt_stride + b * 32;
            const uint32_t *pp = a->pp + (size_t)b * CPU_WORDS * CPU_LANES;
            for (int t = 0; t < CPU_WORDS; t++) {
                const __m256i p0 = _mm256_loadu_si256((const __m256i *)(pp + t * CPU_LANES));
                const __m256i p1 = _mm256_loadu_si256((const __m256i *)(pp + t * CPU_LANES + 8));
                for (int r = 0; r < 4; r++) {
                    const __m256i vw = bcast_word(v + r * a->vt_stride + 4 * t);
                    acc[r][0] = dot_pairs(acc[r][0], p0, vw);
                    acc[r][1] = dot_pairs(acc[r][1], p1, vw);
                }
            }
            for (int r = 0; r < 4; r++) {
                const __m256 vs = _mm256_set1_ps(a->vsc[(c + r) * a->vsc_stride + b]);
                for (int h = 0; h < 2; h++) {
                    const __m256 sc = _mm256_mul_ps(_mm256_loadu_ps(a->psc + b * CPU_LANES + 8 * h), vs);
                    pv[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(widen_block(acc[r][h])), sc, pv[r][h]); /* exact product */
                }
            }
        }
        for (int r = 0; r < 4; r++)
            for (int h = 0; h < 2; h++) {
                float *o = a->acc + (c + r) * CPU_LANES + 8 * h;
                _mm256_storeu_ps(o, _mm256_add_ps(_mm256_mul_ps(alpha[h], _mm256_loadu_ps(o)), pv[r][h]));
            }
    }
}

/* fp32 paths: four keys (columns) by two 8-row halves in registers. */
static void cpu_avx2_qk_f32(const float *qt, const float *k, int nkeys, int d, float scale, float *s)
{
    for (int j = 0; j < nkeys; j += 4) {
        __m256 acc[8];
        for (int r = 0; r < 8; r++) acc[r] = _mm256_setzero_ps();
        const float *kj = k + (size_t)j * d;
        for (int c = 0; c < d; c++) {
            const __m256 q0 = _mm256_loadu_ps(qt + c * CPU_LANES), q1 = _mm256_loadu_ps(qt + c * CPU_LANES + 8);
            for (int r = 0; r < 4; r++) {
                const __m256 kv = _mm256_set1_ps(kj[r * d + c]);
                acc[2 * r] = _mm256_fmadd_ps(q0, kv, acc[2 * r]);
                acc[2 * r + 1] = _mm256_fmadd_ps(q1, kv, acc[2 * r + 1]);
            }
        }
        for (int r = 0; r < 4; r++) {
            _mm256_storeu_ps(s + (j + r) * CPU_LANES, _mm256_mul_ps(acc[2 * r], _mm256_set1_ps(scale)));
            _mm256_storeu_ps(s + (j + r) * CPU_LANES + 8, _mm256_mul_ps(acc[2 * r + 1], _mm256_set1_ps(scale)));
        }
    }
}

static void cpu_avx2_pv_f32(const float *p, const float *v, int len, int d, const float *alpha, float *acc)
{
    const __m256 a0 = _mm256_loadu_ps(alpha), a1 = _mm256_loadu_ps(alpha + 8);
    for (int c = 0; c < d; c += 4) {
        __m256 o[8];
        for (int r = 0; r < 4; r++) {
            o[2 * r] = _mm256_mul_ps(a0, _mm256_loadu_ps(acc + (c + r) * CPU_LANES));
            o[2 * r + 1] = _mm256_mul_ps(a1, _mm256_loadu_ps(acc + (c + r) * CPU_LANES + 8));
        }
        for (int j = 0; j < len; j++) {
            const __m256 p0 = _mm256_loadu_ps(p + j * CPU_LANES), p1 = _mm256_loadu_ps(p + j * CPU_LANES + 8);
            for (int r = 0; r < 4; r++) {
                const __m256 vv = _mm256_set1_ps(v[(size_t)j * d + c + r]);
                o[2 * r] = _mm256_fmadd_ps(p0, vv, o[2 * r]);
                o[2 * r + 1] = _mm256_fmadd_ps(p1, vv, o[2 * r + 1]);
            }
        }
        for (int r = 0; r < 4; r++) {
            _mm256_storeu_ps(acc + (c + r) * CPU_LANES, o[2 * r]);
            _mm256_storeu_ps(acc + (c + r) * CPU_LANES + 8, o[2 * r + 1]);
        }
    }
}

const cpu_kernels cpu_kernels_avx2 = {
    .name = "avx2",
    .quantize = cpu_avx2_quantize,
    .rotate = cpu_avx2_rotate,
    .transpose = cpu_avx2_transpose,
    .qk_int = cpu_avx2_qk_int,
    .qk_f32 = cpu_avx2_qk_f32,
    .softmax = cpu_avx2_softmax,
    .pv_int = cpu_avx2_pv_int,
    .pv_f32 = cpu_avx2_pv_f32,
};
