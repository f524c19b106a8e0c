/*
 * The CPU backend's lane-wise MXFP8 quantizer (backends/cpu/cpu_pv_fp8.c) against the format
 * core (runtime/mxfp8.c), bit for bit: random blocks of every magnitude (subnormals, few
 * fraction bits for ties), every E4M3 code and midpoint +-1 ulp at scales across the E8M0
 * range, saturation, zero/-0 and NaN/Inf blocks; and the lane sums in key order.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/cpu_pv_fp8.h"
#include "runtime/mxfp8.h"
#include "testutil.h"

#define L CPU_LANES

static float random_float(tu_rng *rng, int lo, int hi)
{
    const uint64_t r = tu_next(rng);
    uint32_t bits;
    if (r % 16 == 0) bits = 0;
    else if (r % 16 == 1) bits = (uint32_t)(r >> 8) & 0x7fffffu; /* subnormal */
    else {
        const int ex = lo + (int)((r >> 4) % (uint64_t)(hi - lo + 1));
        bits = (uint32_t)(ex + 127) << 23 | ((uint32_t)(r >> 20) & 0x7fffffu);
        if (r % 16 == 2) bits &= ~0xfffffu; /* ties */
    }
    if (r >> 63) bits |= 0x80000000u;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* nblk blocks of x [nblk*32][16] through both; fails on the first differing bit. */
static void check_lanes(const float *x, int nblk)
{
    float y[4 * 32 * L], sum[L];
    memcpy(y, x, sizeof(float) * (size_t)nblk * 32 * L);
    cpu_fp8_fake_quantize_lanes(y, nblk, sum);
    for (int l = 0; l < L; l++) {
        float want_sum = 0.0f;
        for (int b = 0; b < nblk; b++) {
            float col[32];
            uint8_t codes[32], scale;
            for (int i = 0; i < 32; i++) col[i] = x[(b * 32 + i) * L + l];
            mxa_mxfp8_quantize_block(col, 32, codes, &scale);
            for (int i = 0; i < 32; i++) {
                const float want = mxa_mxfp8_decode(codes[i], scale), got = y[(b * 32 + i) * L + l];
                want_sum += want;
                if (isnan(want) && isnan(got)) continue;
                if (memcmp(&want, &got, 4) != 0)
                    fail_msg("lane %d block %d element %d: x %a -> %a, the core gives %a (scale byte %u)", l, b, i,
                             (double)col[i], (double)got, (double)want, scale);
            }
        }
        if (!(isnan(want_sum) && isnan(sum[l])) && memcmp(&want_sum, &sum[l], 4) != 0)
            fail_msg("lane %d: sum %a, expected %a", l, (double)sum[l], (double)want_sum);
    }
}

static void test_random(void **state)
{
    (void)state;
    tu_rng rng = {42};
    float x[4 * 32 * L];
    for (int n = 0; n < 4000; n++) {
        const int centre = -126 + (int)(tu_next(&rng) % 254), width = 1 + (int)(tu_next(&rng) % 20);
        const int lo = centre - width < -126 ? -126 : centre - width, hi = centre > 127 ? 127 : centre;
        for (int i = 0; i < 4 * 32 * L; i++) x[i] = random_float(&rng, lo, hi);
        if (n % 7 == 0) x[(tu_next(&rng) % (4 * 32)) * L + n % L] = (n & 8) ? INFINITY : NAN;
        if (n % 5 == 0)
            for (int i = 0; i < 32; i++) x[(32 + i) * L + (n % L)] = (n & 16) ? -0.0f : 0.0f;
        check_lanes(x, 4);
    }
}

static void test_codes_and_ties(void **state)
{
    (void)state;
    for (int e = -127; e <= 119; e += 3) {
        float x[32 * L];
        for (int l = 0; l < L; l++) {
            x[l] = ldexpf(256.0f, e) * ((l & 1) ? -1.0f : 1.0f); /* pins the exponent to e */
            for (int i = 1; i < 32; i++) {
                const int c = (l * 31 + i) % 127; /* every code, spread over the lanes */
                const float lo = ldexpf((float)mxa_e4m3_scaled((uint8_t)c), e - 9);
                const float hi = c < 126 ? ldexpf((float)mxa_e4m3_scaled((uint8_t)(c + 1)), e - 9) : ldexpf(480.0f, e);
                const float mid = (lo + hi) * 0.5f;
                const float pick[4] = {lo, nextafterf(mid, 0.0f), mid, nextafterf(mid, INFINITY)};
                x[i * L + l] = pick[(i + l) % 4] * ((i & 2) ? -1.0f : 1.0f);
            }
        }
        check_lanes(x, 1);
    }
    float sat[32 * L] = {0};
    for (int l = 0; l < L; l++) {
        sat[l] = ldexpf(511.9f, l - 8);
        sat[L + l] = ldexpf(464.0f, l - 8);
        sat[2 * L + l] = ldexpf(449.0f, l - 8);
    }
    check_lanes(sat, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_codes_and_ties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
