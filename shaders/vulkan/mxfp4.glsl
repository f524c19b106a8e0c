// MXFP4 quantization of SPEC §1 from fp32 bits with integer arithmetic only, so the
// result does not depend on a device's denormal or ldexp behaviour (bit-exact with
// runtime/mxfp4.c). The rule arrives as kind (0 OCP, 1 ceiling) and t = q * 2^21,
// an integer for every q in [6, 8].

// Shared exponent of a block whose largest magnitude has bits `maxbits` (finite).
// Selects, not branches: inside the attention loop a branch per call costs a divergence
// region each (seen in NVIDIA's compiled code; 4% of the kernel's time on the H200).
int mx_exponent(uint maxbits, uint kind, uint t)
{
    const uint biased = maxbits >> 23;
    const uint m = (maxbits & 0x7fffffu) | 0x800000u; // mantissa m * 2^23
    // OCP: floor(log2 M) - 2; ceiling rule: one less when 8m <= q, one more when 4m > q
    const int adj = kind == 1u ? (2u * m <= t ? -1 : (m > t ? 1 : 0)) : 0;
    const int e = clamp(int(biased) - 129 + adj, -127, 127);
    return maxbits == 0u ? 0 : (biased == 0u ? -127 : e); // -127: a subnormal maximum
}

// Sign of 4v - k where 4v = mant * 2^s exactly.
int mx_cmp(uint mant, int s, uint k)
{
    if (s >= 0) {
        if (s > 7) return 1;
        uint a = mant << uint(s);
        return a > k ? 1 : (a == k ? 0 : -1);
    }
    if (-s > 26) return -1; // 4v < 2^24 * 2^-27 < 1 <= k
    uint b = k << uint(-s);
    return mant > b ? 1 : (mant == b ? 0 : -1);
}

// 3-bit E2M1 code of |x| (bits, sign cleared) under exponent e: RNE, saturating.
uint mx_code(uint absbits, int e)
{
    uint biased = absbits >> 23;
    uint mant = absbits & 0x7fffffu;
    int ex = -149;
    if (biased != 0u) {
        mant |= 0x800000u;
        ex = int(biased) - 150;
    }
    if (mant == 0u) return 0u;
    int s = ex - e + 2; // 4 * |x| * 2^-e = mant * 2^s
    if (mx_cmp(mant, s, 1u) <= 0) return 0u;
    if (mx_cmp(mant, s, 3u) < 0) return 1u;
    if (mx_cmp(mant, s, 5u) <= 0) return 2u;
    if (mx_cmp(mant, s, 7u) < 0) return 3u;
    if (mx_cmp(mant, s, 10u) <= 0) return 4u;
    if (mx_cmp(mant, s, 14u) < 0) return 5u;
    if (mx_cmp(mant, s, 20u) <= 0) return 6u;
    return 7u;
}

const float MX_E2M1[8] = float[8](0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0);

bool mx_nonfinite(uint bits) { return (bits & 0x7f800000u) == 0x7f800000u; }
