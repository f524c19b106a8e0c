/*
 * AVX2 + FMA kernels (compiled with -mavx2 -mfma; called only when cpuid
 * says so). The int8 block products use vpmaddubsw, summed in int16 over a
 * block, then one vpmaddwd (see dot_pairs); quantization and the PNQ softmax
 * (P^ codes straight from the scores, as the AVX-512 path) are intrinsics;
 * the rest, the softmax's other forms included, is cpu_lanes.h, which the
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
#define CPU_HAVE_QUANTIZE 1
#define CPU_HAVE_TRANSPOSE 1
#include "cpu_exp.h"
#include "cpu_kernels.h"

/* below, with intrinsics; cpu_lanes.h's softmax calls it */
static void cpu_avx2_quantize(const float *x, int nblk, cpu_rule rule, int offset, const cpu_quant_out *out);

#include "cpu_lanes.h"

/* 8 x 8 32-bit elements transposed in registers: pairs, quads, then 128-bit lanes. */
static inline void transpose8x8(__m256i v[8])
{
    __m256i t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
        t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) { /* columns 0|4, 1|5, 2|6, 3|7 of four rows */
        v[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
        v[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
        v[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
        v[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        t[j] = _mm256_permute2x128_si256(v[j], v[4 + j], 0x20);
        t[4 + j] = _mm256_permute2x128_si256(v[j], v[4 + j], 0x31);
    }
    for (int j = 0; j < 8; j++) v[j] = t[j];
}

/* cpu_lanes.h's transpose of 32-bit words (rows past `valid` read as 0): whole 8 x 8 blocks
 * in registers, the edges word by word (AMD's masked loads and stores are microcoded). */
static void cpu_avx2_transpose(const void *src, int64_t src_stride, int rows, int valid, int cols, void *dst,
                               int64_t dst_stride)
{
    const int32_t *s = src;
    int32_t *d = dst;
    const int rows8 = rows & ~7, cols8 = cols & ~7;
    for (int r0 = 0; r0 < rows8; r0 += 8)
        for (int c0 = 0; c0 < cols8; c0 += 8) {
            __m256i v[8];
            for (int i = 0; i < 8; i++)
                v[i] = r0 + i < valid ? _mm256_loadu_si256((const __m256i *)(s + (r0 + i) * src_stride + c0))
                                      : _mm256_setzero_si256();
            transpose8x8(v);
            for (int c = 0; c < 8; c++) _mm256_storeu_si256((__m256i *)(d + (c0 + c) * dst_stride + r0), v[c]);
        }
    for (int r = 0; r < rows; r++)
        for (int c = r < rows8 ? cols8 : 0; c < cols; c++) {
            int32_t w = 0;
            if (r < valid) memcpy(&w, s + r * src_stride + c, 4);
            memcpy(d + c * dst_stride + r, &w, 4);
        }
}

static inline __m256i bcast_word(const int8_t *p)
{
    int32_t w;
    memcpy(&w, p, sizeof w);
    return _mm256_set1_epi32(w);
}

/* e^x for x <= 0 or NaN as cpu_dot_avx512.c's exp512 to the bit: cpu_exp.h,
 * then p 2^n in two normal halves, so that a subnormal result is rounded once,
 * as vscalefps rounds it. */
static inline __m256 exp256(__m256 x)
{
    __m256 n, p;
    CPU_EXP_REDUCED(__m256, _mm256, x, n, p);
    const __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* 2^e for e in [-149, 127], exact (subnormal below -126). */
static inline __m256 pow2_256(__m256i e)
{
    const __m256i normal = _mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23);
    const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_add_epi32(e, _mm256_set1_epi32(149)));
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, _mm256_cmpgt_epi32(_mm256_set1_epi32(-126), e)));
}

/* The shared exponent of 8 block maxima (bits of a finite value >= 0), as cpu_lanes.h. */
static inline __m256i exponent256(__m256i mb, cpu_rule rule)
{
    const __m256i zero = _mm256_setzero_si256();
    const __m256i biased = _mm256_srli_epi32(mb, 23), f = _mm256_and_si256(mb, _mm256_set1_epi32(0x7fffff));
    /* compares give -1: e = biased - 129 + [f > up] - 1 + [f > down] */
    const __m256i up = _mm256_cmpgt_epi32(f, _mm256_set1_epi32(rule.up)), down = _mm256_cmpgt_epi32(f, _mm256_set1_epi32(rule.down));
    __m256i e = _mm256_sub_epi32(_mm256_sub_epi32(biased, _mm256_set1_epi32(130)), _mm256_add_epi32(up, down));
    e = _mm256_blendv_epi8(e, _mm256_set1_epi32(-127), _mm256_cmpeq_epi32(biased, zero));
    e = _mm256_andnot_si256(_mm256_cmpeq_epi32(mb, zero), e);
    return _mm256_min_epi32(_mm256_max_epi32(e, _mm256_set1_epi32(-127)), _mm256_set1_epi32(127));
}

/* Twice the E2M1 rounding, given w = 2 |x| 2^-e (see cpu_lanes.h round2). */
static inline __m256 round2_256(__m256 w)
{
    __m256i eb = _mm256_and_si256(_mm256_castps_si256(w), _mm256_set1_epi32(0x7f800000));
    eb = _mm256_max_epu32(eb, _mm256_set1_epi32(128 << 23));
    const __m256 c = _mm256_castsi256_ps(_mm256_add_epi32(eb, _mm256_set1_epi32(22 << 23)));
    const __m256 r = _mm256_sub_ps(_mm256_add_ps(w, c), c);
    return _mm256_min_ps(r, _mm256_set1_ps(12.0f)); /* NaN in, 12 out, as cpu_lanes.h */
}

/* The low bytes of 8 32-bit lanes, stored as 8 bytes. */
static inline void store_low_bytes(uint8_t *dst, __m256i v)
{
    const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1, -1,
                                          -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i b = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, pick), _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1));
    _mm_storel_epi64((__m128i *)dst, _mm256_castsi256_si128(b));
}

/* cpu_lanes.h's quantize with intrinsics (the compiler does not vectorize that
 * one well), the 16 lanes as two halves: same outputs, same rounding, NaN
 * blocks included. */
static void cpu_avx2_quantize(const float *x, int nblk, cpu_rule rule, int offset, const cpu_quant_out *out)
{
    const __m256i absmask = _mm256_set1_epi32(0x7fffffff), zero = _mm256_setzero_si256();
    /* E2M1 code of a doubled value d (bytes 1-3 of each lane's index have the
     * top bit set, so they come out 0) */
    const __m256i nibtab = _mm256_setr_epi8(0, 1, 2, 3, 4, 0, 5, 0, 6, 0, 0, 0, 7, 0, 0, 0, 0, 1, 2, 3, 4, 0, 5, 0, 6, 0, 0, 0, 7, 0, 0, 0);
    const __m256 nan = _mm256_set1_ps(NAN);
    for (int b = 0; b < nblk; b++)
        for (int h = 0; h < 2; h++) {
            const float *xb = x + (size_t)b * 32 * CPU_LANES + 8 * h;
            __m256i mx = zero;
            for (int i = 0; i < 32; i++)
                mx = _mm256_max_epi32(mx, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(xb + i * CPU_LANES)), absmask));
            const __m256i bad = _mm256_cmpgt_epi32(mx, _mm256_set1_epi32(0x7f7fffff));
            const __m256i e = _mm256_andnot_si256(bad, exponent256(mx, rule));
            const __m256 inv = pow2_256(_mm256_sub_epi32(zero, e)), half = pow2_256(_mm256_sub_epi32(e, _mm256_set1_epi32(1)));
            const int o = b * CPU_LANES + 8 * h;
            if (out->scale) _mm256_storeu_ps(out->scale + o, _mm256_blendv_ps(pow2_256(e), nan, _mm256_castsi256_ps(bad)));
            if (out->sbyte) store_low_bytes(out->sbyte + o, _mm256_or_si256(_mm256_add_epi32(e, _mm256_set1_epi32(127)), bad));
            __m256i sum = zero;
            for (int t = 0; t < CPU_WORDS; t++) {
                __m256i word = zero;
                for (int k = 0; k < 4; k++) {
                    const int i = 4 * t + k;
                    const __m256i xv = _mm256_loadu_si256((const __m256i *)(xb + i * CPU_LANES));
                    const __m256 a = _mm256_castsi256_ps(_mm256_and_si256(xv, absmask));
                    /* (|x| 2^-e) * 2: both steps exact where a code can be non-zero */
                    const __m256 w = _mm256_andnot_ps(_mm256_castsi256_ps(bad),
                                                      round2_256(_mm256_mul_ps(_mm256_mul_ps(a, inv), _mm256_set1_ps(2.0f))));
                    const __m256i d = _mm256_cvtps_epi32(w), neg = _mm256_srai_epi32(xv, 31);
                    const __m256i sd = _mm256_sub_epi32(_mm256_xor_si256(d, neg), neg);
                    sum = _mm256_add_epi32(sum, sd);
                    const __m256i byte = _mm256_and_si256(_mm256_add_epi32(sd, _mm256_set1_epi32(offset)), _mm256_set1_epi32(0xff));
                    word = _mm256_or_si256(word, _mm256_slli_epi32(byte, 8 * k));
                    const size_t row = (size_t)(b * 32 + i) * CPU_LANES + 8 * h;
                    if (out->decoded) {
                        const __m256i sign = _mm256_andnot_si256(absmask, xv);
                        const __m256 dec = _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(_mm256_mul_ps(w, half)), sign));
                        _mm256_storeu_ps(out->decoded + row, _mm256_blendv_ps(dec, nan, _mm256_castsi256_ps(bad)));
                    }
                    if (out->nibble) {
                        __m256i c = _mm256_shuffle_epi8(nibtab, _mm256_or_si256(d, _mm256_set1_epi32((int)0x80808000u)));
                        c = _mm256_or_si256(c, _mm256_and_si256(neg, _mm256_set1_epi32(8)));
                        store_low_bytes(out->nibble + row, _mm256_andnot_si256(bad, c));
                    }
                }
                if (out->packed) _mm256_storeu_si256((__m256i *)(out->packed + (size_t)(b * CPU_WORDS + t) * CPU_LANES + 8 * h), word);
            }
            if (out->sum) _mm256_storeu_si256((__m256i *)(out->sum + o), sum);
        }
}

/* The boundaries of j (cpu_kernels.h; 0 for code 0 | 1): a score's code is the
 * (j > boundary) count's code, the same as cpu_dot_avx512.c's p_lut_bound gives. */
static const float p_bound[7] = {0.0f,          CPU_P_BOUND_1, CPU_P_BOUND_2, CPU_P_BOUND_3,
                                 CPU_P_BOUND_4, CPU_P_BOUND_5, CPU_P_BOUND_6};

/* P^ of 8 rows (8h..8h+7) of one 32-key block with shared exponent e straight
 * from the scores (P~ = e^(s - mnew) never formed). Returns the block's row sum
 * of P^; *chk turns NaN where a score is NaN or m' and a score are +Inf. */
static inline __m256 quantize_p_block_scores(const cpu_softmax_args *a, int b, int h, __m256i e, __m256 mnew, __m256 *chk)
{
    const __m256 c7 = _mm256_set1_ps(7.0f * 1.44269504088896341f);
    const __m256 at = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_set1_epi32(2), e)), _mm256_set1_ps(7.0f));
    /* the compares sum to minus the count: its code at index -count & 7 */
    const __m256i code = _mm256_setr_epi32(0, 12, 8, 6, 4, 3, 2, 1);
    __m256 bound[7];
    for (int i = 0; i < 7; i++) bound[i] = _mm256_set1_ps(p_bound[i]);
    _mm256_storeu_ps(a->psc + b * CPU_LANES + 8 * h, pow2_256(e));
    const float *s = a->s + (size_t)b * 32 * CPU_LANES + 8 * h;
    __m256i codes = _mm256_setzero_si256();
    __m256 nan = *chk;
    for (int t = 0; t < CPU_WORDS; t++) {
        __m256i word = _mm256_setzero_si256();
        for (int k = 0; k < 4; k++) {
            const __m256 j = _mm256_fmadd_ps(_mm256_sub_ps(_mm256_loadu_ps(s + (4 * t + k) * CPU_LANES), mnew), c7, at);
            nan = _mm256_add_ps(nan, j); /* j <= 7 * 129: only NaN makes the sum NaN */
            __m256i idx = _mm256_castps_si256(_mm256_cmp_ps(j, bound[0], _CMP_GT_OQ));
            for (int i = 1; i < 7; i++) idx = _mm256_add_epi32(idx, _mm256_castps_si256(_mm256_cmp_ps(j, bound[i], _CMP_GT_OQ)));
            const __m256i d = _mm256_permutevar8x32_epi32(code, idx);
            codes = _mm256_add_epi32(codes, d);
            word = _mm256_or_si256(word, _mm256_slli_epi32(d, 8 * k));
        }
        _mm256_storeu_si256((__m256i *)(a->pp + (size_t)(b * CPU_WORDS + t) * CPU_LANES + 8 * h), word);
    }
    *chk = nan;
    /* the block's doubled codes sum exactly (<= 384); P^ = code 2^(e - 1) */
    return _mm256_mul_ps(_mm256_cvtepi32_ps(codes), pow2_256(_mm256_sub_epi32(e, _mm256_set1_epi32(1))));
}

/* The PNQ step in one pass over the scores, as cpu_dot_avx512.c's
 * softmax_pnq_one_pass, for quantized P with no float P wanted. Returns 0,
 * having written nothing but pp, psc and hidden scores, where a row sees no
 * key yet or a row sum is NaN: cpu_lanes.h's softmax handles those. */
static int softmax_pnq_one_pass(const cpu_softmax_args *a)
{
    const int len = a->len, blocks = (len + 31) / 32;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 bmax[2][4096 / 32], mnew[2];
    for (int h = 0; h < 2; h++) {
        const __m256i lim = _mm256_min_epi32(_mm256_loadu_si256((const __m256i *)(a->lim + 8 * h)), _mm256_set1_epi32(len - 1));
        const int masked = !_mm256_testc_si256(_mm256_cmpeq_epi32(lim, _mm256_set1_epi32(len - 1)), _mm256_set1_epi32(-1)) ||
                           len % 32 != 0;
        __m256 tmax = ninf;
        for (int b = 0; b < blocks; b++) {
            __m256 bm = ninf;
            for (int j = 32 * b; j < 32 * b + 32; j++) {
                float *row = a->s + j * CPU_LANES + 8 * h;
                __m256 s = ninf; /* keys past the end: zero padding, P~ = 0 */
                if (j < len) s = _mm256_loadu_ps(row);
                if (masked) {
                    s = _mm256_blendv_ps(ninf, s, _mm256_castsi256_ps(_mm256_cmpgt_epi32(lim, _mm256_set1_epi32(j - 1))));
                    _mm256_storeu_ps(row, s);
                }
                bm = _mm256_max_ps(s, bm);
            }
            bmax[h][b] = bm;
            tmax = _mm256_max_ps(bm, tmax);
        }
        mnew[h] = _mm256_max_ps(tmax, _mm256_loadu_ps(a->m + 8 * h));
        if (_mm256_movemask_ps(_mm256_cmp_ps(mnew[h], ninf, _CMP_EQ_OQ))) return 0;
    }
    __m256 sum[2], chk = _mm256_setzero_ps();
    for (int h = 0; h < 2; h++) {
        sum[h] = _mm256_setzero_ps();
        for (int b = 0; b < blocks; b++) {
            const __m256i e = exponent256(_mm256_castps_si256(exp256(_mm256_sub_ps(bmax[h][b], mnew[h]))), a->rule);
            sum[h] = _mm256_add_ps(sum[h], quantize_p_block_scores(a, b, h, e, mnew[h], &chk));
        }
    }
    if (_mm256_movemask_ps(_mm256_cmp_ps(chk, chk, _CMP_UNORD_Q))) return 0;
    for (int h = 0; h < 2; h++) {
        const __m256 m = _mm256_loadu_ps(a->m + 8 * h);
        const __m256 alpha = _mm256_and_ps(_mm256_cmp_ps(m, ninf, _CMP_NEQ_UQ), exp256(_mm256_sub_ps(m, mnew[h])));
        _mm256_storeu_ps(a->l + 8 * h, _mm256_add_ps(_mm256_mul_ps(alpha, _mm256_loadu_ps(a->l + 8 * h)), sum[h]));
        _mm256_storeu_ps(a->m + 8 * h, mnew[h]);
        _mm256_storeu_ps(a->alpha + 8 * h, alpha);
    }
    if (a->fused) *a->fused = 0; /* no fused kernels on this path */
    return 1;
}

static void cpu_avx2_softmax_pnq(const cpu_softmax_args *a)
{
    if (!(a->quant_p && a->pnq && !a->want_float && softmax_pnq_one_pass(a))) cpu_avx2_softmax(a);
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
    .softmax = cpu_avx2_softmax_pnq,
    .pv_int = cpu_avx2_pv_int,
    .pv_f32 = cpu_avx2_pv_f32,
};
