/*
 * MXFP4 helpers shared by every OpenCL program (SPEC.md section 1), and the
 * MXFP8 (E4M3) ones of an MXFP8 P V (README, "MXFP8") at the end.
 * Exponents and E2M1 codes come from the fp32 bits with integer operations
 * only, so devices that flush subnormals to zero (NVIDIA, PoCL with
 * -cl-denorms-are-zero) still match the reference bit for bit.
 * The rule arrives as three integers computed on the host:
 *   ceil_rule: 0 = OCP floor, 1 = ceiling rule with q in [6, 8]
 *   thr:       bump the exponent iff the fraction bits of M exceed thr (= q 2^21 - 2^23)
 *   pow2_dec:  q == 8: an exact power of two takes one exponent less
 */
#define MXA_E8M0_NAN 0xFFu

/* Shared exponent of a block whose largest magnitude has the bits `mbits` (finite). */
int mxa_exponent(uint mbits, int ceil_rule, uint thr, int pow2_dec)
{
    if (mbits == 0u) return 0;
    const uint biased = mbits >> 23;
    if (biased == 0u) return -127; /* subnormal maximum: the smallest scale */
    int e = (int)biased - 129;     /* OCP: floor(log2 M) - 2 */
    if (ceil_rule) {
        const uint frac = mbits & 0x7fffffu;
        if (pow2_dec && frac == 0u) e -= 1;
        else if (frac > thr) e += 1;
    }
    return clamp(e, -127, 127);
}

/* The attention kernel's form of mxa_exponent for a P block, whose largest P~ has the bits
 * `pbits` in [0, 1]: (e + 127) << 23 in five integer operations. The ceiling rule's bump
 * (fraction > thr) is the carry of fraction + (2^23 - 1 - thr) into the exponent field, and
 * q = 8's pow2_dec the borrow of that constant being -1 (thr = 2^23); the clamp at -127 (a
 * subnormal maximum included) is a max. An all-zero block gets -127 where mxa_exponent says
 * 0: its P^ is 0 either way. Checked against mxa_exponent for every pbits in (0, 1] at OCP
 * and q = 6, 6.5, 7, 7.25, 7.5, 8 (a C transcription): identical. */
uint mxa_p_carry(int ceil_rule, uint thr) { return ceil_rule ? 0x7fffffu - thr : 0u; }
uint mxa_p_exponent_bits(uint pbits, uint carry)
{
    const uint f = (max(pbits, 0x800000u) + carry) & 0x7f800000u;
    return (uint)max((int)f - 0x1000000, 0);
}

/* The biased exponent and fraction of |x| (abits = |x| bits, nonzero, finite), a
 * subnormal normalised (exponent <= 0) so that exponent arithmetic on it stays exact. */
int mxa_unpack(uint abits, uint *man)
{
    int ex = (int)(abits >> 23);
    uint m = abits & 0x7fffffu;
    if (ex == 0) {
        const int p = 31 - (int)clz(m);
        m = (m << (23 - p)) & 0x7fffffu;
        ex = p - 22;
    }
    *man = m;
    return ex;
}

/* 3-bit E2M1 code of |x| * 2^-e (abits = |x| bits, finite): round to nearest,
 * ties to even, saturating. The scaling is done on the exponent field. */
uint mxa_e2m1_code(uint abits, int e)
{
    if (abits == 0u) return 0u;
    uint man;
    const int ex = mxa_unpack(abits, &man);
    const int ev = ex - e; /* biased exponent of |x| 2^-e */
    if (ev < 124) return 0u; /* below 0.125 */
    const uint vb = ((uint)min(ev, 200) << 23) | man;
    return (uint)(vb > 0x3E800000u) + (uint)(vb >= 0x3F400000u) + (uint)(vb > 0x3FA00000u) +
           (uint)(vb >= 0x3FE00000u) + (uint)(vb > 0x40200000u) + (uint)(vb >= 0x40600000u) +
           (uint)(vb > 0x40A00000u);
}

/* 2^e as a float for e in [-127, 127] (2^-127 is the subnormal 0x00400000). */
float mxa_pow2(int e)
{
    return e >= -126 ? as_float((uint)(e + 127) << 23) : as_float(0x00400000u);
}

/* 2^(e-1) for e in [-250, 127] (a block exponent, or a unit a few binades below one): the
 * factor that turns a "twice" code into its value, split in two normal factors when 2^(e-1)
 * would be subnormal (one rounding, in the product). */
float mxa_half_pow2(int e)
{
    return e >= -125 ? mxa_pow2(e - 1) : mxa_pow2(-126) * mxa_pow2(e + 125);
}

/* The bits of 2^e for any e <= 127 (subnormal below -126, 0 below -149): no
 * arithmetic, so a subnormal power survives a device that flushes results. */
uint mxa_pow2_bits(int e)
{
    return e >= -126 ? (uint)(e + 127) << 23 : e >= -149 ? 1u << (e + 149) : 0u;
}

/* Twice the E2M1 magnitude of a 3-bit code: 0 1 2 3 4 6 8 12. */
int mxa_e2m1_twice(uint code)
{
    return code < 5u ? (int)code : code < 7u ? (int)code * 2 - 4 : 12;
}

/* The decoded value of a code with sign bit `sign` (0 or 1) under exponent e:
 * twice x 2^(e-1), split in two normal factors when 2^(e-1) would be subnormal
 * (a subnormal operand is flushed to zero by FTZ devices). */
float mxa_decode(uint code, uint sign, int e)
{
    const float t = (float)mxa_e2m1_twice(code);
    const float v = e >= -125 ? t * mxa_pow2(e - 1) : (t * 0x1p-64f) * mxa_pow2(e + 63);
    return sign ? -v : v;
}

/* ------------------------------------------------------------------ MXFP8 */

/* MXFP8 shared exponent floor(log2 M) - 8 of a block maximum with bits `mbits` (finite). */
int mxa_fp8_exponent(uint mbits)
{
    if (mbits == 0u) return 0;
    const uint biased = mbits >> 23;
    if (biased == 0u) return -127; /* subnormal maximum: the smallest scale */
    return max((int)biased - 135, -127);
}

/* 7-bit E4M3 code of |x| * 2^-e (abits = |x| bits, finite): round to nearest,
 * ties to even, saturating at 448 (0x7E), from the bits alone. */
uint mxa_e4m3_code(uint abits, int e)
{
    if (abits == 0u) return 0u;
    uint man;
    const int ex = mxa_unpack(abits, &man);
    const int ev = ex - 127 - e; /* |x| 2^-e = 1.man x 2^ev */
    if (ev > 8) return 0x7Eu;
    if (ev >= -6) { /* normal in E4M3: keep 3 fraction bits */
        const uint keep = man >> 20, rest = man & 0xfffffu;
        const uint up = (uint)(rest > 0x80000u || (rest == 0x80000u && (keep & 1u)));
        return min(((uint)(ev + 7) << 3) + keep + up, 0x7Eu);
    }
    const int s = 14 - ev; /* subnormal: multiples of 2^-9, (1.man) 2^ev 2^9 = (2^23 + man) 2^-s */
    if (s > 24) return 0u;  /* below 2^-10: rounds to 0 */
    const uint full = 0x800000u | man, q = full >> s, rem = full & ((1u << s) - 1u), tie = 1u << (s - 1);
    return q + (uint)(rem > tie || (rem == tie && (q & 1u)));
}

/* The E4M3 magnitude of a 7-bit code times 2^9: an integer below 2^18. */
float mxa_e4m3_scaled(uint code)
{
    const uint ex = code >> 3, m = code & 7u;
    return (float)(ex == 0u ? m : (8u + m) << (ex - 1u));
}

/* The decoded MXFP8 value of a code with sign bit `sign` under exponent e, in two
 * normal factors when 2^(e-9) would be subnormal (as mxa_decode). */
float mxa_fp8_decode(uint code, uint sign, int e)
{
    const float t = mxa_e4m3_scaled(code);
    const float v = e >= -117 ? t * mxa_pow2(e - 9) : (t * 0x1p-64f) * mxa_pow2(e + 55);
    return sign ? -v : v;
}
