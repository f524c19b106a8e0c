/*
 * The exp of the intrinsics paths (AVX2, AVX-512), one definition for both:
 * P^'s block exponents come from it, so the two paths' outputs stay the same
 * to the bit (with the fused kernels off).
 */
#ifndef MXA_CPU_EXP_H
#define MXA_CPU_EXP_H

/* e^x for x <= 0 up to its last step: x = n ln2 + r (n an integer in [-150, 0]
 * as a float) and p, a degree-6 polynomial for e^r; the caller forms p 2^n with
 * one rounding. T is the vector type, V the intrinsics' prefix (_mm256, _mm512).
 * NaN propagates. */
#define CPU_EXP_REDUCED(T, V, x, n, p)                                                                            \
    do {                                                                                                         \
        /* x <= 0 here (scores minus their maximum); below -104, e^x rounds to 0 */                             \
        const T x_ = V##_max_ps(V##_set1_ps(-104.0f), (x));                                                     \
        /* n = round(x log2 e) by the 1.5 * 2^23 trick (vrndscaleps is two uops) */                             \
        const T magic_ = V##_set1_ps(12582912.0f);                                                              \
        (n) = V##_sub_ps(V##_fmadd_ps(x_, V##_set1_ps(1.44269504088896341f), magic_), magic_);                  \
        T r_ = V##_fnmadd_ps((n), V##_set1_ps(0.693359375f), x_);                                               \
        r_ = V##_fnmadd_ps((n), V##_set1_ps(-2.12194440e-4f), r_);                                              \
        /* Taylor to degree 7 with the r^7 term economized (Chebyshev) into r^5 and                            \
         * r^3 on |r| <= ln2/2: degree 6, max relative error 1.2 * 2^-24 */                                     \
        (p) = V##_set1_ps(1.0f / 720.0f);                                                                        \
        (p) = V##_fmadd_ps((p), r_, V##_set1_ps(8.3750393242e-03f));                                             \
        (p) = V##_fmadd_ps((p), r_, V##_set1_ps(1.0f / 24.0f));                                                  \
        (p) = V##_fmadd_ps((p), r_, V##_set1_ps(1.6666416824e-01f));                                             \
        (p) = V##_fmadd_ps((p), r_, V##_set1_ps(0.5f));                                                          \
        (p) = V##_fmadd_ps((p), r_, V##_set1_ps(1.0f));                                                          \
        (p) = V##_fmadd_ps((p), r_, V##_set1_ps(1.0f));                                                          \
    } while (0)

#endif
