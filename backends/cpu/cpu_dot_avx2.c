/*
 * AVX2 + FMA kernels (compiled with -mavx2 -mfma; called only when cpuid
 * says so). The int8 block products use vpmaddubsw + vpmaddwd (u8 x s8 pairs
 * never saturate: |24*12 + 24*12| = 576); the rest is cpu_lanes.h, which the
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

/* acc += 4-byte dot products of u8 a and s8 b per 32-bit lane. */
static inline __m256i dot4(__m256i acc, __m256i a, __m256i b)
{
    const __m256i pairs = _mm256_maddubs_epi16(a, b);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

static void cpu_avx2_qk_int(const cpu_qk_int_args *a)
{
    const int dblk = a->dblk, d = dblk * 32;
    const __m256 scale = _mm256_set1_ps(a->scale);
    for (int j = 0; j < a->nkeys; j += 2)
        for (int h = 0; h < 2; h++) {
            __m256 dot0 = _mm256_setzero_ps(), dot1 = _mm256_setzero_ps();
            for (int b = 0; b < dblk; b++) {
                __m256i acc0 = _mm256_set1_epi32(a->kcorr[j * dblk + b]);
                __m256i acc1 = _mm256_set1_epi32(a->kcorr[(j + 1) * dblk + b]);
                const int8_t *k = a->k + (size_t)j * d + b * 32;
                for (int t = 0; t < CPU_WORDS; t++) {
                    const __m256i q = _mm256_loadu_si256(
                        (const __m256i *)(a->qp + (size_t)(b * CPU_WORDS + t) * CPU_LANES + 8 * h));
                    acc0 = dot4(acc0, q, bcast_word(k + 4 * t));
                    acc1 = dot4(acc1, q, bcast_word(k + d + 4 * t));
                }
                const __m256 qs = _mm256_loadu_ps(a->qsc + b * CPU_LANES + 8 * h);
                const __m256 sc0 = _mm256_mul_ps(qs, _mm256_set1_ps(a->ksc[j * dblk + b]));
                const __m256 sc1 = _mm256_mul_ps(qs, _mm256_set1_ps(a->ksc[(j + 1) * dblk + b]));
                dot0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc0), sc0, dot0); /* exact product */
                dot1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc1), sc1, dot1);
            }
            _mm256_storeu_ps(a->s + j * CPU_LANES + 8 * h, _mm256_mul_ps(dot0, scale));
            _mm256_storeu_ps(a->s + (j + 1) * CPU_LANES + 8 * h, _mm256_mul_ps(dot1, scale));
        }
}

static void cpu_avx2_pv_int(const cpu_pv_int_args *a)
{
    for (int b = 0; b < a->blocks; b++)
        for (int h = 0; h < 2; h++) {
            __m256i p[CPU_WORDS];
            for (int t = 0; t < CPU_WORDS; t++)
                p[t] = _mm256_loadu_si256((const __m256i *)(a->pp + (size_t)(b * CPU_WORDS + t) * CPU_LANES + 8 * h));
            const __m256 ps = _mm256_loadu_ps(a->psc + b * CPU_LANES + 8 * h);
            for (int c = 0; c < a->d; c += 2) {
                __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
                const int8_t *v = a->vt + c * a->vt_stride + b * 32;
                for (int t = 0; t < CPU_WORDS; t++) {
                    acc0 = dot4(acc0, p[t], bcast_word(v + 4 * t));
                    acc1 = dot4(acc1, p[t], bcast_word(v + a->vt_stride + 4 * t));
                }
                float *pv0 = a->pv + c * CPU_LANES + 8 * h, *pv1 = pv0 + CPU_LANES;
                const __m256 sc0 = _mm256_mul_ps(ps, _mm256_set1_ps(a->vsc[c * a->vsc_stride + b]));
                const __m256 sc1 = _mm256_mul_ps(ps, _mm256_set1_ps(a->vsc[(c + 1) * a->vsc_stride + b]));
                const __m256 prev0 = b == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(pv0);
                const __m256 prev1 = b == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(pv1);
                _mm256_storeu_ps(pv0, _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc0), sc0, prev0));
                _mm256_storeu_ps(pv1, _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc1), sc1, prev1));
            }
        }
    for (int h = 0; h < 2; h++) {
        const __m256 alpha = _mm256_loadu_ps(a->alpha + 8 * h);
        for (int c = 0; c < a->d; c++) {
            float *o = a->acc + c * CPU_LANES + 8 * h;
            const __m256 pv = a->blocks ? _mm256_loadu_ps(a->pv + c * CPU_LANES + 8 * h) : _mm256_setzero_ps();
            _mm256_storeu_ps(o, _mm256_add_ps(_mm256_mul_ps(alpha, _mm256_loadu_ps(o)), pv));
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
