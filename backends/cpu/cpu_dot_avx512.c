/*
 * AVX-512 VNNI kernels (compiled with -mavx512f -mavx512bw -mavx512vnni;
 * called only when cpuid says the CPU and OS support them). One zmm holds
 * the 16 rows of a tile; a block product is 8 vpdpbusd (u8 x s8 -> s32).
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define CPU_FN(name) cpu_avx512_##name
#define CPU_EXP(x) expf(x)
#define CPU_HAVE_QUANTIZE 1
#define CPU_HAVE_SOFTMAX 1
#define CPU_HAVE_QK_INT 1
#define CPU_HAVE_PV_INT 1
#define CPU_HAVE_F32 1
#define CPU_HAVE_TRANSPOSE 1
#include "cpu_exp.h"
#include "cpu_lanes.h"

static inline __m512i bcast_word(const int8_t *p)
{
    int32_t w;
    memcpy(&w, p, sizeof w);
    return _mm512_set1_epi32(w);
}

/* e^x for x <= 0, to about 1 ulp (cpu_exp.h), then p 2^n: scalef rounds
 * subnormal results once. NaN propagates. */
static inline __m512 exp512(__m512 x)
{
    __m512 n, p;
    CPU_EXP_REDUCED(__m512, _mm512, x, n, p);
    return _mm512_scalef_ps(p, n);
}

/* The shared exponent of 16 block maxima (finite, >= 0), as cpu_lanes.h. */
static inline __m512i exponent512(__m512i mb, cpu_rule rule)
{
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i biased = _mm512_srli_epi32(mb, 23);
    const __m512i f = _mm512_and_si512(mb, _mm512_set1_epi32(0x7fffff));
    __m512i e = _mm512_sub_epi32(biased, _mm512_set1_epi32(129));
    e = _mm512_mask_add_epi32(e, _mm512_cmpgt_epi32_mask(f, _mm512_set1_epi32(rule.up)), e, one);
    e = _mm512_mask_sub_epi32(e, _mm512_cmple_epi32_mask(f, _mm512_set1_epi32(rule.down)), e, one);
    e = _mm512_mask_mov_epi32(e, _mm512_cmpeq_epi32_mask(biased, _mm512_setzero_si512()), _mm512_set1_epi32(-127));
    e = _mm512_mask_mov_epi32(e, _mm512_cmpeq_epi32_mask(mb, _mm512_setzero_si512()), _mm512_setzero_si512());
    e = _mm512_max_epi32(e, _mm512_set1_epi32(-127));
    return _mm512_min_epi32(e, _mm512_set1_epi32(127));
}

/* Each block's shared exponent e[b] from its largest magnitude's bits mx[b], and the
 * smallest and largest of them over each lane's non-zero blocks (both 0 where every
 * block is zero). Returns the lanes with a non-finite block. */
static inline __mmask16 block_exponents(const __m512i *mx, int nblk, cpu_rule rule, __m512i *e, __m512i *emin_out,
                                        __m512i *emax_out)
{
    __m512i emin = _mm512_set1_epi32(127), emax = _mm512_set1_epi32(-127);
    __mmask16 bad = 0;
    for (int b = 0; b < nblk; b++) {
        bad |= _mm512_cmpge_epi32_mask(mx[b], _mm512_set1_epi32(0x7f800000));
        const __mmask16 nz = _mm512_cmpneq_epi32_mask(mx[b], _mm512_setzero_si512()); /* all-zero blocks do not count */
        e[b] = exponent512(mx[b], rule);
        emin = _mm512_mask_min_epi32(emin, nz, emin, e[b]);
        emax = _mm512_mask_max_epi32(emax, nz, emax, e[b]);
    }
    const __mmask16 none = _mm512_cmpgt_epi32_mask(emin, emax);
    *emin_out = _mm512_mask_mov_epi32(emin, none, _mm512_setzero_si512());
    *emax_out = _mm512_mask_mov_epi32(emax, none, _mm512_setzero_si512());
    return bad;
}

/* How far a block's codes shift left onto the lane's smallest exponent in a fused
 * form: e - emin, at most `limit` (0: no fused form) and 0 for all-zero blocks
 * (whose exponent was left out of emin). */
static inline __m512i code_shift(__m512i e, __m512i emin, int limit)
{
    return _mm512_max_epi32(_mm512_min_epi32(_mm512_sub_epi32(e, emin), _mm512_set1_epi32(limit)), _mm512_setzero_si512());
}

/* Where a P^ block's codes go in the fused form of `chains` chains (0: none): its
 * chain (e - emin) / (CPU_FUSED_SHIFT_P + 1) in *chain, and the shift left onto that
 * chain's unit, the rest, returned. */
static inline __m512i p_chain_shift(__m512i e, __m512i emin, int chains, __m512i *chain)
{
    const __m512i step = _mm512_set1_epi32(CPU_FUSED_SHIFT_P + 1);
    __m512i sh = code_shift(e, emin, chains ? (CPU_FUSED_SHIFT_P + 1) * chains - 1 : 0), c = _mm512_setzero_si512();
    for (int k = 1; k < chains; k++) {
        const __mmask16 up = _mm512_cmpge_epi32_mask(sh, step);
        c = _mm512_mask_add_epi32(c, up, c, _mm512_set1_epi32(1));
        sh = _mm512_mask_sub_epi32(sh, up, sh, step);
    }
    *chain = c;
    return sh;
}

/* A word of shifted P^ codes into its chain's words, zeros into the other chains'
 * (chain_words apart). */
static inline void store_p_word(uint32_t *pp, size_t chain_words, __m512i word, __m512i chain, int chains)
{
    if (chains <= 1) {
        _mm512_storeu_si512(pp, word);
        return;
    }
    for (int c = 0; c < chains; c++)
        _mm512_storeu_si512(pp + c * chain_words, _mm512_maskz_mov_epi32(_mm512_cmpeq_epi32_mask(chain, _mm512_set1_epi32(c)), word));
}

/* Twice the E2M1 rounding, given w = 2 |x| 2^-e (see cpu_lanes.h round2). */
static inline __m512 round2_512(__m512 w)
{
    __m512i eb = _mm512_and_si512(_mm512_castps_si512(w), _mm512_set1_epi32(0x7f800000));
    eb = _mm512_max_epu32(eb, _mm512_set1_epi32(128 << 23));
    const __m512 c = _mm512_castsi512_ps(_mm512_add_epi32(eb, _mm512_set1_epi32(22 << 23)));
    const __m512 r = _mm512_sub_ps(_mm512_add_ps(w, c), c);
    return _mm512_min_ps(_mm512_set1_ps(12.0f), r); /* NaN in, NaN out */
}

/* 16 x 16 32-bit elements transposed in registers: pairs, quads, then 128-bit lanes twice. */
static inline void transpose16x16(__m512i v[16])
{
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
    }
    for (int i = 0; i < 16; i += 4)
        for (int j = 0; j < 2; j++) {
            v[i + 2 * j] = _mm512_unpacklo_epi64(t[i + j], t[i + 2 + j]);
            v[i + 2 * j + 1] = _mm512_unpackhi_epi64(t[i + j], t[i + 2 + j]);
        }
    for (int i = 0; i < 16; i += 8)
        for (int j = 0; j < 4; j++) {
            t[i + j] = _mm512_shuffle_i32x4(v[i + j], v[i + 4 + j], 0x88);
            t[i + 4 + j] = _mm512_shuffle_i32x4(v[i + j], v[i + 4 + j], 0xdd);
        }
    for (int j = 0; j < 8; j++) {
        v[j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0x88);
        v[8 + j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0xdd);
    }
}

static void cpu_avx512_transpose(const void *src, int64_t src_stride, int rows, int valid, int cols, void *dst,
                                 int64_t dst_stride)
{
    const uint32_t *s = src;
    uint32_t *d = dst;
    for (int r0 = 0; r0 < rows; r0 += 16) {
        const int nr = rows - r0 < 16 ? rows - r0 : 16;
        const __mmask16 rm = (__mmask16)((1u << nr) - 1u);
        for (int c0 = 0; c0 < cols; c0 += 16) {
            const int nc = cols - c0 < 16 ? cols - c0 : 16;
            const __mmask16 cm = (__mmask16)((1u << nc) - 1u);
            __m512i v[16];
            for (int i = 0; i < 16; i++)
                v[i] = i < nr && r0 + i < valid ? _mm512_maskz_loadu_epi32(cm, s + (r0 + i) * src_stride + c0)
                                                : _mm512_setzero_si512();
            transpose16x16(v);
            for (int c = 0; c < nc; c++) _mm512_mask_storeu_epi32(d + (c0 + c) * dst_stride + r0, rm, v[c]);
        }
    }
}

/* cpu_lanes.h's quantize with intrinsics (the compiler does not vectorize
 * that one well): same outputs, same rounding, NaN blocks included. */
static void cpu_avx512_quantize(const float *x, int nblk, cpu_rule rule, int offset, const cpu_quant_out *out)
{
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff), nibtab = _mm512_setr_epi32(0, 1, 2, 3, 4, 0, 5, 0, 6, 0, 0, 0, 7, 0, 0, 0);
    const __m512 one = _mm512_set1_ps(1.0f), nan = _mm512_set1_ps(NAN);
    for (int b = 0; b < nblk; b++) {
        const float *xb = x + (size_t)b * 32 * CPU_LANES;
        __m512i mx = _mm512_setzero_si512();
        for (int i = 0; i < 32; i++) mx = _mm512_max_epi32(mx, _mm512_and_si512(_mm512_loadu_si512(xb + i * CPU_LANES), absmask));
        const __mmask16 bad = _mm512_cmpge_epi32_mask(mx, _mm512_set1_epi32(0x7f800000));
        const __m512i e = _mm512_maskz_mov_epi32((__mmask16)~bad, exponent512(mx, rule));
        const __m512 to_w = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_set1_epi32(1), e));
        const __m512 half = _mm512_scalef_ps(one, _mm512_cvtepi32_ps(_mm512_sub_epi32(e, _mm512_set1_epi32(1))));
        if (out->scale)
            _mm512_storeu_ps(out->scale + b * CPU_LANES, _mm512_mask_mov_ps(_mm512_scalef_ps(one, _mm512_cvtepi32_ps(e)), bad, nan));
        if (out->sbyte)
            _mm_storeu_si128((__m128i *)(out->sbyte + b * CPU_LANES),
                             _mm512_cvtepi32_epi8(_mm512_mask_mov_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(127)), bad, _mm512_set1_epi32(0xff))));
        __m512i sum = _mm512_setzero_si512();
        for (int t = 0; t < CPU_WORDS; t++) {
            __m512i word = _mm512_setzero_si512();
            for (int k = 0; k < 4; k++) {
                const int i = 4 * t + k;
                const __m512i xv = _mm512_loadu_si512(xb + i * CPU_LANES);
                const __m512 a = _mm512_castsi512_ps(_mm512_and_si512(xv, absmask));
                const __m512 w = _mm512_maskz_mov_ps((__mmask16)~bad, round2_512(_mm512_scalef_ps(a, to_w)));
                const __m512i d = _mm512_cvtps_epi32(w);
                const __mmask16 neg = _mm512_cmplt_epi32_mask(xv, _mm512_setzero_si512()); /* the sign bit */
                const __m512i sd = _mm512_mask_sub_epi32(d, neg, _mm512_setzero_si512(), d);
                sum = _mm512_add_epi32(sum, sd);
                const __m512i byte = _mm512_and_si512(_mm512_add_epi32(sd, _mm512_set1_epi32(offset)), _mm512_set1_epi32(0xff));
                word = _mm512_or_si512(word, _mm512_sll_epi32(byte, _mm_cvtsi32_si128(8 * k)));
                if (out->decoded) {
                    const __m512i sign = _mm512_andnot_si512(absmask, xv);
                    const __m512 dec = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(_mm512_mul_ps(w, half)), sign));
                    _mm512_storeu_ps(out->decoded + (size_t)(b * 32 + i) * CPU_LANES, _mm512_mask_mov_ps(dec, bad, nan));
                }
                if (out->nibble) {
                    __m512i c = _mm512_permutexvar_epi32(d, nibtab);
                    c = _mm512_mask_or_epi32(c, neg, c, _mm512_set1_epi32(8));
                    c = _mm512_maskz_mov_epi32((__mmask16)~bad, c);
                    _mm_storeu_si128((__m128i *)(out->nibble + (size_t)(b * 32 + i) * CPU_LANES), _mm512_cvtepi32_epi8(c));
                }
            }
            if (out->packed) _mm512_storeu_si512(out->packed + (size_t)(b * CPU_WORDS + t) * CPU_LANES, word);
        }
        if (out->sum) _mm512_storeu_si512(out->sum + b * CPU_LANES, sum);
    }
}

static unsigned cpu_avx512_quantize_fused(const float *x, int nblk, cpu_rule rule, int offset, uint32_t *packed,
                                          float *smin, int32_t *sum)
{
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff), zero = _mm512_setzero_si512();
    __m512i mx[8], e[8], emin, emax;
    for (int b = 0; b < nblk; b++) {
        const float *xb = x + (size_t)b * 32 * CPU_LANES;
        mx[b] = zero;
        for (int i = 0; i < 32; i++) mx[b] = _mm512_max_epi32(mx[b], _mm512_and_si512(_mm512_loadu_si512(xb + i * CPU_LANES), absmask));
    }
    const __mmask16 bad = block_exponents(mx, nblk, rule, e, &emin, &emax);
    __mmask16 ok = (__mmask16)~bad & _mm512_cmple_epi32_mask(_mm512_sub_epi32(emax, emin), _mm512_set1_epi32(CPU_FUSED_SHIFT)) &
                   _mm512_cmpge_epi32_mask(emin, _mm512_set1_epi32(-60)) & _mm512_cmple_epi32_mask(emin, _mm512_set1_epi32(60));
    _mm512_storeu_ps(smin, _mm512_scalef_ps(_mm512_set1_ps(1.0f), _mm512_cvtepi32_ps(emin)));
    __m512i total = zero;
    for (int b = 0; b < nblk; b++) {
        const float *xb = x + (size_t)b * 32 * CPU_LANES;
        const __m512 to_w = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_set1_epi32(1), e[b]));
        /* shift 0 for all-zero blocks (their exponent was left out of emin) */
        const __m512i sh = code_shift(e[b], emin, CPU_FUSED_SHIFT);
        for (int t = 0; t < CPU_WORDS; t++) {
            __m512i word = zero;
            for (int k = 0; k < 4; k++) {
                const __m512i xv = _mm512_loadu_si512(xb + (4 * t + k) * CPU_LANES);
                const __m512 a = _mm512_castsi512_ps(_mm512_and_si512(xv, absmask));
                const __m512i d = _mm512_sllv_epi32(_mm512_cvtps_epi32(round2_512(_mm512_scalef_ps(a, to_w))), sh);
                const __m512i sd = _mm512_mask_sub_epi32(d, _mm512_cmplt_epi32_mask(xv, zero), zero, d);
                total = _mm512_add_epi32(total, sd);
                const __m512i byte = _mm512_and_si512(_mm512_add_epi32(sd, _mm512_set1_epi32(offset)), _mm512_set1_epi32(0xff));
                word = _mm512_or_si512(word, _mm512_sll_epi32(byte, _mm_cvtsi32_si128(8 * k)));
            }
            _mm512_storeu_si512(packed + (size_t)(b * CPU_WORDS + t) * CPU_LANES, word);
        }
    }
    if (sum) _mm512_storeu_si512(sum, total);
    return ok;
}

/* The shared exponents of a tile's P^ blocks from their P~ maxima (bits, >= 0),
 * and the fused form's chain count (0: none): every row's non-zero block exponents
 * within CPU_FUSED_CHAINS chains of CPU_FUSED_SHIFT_P + 1 binades from its smallest,
 * which is at least 2^-60, none NaN. Each chain's unit goes to psc8. */
static int p_exponents(const cpu_softmax_args *a, const __m512i *mx, int blocks, __m512i *e, __m512i *emin_out)
{
    __m512i emin, emax;
    const __mmask16 bad = block_exponents(mx, blocks, a->rule, e, &emin, &emax);
    *emin_out = emin;
    const int chains = _mm512_reduce_max_epi32(_mm512_sub_epi32(emax, emin)) / (CPU_FUSED_SHIFT_P + 1) + 1;
    if (!a->fuse || bad || chains > CPU_FUSED_CHAINS || _mm512_cmplt_epi32_mask(emin, _mm512_set1_epi32(-60))) return 0;
    for (int c = 0; c < chains; c++)
        _mm512_storeu_ps(a->psc8 + c * CPU_LANES, _mm512_scalef_ps(_mm512_set1_ps(1.0f), _mm512_cvtepi32_ps(_mm512_add_epi32(
                                                      emin, _mm512_set1_epi32(c * (CPU_FUSED_SHIFT_P + 1))))));
    return chains;
}

/* P^ of one 32-key block with shared exponent e from P~ stored in p. Adds the
 * decoded values to sum_h in key order; NaN propagates. */
static inline __m512 quantize_p_block(const cpu_softmax_args *a, float *p, int b, __m512i e, __m512 sum_h,
                                      __m512i emin, int chains, size_t chain_words)
{
    __m512i chain;
    const __m512i sh = p_chain_shift(e, emin, chains, &chain);
    const __m512 to_w = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_set1_epi32(1), e));
    const __m512 half = _mm512_scalef_ps(_mm512_set1_ps(1.0f), _mm512_cvtepi32_ps(_mm512_sub_epi32(e, _mm512_set1_epi32(1))));
    _mm512_storeu_ps(a->psc + b * CPU_LANES, _mm512_scalef_ps(_mm512_set1_ps(1.0f), _mm512_cvtepi32_ps(e)));
    uint32_t *pp = a->pp + (size_t)b * CPU_WORDS * CPU_LANES;
    for (int t = 0; t < CPU_WORDS; t++) {
        __m512i word = _mm512_setzero_si512();
        for (int k = 0; k < 4; k++) {
            float *row = p + (4 * t + k) * CPU_LANES;
            const __m512 w = round2_512(_mm512_scalef_ps(_mm512_loadu_ps(row), to_w));
            const __m512i d = _mm512_sllv_epi32(_mm512_cvtps_epi32(w), sh);
            word = _mm512_or_si512(word, _mm512_slli_epi32(d, 8 * k));
            const __m512 dec = _mm512_mul_ps(w, half);
            sum_h = _mm512_add_ps(sum_h, dec);
            if (a->want_float) _mm512_storeu_ps(row, dec);
        }
        store_p_word(pp + t * CPU_LANES, chain_words, word, chain, chains);
    }
    return sum_h;
}

/* P^'s doubled code of e^x under block exponent e, found from x itself: w = 2 e^x 2^-e
 * rounds to the code whose interval holds log2 w, so the E2M1 boundaries of w (0.5,
 * 1.5, 2.5, 3.5, 5, 7, 10) become boundaries of j = 7 (log2 w + 1) = 7 log2(e) x +
 * 7 (2 - e). Cells [c, c + 1) of j hold at most one boundary each (they lie >= 3.4
 * apart), so a cell's first code, and the cell above's first code past its boundary,
 * are two table lookups. No exp is formed; the one rounding of the fma (and of 7 log2 e)
 * moves j by at most 2^-20 + 2^-24 |7 log2(e) x|: P~'s boundaries move by less than
 * 1 + |x| / 2 ulp, inside the 3 + 2 |x| ulp an exp may err (SPEC §3, conform_flip.c). */
static const float p_lut_bound[32] __attribute__((aligned(64))) = {
    0.0f, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY,
    CPU_P_BOUND_1, INFINITY, INFINITY, INFINITY, INFINITY, CPU_P_BOUND_2, INFINITY, INFINITY,
    CPU_P_BOUND_3, INFINITY, INFINITY, INFINITY, CPU_P_BOUND_4, INFINITY, INFINITY,
    CPU_P_BOUND_5, INFINITY, INFINITY, INFINITY, CPU_P_BOUND_6, INFINITY};
static const int32_t p_lut_code[32] __attribute__((aligned(64))) = {
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 6, 6, 6, 8, 8, 8, 8, 12};

/* P^ of one 32-key block with shared exponent e straight from its scores s
 * (P~ = e^(s - mnew), never formed). Returns the block's row sum of P^; *chk
 * turns NaN where a score is NaN or m' and a score are +Inf. */
static inline __m512 quantize_p_block_scores(const cpu_softmax_args *a, const float *s, int b, __m512i e, __m512i emin,
                                             int chains, size_t chain_words, __m512 mnew, __m512 *chk)
{
    __m512i chain;
    const __m512i sh = p_chain_shift(e, emin, chains, &chain);
    const __m512 c7 = _mm512_set1_ps(7.0f * 1.44269504088896341f), top = _mm512_set1_ps(31.5f), zero = _mm512_setzero_ps();
    const __m512 at = _mm512_cvtepi32_ps(_mm512_mullo_epi32(_mm512_sub_epi32(_mm512_set1_epi32(2), e), _mm512_set1_epi32(7)));
    const __m512 b0 = _mm512_load_ps(p_lut_bound), b1 = _mm512_load_ps(p_lut_bound + 16);
    const __m512i c0 = _mm512_load_si512(p_lut_code), c1 = _mm512_load_si512(p_lut_code + 16), one = _mm512_set1_epi32(1);
    /* the code tables moved to byte k of a word, so that four codes OR into their word */
    __m512i ck0[4], ck1[4];
    for (int k = 0; k < 4; k++) {
        ck0[k] = _mm512_slli_epi32(c0, 8 * k);
        ck1[k] = _mm512_slli_epi32(c1, 8 * k);
    }
    _mm512_storeu_ps(a->psc + b * CPU_LANES, _mm512_scalef_ps(_mm512_set1_ps(1.0f), _mm512_cvtepi32_ps(e)));
    uint32_t *pp = a->pp + (size_t)b * CPU_WORDS * CPU_LANES;
    __m512i codes = _mm512_setzero_si512();
    __m512 nan = *chk;
    for (int t = 0; t < CPU_WORDS; t++) {
        __m512i d[4];
        for (int k = 0; k < 4; k++) {
            const __m512 j = _mm512_fmadd_ps(_mm512_sub_ps(_mm512_loadu_ps(s + (4 * t + k) * CPU_LANES), mnew), c7, at);
            nan = _mm512_add_ps(nan, j); /* j <= 7 * 129: only NaN makes the sum NaN */
            const __m512 jc = _mm512_min_ps(_mm512_max_ps(j, zero), top); /* -Inf and below: cell 0 at 0, code 0 */
            const __m512i cell = _mm512_cvttps_epi32(jc);
            const __mmask16 past = _mm512_cmp_ps_mask(jc, _mm512_permutex2var_ps(b0, cell, b1), _CMP_GT_OQ);
            d[k] = _mm512_permutex2var_epi32(ck0[k], _mm512_mask_add_epi32(cell, past, cell, one), ck1[k]);
        }
        /* codes <= 12 shifted by <= 4 stay within their byte: the word shifts as a whole */
        const __m512i word = _mm512_ternarylogic_epi32(_mm512_ternarylogic_epi32(d[0], d[1], d[2], 0xfe), d[3], d[3], 0xfc);
        codes = _mm512_dpbusd_epi32(codes, word, _mm512_set1_epi32(0x01010101)); /* the four codes' sum */
        store_p_word(pp + t * CPU_LANES, chain_words, _mm512_sllv_epi32(word, sh), chain, chains);
    }
    *chk = nan;
    /* the block's doubled codes sum exactly (<= 384); P^ = code 2^(e - 1) */
    return _mm512_scalef_ps(_mm512_cvtepi32_ps(codes), _mm512_cvtepi32_ps(_mm512_sub_epi32(e, one)));
}

/* The online-softmax state of one tile that both forms share. */
typedef struct softmax_tile {
    __m512 mnew, alpha;
    __mmask16 live; /* rows that see a key by now */
    int masked;     /* some key of the tile is hidden from some row */
    int blocks;
    __m512 bmax[4096 / 32]; /* each block's largest score */
} softmax_tile;

/* The PNQ step in one pass over the scores (quantized P, no float P wanted):
 * a block's P~ maximum is e^(its largest score - m'), exp being monotonic,
 * so its shared exponent is known before its elements are, and each score
 * goes to its P^ code directly. Returns 0, having written nothing but pp,
 * psc and psc8, when a row sum is NaN (NaN or +Inf scores): the two-pass form
 * handles those. */
static int softmax_pnq_one_pass(const cpu_softmax_args *a, const softmax_tile *t)
{
    __m512i mx[4096 / 32], e[4096 / 32], emin;
    mx[0] = _mm512_setzero_si512(); /* blocks >= 1; says so to the compiler */
    for (int b = 0; b < t->blocks; b++)
        mx[b] = _mm512_castps_si512(exp512(_mm512_sub_ps(t->bmax[b], t->mnew)));
    const int fused = p_exponents(a, mx, t->blocks, e, &emin);
    const size_t chain_words = (size_t)t->blocks * CPU_WORDS * CPU_LANES;
    __m512 sum_h = _mm512_setzero_ps(), chk = _mm512_setzero_ps();
    for (int b = 0; b < t->blocks; b++)
        sum_h = _mm512_add_ps(sum_h, quantize_p_block_scores(a, a->s + (size_t)b * 32 * CPU_LANES, b, e[b], emin, fused,
                                                             chain_words, t->mnew, &chk));
    if (_mm512_cmp_ps_mask(chk, chk, _CMP_UNORD_Q)) return 0;
    if (a->fused) *a->fused = fused;
    _mm512_storeu_ps(a->l, _mm512_add_ps(_mm512_mul_ps(t->alpha, _mm512_loadu_ps(a->l)), sum_h));
    return 1;
}

/* The general form: P~ of every block first (stored over the scores), then
 * P^ from the blocks' maxima of P~. */
static void softmax_two_pass(const cpu_softmax_args *a, const softmax_tile *t)
{
    const int len = a->len, blocks = t->blocks, masked = t->masked;
    const __m512 ninf = _mm512_set1_ps(-INFINITY), zero = _mm512_setzero_ps(), mnew = t->mnew, alpha = t->alpha;
    const __mmask16 live = t->live;
    __m512 sum_t = zero, sum_h = zero;
    const int need_t = !a->quant_p || !a->pnq; /* P~'s row sum: direct placement, or P unquantized */
    __m512i mxs[4096 / 32], e[4096 / 32], emin = _mm512_setzero_si512();
    /* pass 1: P~ of every block (and its maximum), in key order */
    for (int b = 0; b < blocks; b++) {
        float *p = a->s + (size_t)b * 32 * CPU_LANES;
        const int n = len - b * 32 < 32 ? len - b * 32 : 32;
        __m512i mx = _mm512_setzero_si512(); /* P~ >= 0: integer order of the bits, NaN on top */
        for (int i = 0; i < 32; i++) {
            __m512 x = zero;
            if (i < n) {
                const __m512 s = _mm512_loadu_ps(p + i * CPU_LANES);
                x = exp512(_mm512_sub_ps(s, mnew));
                if (masked) x = _mm512_maskz_mov_ps(_mm512_mask_cmp_ps_mask(live, s, ninf, _CMP_NEQ_UQ), x);
            }
            _mm512_storeu_ps(p + i * CPU_LANES, x);
            if (need_t) sum_t = _mm512_add_ps(sum_t, x);
            mx = _mm512_max_epi32(mx, _mm512_castps_si512(x));
        }
        mxs[b] = mx;
    }
    const int fused = a->quant_p ? p_exponents(a, mxs, blocks, e, &emin) : 0;
    if (a->fused) *a->fused = fused;
    /* pass 2: P^ codes and the row sum of the decoded values, in key order */
    for (int b = 0; b < blocks && a->quant_p; b++) {
        float *p = a->s + (size_t)b * 32 * CPU_LANES;
        const __m512i mx = mxs[b];
        if (_mm512_cmpge_epi32_mask(mx, _mm512_set1_epi32(0x7f800000))) { /* NaN scores (allow_non_finite): the lane-wise code handles NaN blocks */
            float dec[32 * CPU_LANES];
            const cpu_quant_out q = {a->pp + (size_t)b * CPU_WORDS * CPU_LANES, a->psc + b * CPU_LANES, dec,
                                     NULL, NULL, NULL};
            cpu_avx512_quantize(p, 1, a->rule, 0, &q);
            for (int i = 0; i < 32; i++) sum_h = _mm512_add_ps(sum_h, _mm512_loadu_ps(dec + i * CPU_LANES));
            if (a->want_float) memcpy(p, dec, sizeof dec);
            continue;
        }
        sum_h = quantize_p_block(a, p, b, e[b], sum_h, emin, fused, (size_t)blocks * CPU_WORDS * CPU_LANES);
    }
    if (!a->quant_p) sum_h = sum_t;
    const __m512 add = (a->pnq || !a->quant_p) ? sum_h : sum_t;
    _mm512_storeu_ps(a->l, _mm512_add_ps(_mm512_mul_ps(alpha, _mm512_loadu_ps(a->l)), add));
}

static void cpu_avx512_softmax(const cpu_softmax_args *a)
{
    const int len = a->len;
    softmax_tile t;
    t.blocks = (len + 31) / 32;
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const __m512i lim = _mm512_min_epi32(_mm512_loadu_si512(a->lim), _mm512_set1_epi32(len - 1));
    t.masked = _mm512_reduce_min_epi32(lim) < len - 1 || len % 32 != 0;
    __m512 tmax = ninf;
    for (int b = 0; b < t.blocks; b++) {
        __m512 bm = ninf;
        for (int j = 32 * b; j < 32 * b + 32; j++) {
            __m512 s = ninf; /* keys past the end: zero padding, P~ = 0 */
            if (j < len) s = _mm512_loadu_ps(a->s + j * CPU_LANES);
            if (t.masked) {
                s = _mm512_mask_mov_ps(ninf, _mm512_cmpge_epi32_mask(lim, _mm512_set1_epi32(j)), s);
                _mm512_storeu_ps(a->s + j * CPU_LANES, s);
            }
            bm = _mm512_max_ps(s, bm);
        }
        t.bmax[b] = bm;
        tmax = _mm512_max_ps(bm, tmax);
    }
    const __m512 m = _mm512_loadu_ps(a->m);
    t.mnew = _mm512_max_ps(tmax, m);
    t.alpha = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m, ninf, _CMP_NEQ_UQ), exp512(_mm512_sub_ps(m, t.mnew)));
    t.alpha = _mm512_mask_mov_ps(t.alpha, _mm512_cmp_ps_mask(t.mnew, ninf, _CMP_EQ_OQ), _mm512_set1_ps(1.0f));
    /* a row with nothing visible yet: the reference skips the tile, so its P~ is 0 even where S is NaN */
    t.live = _mm512_cmp_ps_mask(t.mnew, ninf, _CMP_NEQ_UQ);
    if (t.live != 0xffff) t.masked = 1;
    if (!(a->quant_p && a->pnq && !a->want_float && t.live == 0xffff && softmax_pnq_one_pass(a, &t))) softmax_two_pass(a, &t);
    _mm512_storeu_ps(a->m, t.mnew);
    _mm512_storeu_ps(a->alpha, t.alpha);
}

static void cpu_avx512_qk_int(const cpu_qk_int_args *a)
{
    const int dblk = a->dblk, d = dblk * 32;
    const __m512 scale = _mm512_set1_ps(a->scale);
    for (int j = 0; j < a->nkeys; j += 8) {
        __m512 dot[8];
        for (int r = 0; r < 8; r++) dot[r] = _mm512_setzero_ps();
        for (int b = 0; b < dblk; b++) {
            __m512i acc[8];
            for (int r = 0; r < 8; r++) acc[r] = _mm512_set1_epi32(a->kcorr[(j + r) * dblk + b]);
            for (int t = 0; t < CPU_WORDS; t++) {
                const __m512i q = _mm512_loadu_si512(a->qp + (size_t)(b * CPU_WORDS + t) * CPU_LANES);
                const int8_t *k = a->k + (size_t)j * d + b * 32 + 4 * t;
                for (int r = 0; r < 8; r++) acc[r] = _mm512_dpbusd_epi32(acc[r], q, bcast_word(k + r * d));
            }
            const __m512 qs = _mm512_loadu_ps(a->qsc + b * CPU_LANES);
            for (int r = 0; r < 8; r++) {
                const __m512 sc = _mm512_mul_ps(qs, _mm512_set1_ps(a->ksc[(j + r) * dblk + b]));
                dot[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r]), sc, dot[r]); /* exact product: one rounding, as the reference's add */
            }
        }
        for (int r = 0; r < 8; r++) _mm512_storeu_ps(a->s + (j + r) * CPU_LANES, _mm512_mul_ps(dot[r], scale));
    }
}

static void cpu_avx512_qk_fused(const cpu_qk_fused_args *a)
{
    const int d = a->d;
    const __m512 scale = _mm512_set1_ps(a->scale), qs = _mm512_loadu_ps(a->qsc);
    for (int j = 0; j < a->nkeys; j += 8) {
        __m512i acc[8];
        for (int r = 0; r < 8; r++) acc[r] = _mm512_set1_epi32(a->kcorr[j + r]);
        for (int b = 0; b < d / 32; b++) /* blocks of 8 words: the inner loop unrolls */
            for (int t = 0; t < CPU_WORDS; t++) {
                const __m512i q = _mm512_loadu_si512(a->qp + (size_t)(b * CPU_WORDS + t) * CPU_LANES);
                const int8_t *k = a->k + (size_t)j * d + b * 32 + 4 * t;
                for (int r = 0; r < 8; r++) acc[r] = _mm512_dpbusd_epi32(acc[r], q, bcast_word(k + r * d));
            }
        for (int r = 0; r < 8; r++) {
            const __m512 sc = _mm512_mul_ps(qs, _mm512_set1_ps(a->ksc[j + r]));
            const __m512 dot = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r]), sc); /* exact */
            _mm512_storeu_ps(a->s + (j + r) * CPU_LANES, _mm512_mul_ps(dot, scale));
        }
    }
}

/* Eight output columns at a time, their block sums kept in registers over
 * the tile's blocks; then acc = alpha * acc + pv, in the reference's order. */
static void cpu_avx512_pv_int(const cpu_pv_int_args *a)
{
    const __m512 alpha = _mm512_loadu_ps(a->alpha);
    for (int c = 0; c < a->d; c += 8) {
        __m512 pv[8];
        for (int r = 0; r < 8; r++) pv[r] = _mm512_setzero_ps();
        for (int b = 0; b < a->blocks; b++) {
            __m512i acc[8];
            for (int r = 0; r < 8; r++) acc[r] = _mm512_setzero_si512();
            const int8_t *v = a->vt + c * a->vt_stride + b * 32;
            const uint32_t *pp = a->pp + (size_t)b * CPU_WORDS * CPU_LANES;
            for (int t = 0; t < CPU_WORDS; t++) {
                const __m512i p = _mm512_loadu_si512(pp + t * CPU_LANES);
                for (int r = 0; r < 8; r++) acc[r] = _mm512_dpbusd_epi32(acc[r], p, bcast_word(v + r * a->vt_stride + 4 * t));
            }
            const __m512 ps = _mm512_loadu_ps(a->psc + b * CPU_LANES);
            for (int r = 0; r < 8; r++) {
                const __m512 sc = _mm512_mul_ps(ps, _mm512_set1_ps(a->vsc[(c + r) * a->vsc_stride + b]));
                pv[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r]), sc, pv[r]); /* exact product */
            }
        }
        for (int r = 0; r < 8; r++) {
            float *o = a->acc + (c + r) * CPU_LANES;
            _mm512_storeu_ps(o, _mm512_add_ps(_mm512_mul_ps(alpha, _mm512_loadu_ps(o)), pv[r]));
        }
    }
}

static void cpu_avx512_pv_fused(const cpu_pv_fused_args *a)
{
    const __m512 alpha = _mm512_loadu_ps(a->alpha);
    for (int c = 0; c < a->d; c += 8) {
        __m512 o[8];
        for (int r = 0; r < 8; r++) o[r] = _mm512_mul_ps(alpha, _mm512_loadu_ps(a->acc + (c + r) * CPU_LANES));
        const int8_t *v = a->vt + c * a->vt_stride;
        for (int ch = 0; ch < a->chains; ch++) {
            const uint32_t *pp = a->pp + (size_t)ch * a->words * CPU_LANES;
            __m512i acc[8];
            for (int r = 0; r < 8; r++) acc[r] = _mm512_setzero_si512();
            for (int b = 0; b < a->words / CPU_WORDS; b++) /* blocks of 8 words: the inner loop unrolls */
                for (int t = 0; t < CPU_WORDS; t++) {
                    const int w = b * CPU_WORDS + t;
                    const __m512i p = _mm512_loadu_si512(pp + (size_t)w * CPU_LANES);
                    for (int r = 0; r < 8; r++) acc[r] = _mm512_dpbusd_epi32(acc[r], p, bcast_word(v + r * a->vt_stride + 4 * w));
                }
            const __m512 ps = _mm512_loadu_ps(a->psc8 + ch * CPU_LANES);
            for (int r = 0; r < 8; r++) {
                const __m512 sc = _mm512_mul_ps(ps, _mm512_set1_ps(a->vsc[(c + r) * a->vsc_stride]));
                o[r] = _mm512_add_ps(o[r], _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r]), sc)); /* the product is exact */
            }
        }
        for (int r = 0; r < 8; r++) _mm512_storeu_ps(a->acc + (c + r) * CPU_LANES, o[r]);
    }
}

static void cpu_avx512_qk_f32(const float *qt, const float *k, int nkeys, int d, float scale, float *s)
{
    for (int j = 0; j < nkeys; j += 8) {
        __m512 acc[8];
        for (int r = 0; r < 8; r++) acc[r] = _mm512_setzero_ps();
        const float *kj = k + (size_t)j * d;
        for (int c = 0; c < d; c++) {
            const __m512 q = _mm512_loadu_ps(qt + c * CPU_LANES);
            for (int r = 0; r < 8; r++) acc[r] = _mm512_fmadd_ps(q, _mm512_set1_ps(kj[r * d + c]), acc[r]);
        }
        for (int r = 0; r < 8; r++) _mm512_storeu_ps(s + (j + r) * CPU_LANES, _mm512_mul_ps(acc[r], _mm512_set1_ps(scale)));
    }
}

static void cpu_avx512_pv_f32(const float *p, const float *v, int len, int d, const float *alpha, float *acc)
{
    const __m512 al = _mm512_loadu_ps(alpha);
    for (int c = 0; c < d; c += 8) {
        __m512 o[8];
        for (int r = 0; r < 8; r++) o[r] = _mm512_mul_ps(al, _mm512_loadu_ps(acc + (c + r) * CPU_LANES));
        for (int j = 0; j < len; j++) {
            const __m512 pj = _mm512_loadu_ps(p + j * CPU_LANES);
            for (int r = 0; r < 8; r++) o[r] = _mm512_fmadd_ps(pj, _mm512_set1_ps(v[(size_t)j * d + c + r]), o[r]);
        }
        for (int r = 0; r < 8; r++) _mm512_storeu_ps(acc + (c + r) * CPU_LANES, o[r]);
    }
}

const cpu_kernels cpu_kernels_avx512 = {
    .name = "avx512-vnni",
    .quantize = cpu_avx512_quantize,
    .rotate = cpu_avx512_rotate,
    .transpose = cpu_avx512_transpose,
    .qk_int = cpu_avx512_qk_int,
    .qk_fused = cpu_avx512_qk_fused,
    .fused_q_offset = CPU_FUSED_OFFSET,
    .quantize_fused = cpu_avx512_quantize_fused,
    .qk_f32 = cpu_avx512_qk_f32,
    .softmax = cpu_avx512_softmax,
    .pv_int = cpu_avx512_pv_int,
    .pv_fused = cpu_avx512_pv_fused,
    .pv_f32 = cpu_avx512_pv_f32,
};
