// MXFP4 quantization of SPEC §1 from fp32 bits, built so that the result does not depend
// on a device's denormal or ldexp behaviour (bit-exact with runtime/mxfp4.c). The rule
// arrives as kind (0 OCP, 1 ceiling) and t = q * 2^21, an integer for every q in [6, 8].
// kind 2 is MXFP8 (E4M3 elements, e = floor(log2 M) - 8: runtime/mxfp8.c), the format of
// an MXFP8 P V: mx_exponent takes it, mx_round_kind and mx_code8 round to E4M3.

// Shared exponent of a block whose largest magnitude has bits `maxbits` (finite).
// Selects, not branches: inside the attention loop a branch per call costs a divergence
// region each (seen in NVIDIA's compiled code; 4% of the kernel's time on the H200).
int mx_exponent(uint maxbits, uint kind, uint t)
{
    const uint biased = maxbits >> 23;
    const uint m = (maxbits & 0x7fffffu) | 0x800000u; // mantissa m * 2^23
    // OCP: floor(log2 M) - 2; ceiling rule: one less when 8m <= q, one more when 4m > q
    const int adj = kind == 1u ? (2u * m <= t ? -1 : (m > t ? 1 : 0)) : 0;
    const int e = clamp(int(biased) - (kind == 2u ? 135 : 129) + adj, -127, 127);
    return maxbits == 0u ? 0 : (biased == 0u ? -127 : e); // -127: a subnormal maximum
}

// The attention kernels' form of mx_exponent for a P block, whose largest P~ (bits, `pbits`)
// lies in [0, 1]: (e + 127) << 23 in five integer operations instead of a dozen. The ceiling
// rule's bump (fraction > t - 2^23) is the carry of fraction + (2^24 - 1 - t) into the
// exponent field, and q = 8's "a power of two takes one less" the borrow of that constant
// being -1 (mx_p_carry); the clamp at -127 (a subnormal maximum included) is a max. An
// all-zero block gets e = -127, where mx_exponent says 0: its P^ is 0 either way. Checked
// against mx_exponent for every pbits in (0, 1], all three kinds, q = 6, 6.5, 7, 7.25, 7.5, 8
// (a C transcription): identical.
uint mx_p_carry(uint kind, uint t) { return kind == 1u ? (1u << 24) - 1u - t : 0u; }
uint mx_p_exponent_bits(uint pbits, uint carry, uint kind)
{
    const uint f = (max(pbits, 0x800000u) + carry) & 0x7f800000u;
    return uint(max(int(f) - (kind == 2u ? 0x4000000 : 0x1000000), 0));
}

// |x| * 2^-e rounded to E2M1 (RNE, saturating at 6), for |x| given as bits with the sign
// cleared: the magnitude, one of 0, 0.5, 1, 1.5, 2, 3, 4, 6.
// w = |x| * 2^-e is formed exactly by moving the exponent field (a subnormal x through its
// mantissa as an exact integer times 2^-149), so no denormal or ldexp behaviour enters.
// Adding c = 2^(max(binade(w), 0) + 22) leaves 2^(max(binade(w), 0) - 1), the E2M1 step at w,
// as fp32's unit in the last place: fp32's correctly rounded addition is the E2M1 RNE, ties
// to the even multiple, which is the even code. `precise` keeps (w + c) - c from folding.
// Checked exhaustively against SPEC's thresholds (every finite |x|, 21 exponents from -127
// to 127) by a C transcription; 0 mismatches.
float mx_round(uint absbits, int e)
{
    const bool sub = absbits < 0x800000u;
    const uint y = sub ? floatBitsToUint(float(absbits)) : absbits;
    const int wb = int(y >> 23) - (sub ? 149 : 0) - e; // biased exponent of w
    // wb < 1: w < 2^-126 rounds to 0; wb > 130: w >= 16 saturates
    const float w = min(uintBitsToFloat(uint(clamp(wb, 1, 130)) << 23 | (y & 0x7fffffu)), 6.0);
    const float c = uintBitsToFloat(uint(max(int(floatBitsToUint(w) >> 23), 127) + 22) << 23);
    precise float r = (w + c) - c;
    return wb < 1 ? 0.0 : r;
}

// 3-bit E2M1 code of |x| (bits, sign cleared) under exponent e.
uint mx_code(uint absbits, int e)
{
    const float r = mx_round(absbits, e);
    const uint rb = floatBitsToUint(r); // r >= 1: code = 2 * (binade + 1) + the top mantissa bit
    return r < 1.0 ? uint(2.0 * r) : ((rb >> 23) - 126u) << 1 | (rb >> 22 & 1u);
}

// The bits of 2^e, e <= 127 (subnormal below -126, 0 below -149): no arithmetic, so a
// subnormal power survives a device that flushes denormal results.
uint mx_pow2_bits(int e) { return e >= -126 ? uint(e + 127) << 23 : e >= -149 ? 1u << uint(e + 149) : 0u; }

bool mx_nonfinite(uint bits) { return (bits & 0x7f800000u) == 0x7f800000u; }

// MXFP4(p) for p in [0, 1] under a block exponent ex given as exb = (ex + 127) << 23 and
// sat = 6 * 2^ex (the attention kernels' P^): clamping at sat saturates, and adding then
// subtracting c = 2^(max(e, ex) + 22), e the binade of the clamped p, rounds it to its E2M1
// step in that binade, ties to even (c is a multiple of twice the step). A one-off check found
// it equal to the compare-chain form for every normal p < 2^(ex + 4) at ex = -127, -126,
// -100, -10 and -4 ... 0; a subnormal p may flush to 0 (its weight is below 2^-126 of the
// row maximum). `precise` keeps the compiler from folding (x + c) - c.
float mx_quantize_p(float p, uint exb, float sat)
{
    const float pm = min(p, sat);
    const float c = uintBitsToFloat(max(floatBitsToUint(pm), exb) & 0x7f800000u);
    precise float x = fma(c, 4194304.0, pm);
    precise float r = fma(c, -4194304.0, x);
    return r;
}

// mx_quantize_p(p, exb, sat) * 2^k with the scale folded into the rounding (k = 12 keeps small
// P^ exact in fp16; at k = 0 mx_quantize_p is one operation cheaper): p 2^k + c 2^(22 + k)
// rounds at the step times 2^k (the product is exact inside the fma), so no multiply follows.
// `bits` is the rounding's mantissa width: 22 for E2M1, 20 for E4M3 (exb then the bits of
// 2^(e - 6), as quantize_p8 says). For every normal p the result is the other form's bit for
// bit; a subnormal p (exb 0: its block's maximum is subnormal too) rounds at about 2^-116
// instead of staying p 2^k, far below fp16, where both become 0.
float mx_quantize_p_scaled(float p, uint exb, float sat, uint bits, uint k)
{
    const float pm = min(p, sat);
    const float ck = uintBitsToFloat((max(floatBitsToUint(pm), exb) & 0x7f800000u) + ((bits + k) << 23));
    precise float x = fma(pm, uintBitsToFloat((127u + k) << 23), ck);
    precise float r = x - ck;
    return r;
}

// ------------------------------------------------------------------------------- MXFP8

// |x| * 2^-e rounded to E4M3 (RNE, saturating at 448), |x| as bits with the sign cleared:
// the magnitude. w = |x| 2^-e is formed exactly as in mx_round; adding c = 2^(max(binade(w),
// -6) + 20) leaves the E4M3 step at w (2^(binade - 3), and 2^-9 below 2^-6) as fp32's unit in
// the last place, so fp32's addition rounds to it, ties to the even multiple: the even code.
float mx_round8(uint absbits, int e)
{
    const bool sub = absbits < 0x800000u;
    const uint y = sub ? floatBitsToUint(float(absbits)) : absbits;
    const int wb = int(y >> 23) - (sub ? 149 : 0) - e; // biased exponent of w
    // wb < 1: w < 2^-126 rounds to 0; wb > 140: w >= 2^13 saturates
    const float w = uintBitsToFloat(uint(clamp(wb, 1, 140)) << 23 | (y & 0x7fffffu));
    const float c = uintBitsToFloat(uint(max(int(floatBitsToUint(w) >> 23), 121) + 20) << 23);
    precise float r = (w + c) - c;
    return wb < 1 ? 0.0 : min(r, 448.0);
}

// The magnitude of |x| under exponent e in the format of `kind` (2: E4M3, else E2M1).
float mx_round_kind(uint absbits, int e, uint kind)
{
    return kind == 2u ? mx_round8(absbits, e) : mx_round(absbits, e);
}

// 7-bit E4M3 code of |x| (bits, sign cleared) under exponent e.
uint mx_code8(uint absbits, int e)
{
    const float r = mx_round8(absbits, e);
    const uint rb = floatBitsToUint(r); // r >= 2^-6: (binade + 7) << 3 | the top 3 mantissa bits
    return r < 0.015625 ? uint(r * 512.0) : ((rb >> 23) - 120u) << 3 | (rb >> 20 & 7u);
}
