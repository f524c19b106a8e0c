/*
 * The kernels in plain C, written as loops over the 16 lanes so that the
 * compiler vectorizes them with whatever flags the including file has. Each
 * cpu_dot_<isa>.c includes this once with CPU_FN (name suffix) and CPU_EXP
 * (a lane-wise exp) defined, and replaces the parts it has intrinsics for.
 *
 * Every fp32 step that the reference rounds is done in the reference's order
 * with the same operations, so only the exp (and the fp32 paths' summation
 * order) can differ from it.
 */
#ifndef CPU_FN
#error "define CPU_FN and CPU_EXP before including cpu_lanes.h"
#endif

#include <math.h>
#include <string.h>

#include "cpu_kernels.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF /* a fused a*b+c would not be the reference's rounding */
#endif

#define L CPU_LANES

static inline uint32_t CPU_FN(bits)(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float CPU_FN(flt)(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Shared exponent of a block whose maximum magnitude has bits `mb` (finite). */
static inline int32_t CPU_FN(exponent)(uint32_t mb, cpu_rule rule)
{
    const int32_t biased = (int32_t)(mb >> 23), f = (int32_t)(mb & 0x7fffffu);
    int32_t e = biased - 129 + (f > rule.up) - (f <= rule.down);
    e = biased == 0 ? -127 : e;
    e = mb == 0 ? 0 : e;
    return e < -127 ? -127 : (e > 127 ? 127 : e);
}

/* 2^e for e in [-127, 126] as a float (2^-127 is subnormal). */
static inline float CPU_FN(pow2)(int32_t e)
{
    return e >= -126 ? CPU_FN(flt)((uint32_t)(e + 127) << 23) : CPU_FN(flt)(0x00400000u);
}

/* Twice the E2M1 rounding of v = |x| 2^-e, given w = 2v (RNE, saturating at
 * 12): adding then subtracting 2^(E+22) rounds to the E2M1 grid at w's binade. */
static inline float CPU_FN(round2)(float w)
{
    uint32_t eb = CPU_FN(bits)(w) & 0x7f800000u;
    eb = eb > (128u << 23) ? eb : (128u << 23);
    const float c = CPU_FN(flt)(eb + (22u << 23));
    const float r = (w + c) - c;
    return r < 12.0f ? r : 12.0f;
}

#ifndef CPU_HAVE_QUANTIZE
static void CPU_FN(quantize)(const float *x, int nblk, cpu_rule rule, int offset, const cpu_quant_out *out)
{
    for (int b = 0; b < nblk; b++) {
        const float *xb = x + (size_t)b * 32 * L;
        int32_t mx[L], e[L];
        float inv[L], half_sc[L];
        for (int l = 0; l < L; l++) mx[l] = 0;
        for (int i = 0; i < 32; i++)
            for (int l = 0; l < L; l++) {
                int32_t a = (int32_t)(CPU_FN(bits)(xb[i * L + l]) & 0x7fffffffu);
                mx[l] = a > mx[l] ? a : mx[l];
            }
        for (int l = 0; l < L; l++) {
            const int nonfinite = mx[l] >= 0x7f800000;
            e[l] = CPU_FN(exponent)((uint32_t)mx[l], rule);
            e[l] = nonfinite ? 0 : e[l];
            inv[l] = CPU_FN(pow2)(-e[l]);
            half_sc[l] = CPU_FN(pow2)(e[l]) * 0.5f;
            if (out->scale) out->scale[b * L + l] = nonfinite ? NAN : CPU_FN(pow2)(e[l]);
            if (out->sbyte) out->sbyte[b * L + l] = nonfinite ? 0xff : (uint8_t)(e[l] + 127);
        }
        /* the codes first, then each output in its own loop: no branch in
         * the element loops, so the compiler vectorizes them */
        float r2[32 * L];
        int32_t sd[32 * L], nf[L];
        for (int l = 0; l < L; l++) nf[l] = mx[l] >= 0x7f800000;
        for (int i = 0; i < 32; i++)
            for (int l = 0; l < L; l++) {
                const uint32_t u = CPU_FN(bits)(xb[i * L + l]);
                /* (|x| 2^-e) * 2: both steps exact where a code can be non-zero */
                float r = CPU_FN(round2)((CPU_FN(flt)(u & 0x7fffffffu) * inv[l]) * 2.0f);
                r = nf[l] ? 0.0f : r; /* converting NaN to int is undefined */
                const int32_t d = (int32_t)r;
                r2[i * L + l] = r;
                sd[i * L + l] = (u >> 31) ? -d : d;
            }
        if (out->sum)
            for (int l = 0; l < L; l++) {
                int32_t t = 0;
                for (int i = 0; i < 32; i++) t += sd[i * L + l];
                out->sum[b * L + l] = t;
            }
        if (out->packed)
            for (int t = 0; t < CPU_WORDS; t++)
                for (int l = 0; l < L; l++) {
                    uint32_t w = 0;
                    for (int k = 0; k < 4; k++) w |= (uint32_t)((sd[(4 * t + k) * L + l] + offset) & 0xff) << (8 * k);
                    out->packed[(b * CPU_WORDS + t) * L + l] = w;
                }
        if (out->decoded)
            for (int i = 0; i < 32; i++)
                for (int l = 0; l < L; l++) {
                    const float v = r2[i * L + l] * half_sc[l];
                    const float sv = (CPU_FN(bits)(xb[i * L + l]) >> 31) ? -v : v;
                    out->decoded[(b * 32 + i) * L + l] = nf[l] ? NAN : sv;
                }
        if (out->nibble)
            for (int i = 0; i < 32; i++)
                for (int l = 0; l < L; l++) {
                    const int32_t d = (int32_t)r2[i * L + l];
                    const int32_t c3 = d <= 4 ? d : (d == 6 ? 5 : (d == 8 ? 6 : 7));
                    const int32_t neg = (int32_t)(CPU_FN(bits)(xb[i * L + l]) >> 31);
                    out->nibble[(b * 32 + i) * L + l] = (uint8_t)(nf[l] ? 0 : (neg << 3 | c3));
                }
    }
}
#endif

#ifndef CPU_HAVE_TRANSPOSE
static void CPU_FN(transpose)(const void *src, int64_t src_stride, int rows, int valid, int cols, void *dst, int64_t dst_stride)
{
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            uint32_t w = 0;
            if (r < valid) memcpy(&w, s + 4 * (r * src_stride + c), 4);
            memcpy(d + 4 * (c * dst_stride + r), &w, 4);
        }
}
#endif

static void CPU_FN(rotate)(float *x, int d)
{
    for (int h = 1; h < d; h *= 2)
        for (int i = 0; i < d; i += 2 * h)
            for (int j = i; j < i + h; j++)
                for (int l = 0; l < L; l++) {
                    const float a = x[j * L + l], b = x[(j + h) * L + l];
                    x[j * L + l] = a + b;
                    x[(j + h) * L + l] = a - b;
                }
    const float norm = (float)(1.0 / sqrt((double)d));
    for (int i = 0; i < d * L; i++) x[i] *= norm;
}

#ifndef CPU_HAVE_SOFTMAX
static void CPU_FN(softmax)(const cpu_softmax_args *a)
{
    const int len = a->len, blocks = (len + 31) / 32;
    float tmax[L], mnew[L], sum_t[L], sum_h[L];
    int32_t lim[L];
    for (int l = 0; l < L; l++) {
        lim[l] = a->lim[l] < len - 1 ? a->lim[l] : len - 1;
        tmax[l] = -INFINITY;
        sum_t[l] = sum_h[l] = 0.0f;
    }
    for (int j = 0; j < len; j++)
        for (int l = 0; l < L; l++) {
            const float v = a->s[j * L + l];
            const float s = j <= lim[l] ? v : -INFINITY;
            a->s[j * L + l] = s;
            tmax[l] = s > tmax[l] ? s : tmax[l];
        }
    for (int l = 0; l < L; l++) {
        mnew[l] = tmax[l] > a->m[l] ? tmax[l] : a->m[l];
        const float e = CPU_EXP(a->m[l] - mnew[l]);
        a->alpha[l] = mnew[l] == -INFINITY ? 1.0f : e;
    }
    for (int b = 0; b < blocks; b++) {
        float *p = a->s + (size_t)b * 32 * L;
        const int n = len - b * 32 < 32 ? len - b * 32 : 32;
        for (int i = 0; i < n; i++)
            for (int l = 0; l < L; l++) {
                const float s = p[i * L + l], x = CPU_EXP(s - mnew[l]);
                /* mnew = -inf: nothing visible yet, the reference skips the tile (even NaN scores) */
                const float e = (s == -INFINITY || mnew[l] == -INFINITY) ? 0.0f : x;
                p[i * L + l] = e;
                sum_t[l] += e;
            }
        for (int i = n; i < 32; i++) /* keys past the end: zero padding */
            for (int l = 0; l < L; l++) p[i * L + l] = 0.0f;
        if (a->quant_p) {
            float dec[32 * L];
            const cpu_quant_out q = {a->pp + (size_t)b * CPU_WORDS * L, a->psc + b * L, dec, NULL, NULL, NULL};
            CPU_FN(quantize)(p, 1, a->rule, 0, &q);
            for (int i = 0; i < 32; i++)
                for (int l = 0; l < L; l++) sum_h[l] += dec[i * L + l];
            if (a->want_float) memcpy(p, dec, sizeof dec);
        } else {
            for (int i = 0; i < 32; i++)
                for (int l = 0; l < L; l++) sum_h[l] += p[i * L + l];
        }
    }
    const int use_hat = a->pnq || !a->quant_p;
    for (int l = 0; l < L; l++) {
        a->l[l] = a->alpha[l] * a->l[l] + (use_hat ? sum_h[l] : sum_t[l]);
        a->m[l] = mnew[l];
    }
    if (a->fused) *a->fused = 0; /* no fused kernels on this path */
}
#endif

#ifndef CPU_HAVE_QK_INT
static void CPU_FN(qk_int)(const cpu_qk_int_args *a)
{
    const int d = a->dblk * 32;
    for (int j = 0; j < a->nkeys; j++) {
        float dot[L];
        for (int l = 0; l < L; l++) dot[l] = 0.0f;
        for (int b = 0; b < a->dblk; b++) {
            int32_t acc[L];
            for (int l = 0; l < L; l++) acc[l] = a->kcorr[j * a->dblk + b];
            for (int t = 0; t < CPU_WORDS; t++) {
                const int8_t *kw = a->k + (size_t)j * d + b * 32 + 4 * t;
                const uint32_t *qw = a->qp + (size_t)(b * CPU_WORDS + t) * L;
                for (int l = 0; l < L; l++)
                    for (int k = 0; k < 4; k++) acc[l] += (int32_t)((qw[l] >> (8 * k)) & 0xff) * kw[k];
            }
            const float ks = a->ksc[j * a->dblk + b];
            for (int l = 0; l < L; l++) dot[l] += (float)acc[l] * (a->qsc[b * L + l] * ks);
        }
        for (int l = 0; l < L; l++) a->s[j * L + l] = dot[l] * a->scale;
    }
}
#endif

#ifndef CPU_HAVE_PV_INT
static void CPU_FN(pv_int)(const cpu_pv_int_args *a)
{
    for (int c = 0; c < a->d; c++) {
        float pv[L];
        for (int l = 0; l < L; l++) pv[l] = 0.0f;
        for (int b = 0; b < a->blocks; b++) {
            int32_t acc[L];
            for (int l = 0; l < L; l++) acc[l] = 0;
            for (int t = 0; t < CPU_WORDS; t++) {
                const int8_t *vw = a->vt + c * a->vt_stride + b * 32 + 4 * t;
                const uint32_t *pw = a->pp + (size_t)(b * CPU_WORDS + t) * L;
                for (int l = 0; l < L; l++)
                    for (int k = 0; k < 4; k++) acc[l] += (int32_t)((pw[l] >> (8 * k)) & 0xff) * vw[k];
            }
            const float vs = a->vsc[c * a->vsc_stride + b];
            for (int l = 0; l < L; l++) pv[l] += (float)acc[l] * (a->psc[b * L + l] * vs);
        }
        for (int l = 0; l < L; l++) a->acc[c * L + l] = a->alpha[l] * a->acc[c * L + l] + pv[l];
    }
}
#endif

#ifndef CPU_HAVE_F32
static void CPU_FN(qk_f32)(const float *qt, const float *k, int nkeys, int d, float scale, float *s)
{
    for (int j = 0; j < nkeys; j += 4) {
        float acc[4][L];
        memset(acc, 0, sizeof acc);
        for (int c = 0; c < d; c++)
            for (int r = 0; r < 4; r++) {
                const float kv = k[(size_t)(j + r) * d + c];
                for (int l = 0; l < L; l++) acc[r][l] += qt[c * L + l] * kv;
            }
        for (int r = 0; r < 4; r++)
            for (int l = 0; l < L; l++) s[(j + r) * L + l] = acc[r][l] * scale;
    }
}

static void CPU_FN(pv_f32)(const float *p, const float *v, int len, int d, const float *alpha, float *acc)
{
    for (int c0 = 0; c0 < d; c0 += 4) {
        float o[4][L];
        for (int r = 0; r < 4; r++)
            for (int l = 0; l < L; l++) o[r][l] = alpha[l] * acc[(c0 + r) * L + l];
        for (int j = 0; j < len; j++)
            for (int r = 0; r < 4; r++) {
                const float vv = v[(size_t)j * d + c0 + r];
                for (int l = 0; l < L; l++) o[r][l] += p[j * L + l] * vv;
            }
        for (int r = 0; r < 4; r++)
            for (int l = 0; l < L; l++) acc[(c0 + r) * L + l] = o[r][l];
    }
}
#endif

#undef L
