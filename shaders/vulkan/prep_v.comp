#version 450
// V preparation for attention: one invocation per (kv head, 32-token block, column c).
// Quantizes V in blocks of 32 tokens along each column (the contraction axis of P V);
// tokens n..n_pad-1 are written as zero padding, so no buffer needs clearing first.
// Output row-major [heads, n_pad, D], like V, or with `transpose` V^T [heads, D, n_pad]
// (the register coopmat kernel's layout).
//   default:   fp32 decoded values (the scalar kernel's input); kind 2: MXFP8 (an MXFP8 P V)
//   OUT_F16:   fp16 values divided by 2^E, E the column's largest block exponent, and
//              colscale[head, c] = 2^E: exact in fp16 whatever the absolute scale, for
//              blocks within 23 binades of E (as in prep_qk.comp).
//              Pass 0 finds E with an atomic max (colmax holds E + 128, 0 = no block);
//              pass 1 writes.
//   OUT_I8:    always V^T [heads, D, n_pad] as int8, 4 tokens per uint (token 4k in the low
//              byte): 2 * the E2M1 value (an integer in [-12, 12]), and block scales
//              colscale[head, c, n_pad / 32] = 2^e / 2 (float bits), so value = int8 * scale.
//              One pass (pass_ and transpose are ignored); used only with quant != 0.
//   OUT_I8 + ALIGN_V: the same V^T, but each column's codes on one unit (coopmat-khr-i8pv):
//              pass 0 finds the column's largest block exponent E (colmax, as OUT_F16);
//              pass 1 shifts a block's codes left by e - E + 3 (0..3: |code| <= 96), and
//              colscale holds 1.0, or for a block more than 3 binades below E its codes
//              unshifted and colscale the factor 2^(e - E + 3), its 64-token tile flagged
//              in colmax[heads * D + head * n_pad / 64 + tile].
// With key lengths (EXTRAS bit 2) the tokens at and after keylen[b] (head = b hkv + kv head)
// read as 0, so the block holding a batch's last key is quantized as in a call with
// Nk = keylen[b] (docs/attention-inputs.md).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
layout(local_size_x = 64) in;
#include "mxfp4.glsl"

layout(constant_id = 0) const int D = 128;
layout(constant_id = 13) const int EXTRAS = 0; // bit 2: key lengths (the attention kernels' bits)
const bool HAS_KEYLEN = (EXTRAS & 4) != 0;

#include "prep_input.glsl"
#ifdef OUT_F16
layout(std430, binding = 1) writeonly buffer Y { float16_t y[]; };
layout(std430, binding = 1) writeonly buffer Y4 { uvec4 y4[]; }; // the same buffer, 8 values per store
#elif defined(OUT_I8)
layout(std430, binding = 1) writeonly buffer Y4 { uvec4 y4[]; }; // a block's 32 int8: two stores
#else
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#endif
layout(std430, binding = 2) writeonly buffer R { uint colscale[]; }; // float bits
layout(std430, binding = 3) buffer M { uint colmax[]; };
layout(std430, binding = 4) readonly buffer KL { uint keylen[]; }; // [B]; read only with HAS_KEYLEN

layout(push_constant) uniform P {
    uint heads, n, n_pad, x_offset, quant, kind, t, pass_, transpose, hkv;
} pc;

// The value written for input bits b of a block with exponent e (the column's largest: emax).
float prepared(uint b, int e, int emax)
{
    if (pc.quant == 0u) return uintBitsToFloat(b);
    const float m = mx_round_kind(b & 0x7fffffffu, e, pc.kind);
#ifdef OUT_F16
    return ldexp((b >> 31) != 0u ? -m : m, e - emax); // scaled in one step: no fp32 underflow
#else
    return ldexp((b >> 31) != 0u ? -m : m, e);
#endif
}

void main()
{
    const uint nblocks = pc.n_pad / 32u;
    const uint idx = gl_WorkGroupID.y * gl_NumWorkGroups.x * 64u + gl_GlobalInvocationID.x;
    if (idx >= pc.heads * nblocks * uint(D)) return;
    const uint c = idx % uint(D), blk = (idx / uint(D)) % nblocks, head = idx / (uint(D) * nblocks);
    uint n = pc.n; // tokens that exist
    if (HAS_KEYLEN) n = min(keylen[head / pc.hkv], pc.n);
    uint bits[32];
    uint maxbits = 0u;
    [[unroll]] for (uint i = 0u; i < 32u; i++) { // unrolled: all 32 loads in flight at once
        const uint token = blk * 32u + i;
        // clamped index: no lane ever loads out of bounds
        const uint bv = floatBitsToUint(load_x(pc.x_offset + (head * pc.n + min(token, pc.n - 1u)) * uint(D) + c));
        bits[i] = token < n ? bv : 0u;
        maxbits = max(maxbits, bits[i] & 0x7fffffffu);
    }
    const int e = mx_exponent(maxbits, pc.kind, pc.t);
#if defined(OUT_I8)
#ifdef ALIGN_V
    // pass 0: each column's largest block exponent E (atomic max of E + 128, 0 = no block);
    // pass 1: codes on the column's unit 2^(E - 4), shifted left by e - E + 3 <= 3, or for a
    // block lower than that unshifted, with the factor 2^(e - E + 3) and its tile flagged.
    if (pc.pass_ == 0u) {
        if (maxbits != 0u) atomicMax(colmax[head * uint(D) + c], uint(e + 128));
        return;
    }
    const uint cm = colmax[head * uint(D) + c];
    const int shift = maxbits == 0u || cm == 0u ? 0 : e - (int(cm) - 128 - 3);
    const bool low = shift < 0;
    const int lift = low ? 0 : shift;
#else
    const int lift = 0;
#endif
    uint words[8];
    [[unroll]] for (uint w = 0u; w < 8u; w++) {
        uint packed = 0u;
        [[unroll]] for (uint j = 0u; j < 4u; j++) {
            const uint b = bits[4u * w + j];
            const int iv = int(2.0 * mx_round(b & 0x7fffffffu, e)) << lift;
            packed |= uint(((b >> 31) != 0u ? -iv : iv) & 0xff) << (8u * j);
        }
        words[w] = packed;
    }
    const uint dst4 = ((head * uint(D) + c) * pc.n_pad + blk * 32u) / 16u;
    y4[dst4] = uvec4(words[0], words[1], words[2], words[3]);
    y4[dst4 + 1u] = uvec4(words[4], words[5], words[6], words[7]);
#ifdef ALIGN_V
    // the factor (1 unless low), as bits: 0 below 2^-149
    colscale[(head * uint(D) + c) * nblocks + blk] = low ? mx_pow2_bits(shift) : 0x3f800000u;
    if (low) atomicOr(colmax[pc.heads * uint(D) + head * (pc.n_pad / 64u) + blk / 2u], 1u);
#else
    // 2^(e - 1), e >= -127: 2^-128 is subnormal, written as bits (no arithmetic to flush)
    colscale[(head * uint(D) + c) * nblocks + blk] = mx_pow2_bits(e - 1);
#endif
}
#else
#ifdef OUT_F16
    if (pc.pass_ == 0u) {
        if (pc.quant != 0u && maxbits != 0u) atomicMax(colmax[head * uint(D) + c], uint(e + 128));
        return;
    }
    const uint cm = colmax[head * uint(D) + c];
    const int emax = cm == 0u ? 0 : int(cm) - 128;
    if (blk == 0u) colscale[head * uint(D) + c] = mx_pow2_bits(emax);
#else
    const int emax = 0; // fp32 output keeps absolute values
#endif
#ifdef OUT_F16
    if (pc.transpose != 0u) { // the block's 32 values are consecutive: four 16-byte stores
        uint words[16];
        [[unroll]] for (uint i = 0u; i < 32u; i += 2u)
            words[i / 2u] = packFloat2x16(f16vec2(prepared(bits[i], e, emax), prepared(bits[i + 1u], e, emax)));
        const uint dst4 = ((head * uint(D) + c) * pc.n_pad + blk * 32u) / 8u;
        [[unroll]] for (uint w = 0u; w < 4u; w++)
            y4[dst4 + w] = uvec4(words[4u * w], words[4u * w + 1u], words[4u * w + 2u], words[4u * w + 3u]);
        return;
    }
#endif
    [[unroll]] for (uint i = 0u; i < 32u; i++) {
        const float val = prepared(bits[i], e, emax);
        const uint dst = pc.transpose != 0u ? (head * uint(D) + c) * pc.n_pad + blk * 32u + i
                                            : (head * pc.n_pad + blk * 32u + i) * uint(D) + c;
#ifdef OUT_F16
        y[dst] = float16_t(val);
#else
        y[dst] = val;
#endif
    }
}
#endif
