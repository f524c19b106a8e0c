/*
 * MXFP8 P and V on the CPU, 16 lanes side by side (lanes are rows of P or columns of V),
 * so every step is a vertical operation the compiler can vectorize. The result equals the
 * format core (runtime/mxfp8.c) bit for bit (tests/cpu/test_cpu_fp8.c):
 *   e = floor(log2 M) - 8 from the bits of M; v = |x| 2^-e (exact: a power of two, and a
 *   subnormal product is far below E4M3's 2^-10 rounding threshold); v rounded to E4M3 by
 *   one fp32 addition of c = 2^(max(binade(v), -6) + 20), whose ulp is the E4M3 step at v,
 *   so fp32's round-to-nearest-even is E4M3's (the even multiple is the even code); then
 *   at most 448; decoded as r 2^e, one correctly rounded multiply (ldexpf's value).
 */
#include "cpu_pv_fp8.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_kernels.h"

#define L CPU_LANES

static inline uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static inline float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

void cpu_fp8_fake_quantize_lanes(float *x, int nblk, float *sum)
{
    if (sum)
        for (int l = 0; l < L; l++) sum[l] = 0.0f;
    for (int b = 0; b < nblk; b++) {
        float *blk = x + (size_t)b * MXA_BLOCK * L;
        uint32_t maxbits[L];
        for (int l = 0; l < L; l++) maxbits[l] = 0;
        for (int i = 0; i < MXA_BLOCK; i++)
            for (int l = 0; l < L; l++) {
                const uint32_t a = bits_of(blk[i * L + l]) & 0x7fffffffu;
                maxbits[l] = a > maxbits[l] ? a : maxbits[l];
            }
        float inv[L], scale[L];
        for (int l = 0; l < L; l++) {
            const int biased = (int)(maxbits[l] >> 23);
            int e = biased - 135;
            e = maxbits[l] == 0 ? 0 : biased == 0 || e < -127 ? -127 : e; /* e <= 119 for a finite M */
            inv[l] = float_of((uint32_t)(127 - e) << 23);                              /* 2^-e, normal */
            scale[l] = e >= -126 ? float_of((uint32_t)(e + 127) << 23) : float_of(0x00400000u); /* 2^e */
        }
        for (int i = 0; i < MXA_BLOCK; i++)
            for (int l = 0; l < L; l++) {
                const float xi = blk[i * L + l];
                const float v = fabsf(xi) * inv[l];
                const uint32_t vb = bits_of(v) >> 23;
                const float c = float_of(((vb > 121u ? vb : 121u) + 20u) << 23);
                float r = (v + c) - c;
                r = r < 448.0f ? r : 448.0f;
                const float d = copysignf(r * scale[l], xi);
                blk[i * L + l] = maxbits[l] >= 0x7f800000u ? NAN : d; /* a non-finite block decodes to NaN */
            }
        if (sum)
            for (int i = 0; i < MXA_BLOCK; i++)
                for (int l = 0; l < L; l++) sum[l] += blk[i * L + l];
    }
}

void cpu_fp8_quantize_p(float *p, int blocks, int pnq, const float *l_old, const float *alpha, float *l)
{
    float sum[L];
    cpu_fp8_fake_quantize_lanes(p, blocks, sum);
    if (pnq)
        for (int r = 0; r < L; r++) l[r] = alpha[r] * l_old[r] + sum[r];
}
