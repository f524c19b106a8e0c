#version 450
// V preparation for attention: one invocation per (kv head, column c). Quantizes V in
// blocks of 32 tokens along the column (the contraction axis of P V); tokens past n
// are zero padding.
//   default:  dst = decoded fp32 values, [heads, n_pad, D] like V itself
//   OUT_F16:  dst = V transposed, [heads, D, n_pad] fp16, divided by 2^E with E the
//             column's largest block exponent; colscale[head, c] = 2^E.
#extension GL_GOOGLE_include_directive : require
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
layout(local_size_x = 64) in;
#include "mxfp4.glsl"

layout(constant_id = 0) const int D = 128;

layout(std430, binding = 0) readonly buffer X { float x[]; };
#ifdef OUT_F16
layout(std430, binding = 1) writeonly buffer Y { float16_t y[]; };
#else
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#endif
layout(std430, binding = 2) writeonly buffer R { float colscale[]; };

layout(push_constant) uniform P {
    uint heads, n, n_pad, x_offset, quant, kind, t;
} pc;

// Padding tokens read as zero. The index is clamped so that no lane loads out of
// bounds even where the compiler turns the select into a load of both sides.
uint bits_at(uint head, uint j, uint c)
{
    uint bits = floatBitsToUint(x[pc.x_offset + (head * pc.n + min(j, pc.n - 1u)) * uint(D) + c]);
    return j < pc.n ? bits : 0u;
}

uint dst_index(uint head, uint j, uint c)
{
#ifdef OUT_F16
    return (head * uint(D) + c) * pc.n_pad + j;
#else
    return (head * pc.n_pad + j) * uint(D) + c;
#endif
}

void main()
{
    uint idx = gl_WorkGroupID.y * gl_NumWorkGroups.x * 64u + gl_GlobalInvocationID.x;
    if (idx >= pc.heads * uint(D)) return;
    uint head = idx / uint(D), c = idx % uint(D);
    uint nblocks = (pc.n + 31u) / 32u;
    int emax = -1000;
    if (pc.quant != 0u) {
        for (uint blk = 0u; blk < nblocks; blk++) {
            uint maxbits = 0u;
            for (uint i = 0u; i < 32u; i++) maxbits = max(maxbits, bits_at(head, blk * 32u + i, c) & 0x7fffffffu);
            if (maxbits != 0u) emax = max(emax, mx_exponent(maxbits, pc.kind, pc.t));
        }
    }
    if (emax == -1000) emax = 0;
    for (uint blk = 0u; blk < nblocks; blk++) {
        uint maxbits = 0u;
        for (uint i = 0u; i < 32u; i++) maxbits = max(maxbits, bits_at(head, blk * 32u + i, c) & 0x7fffffffu);
        int e = mx_exponent(maxbits, pc.kind, pc.t);
        for (uint i = 0u; i < 32u; i++) {
            uint j = blk * 32u + i;
            uint b = bits_at(head, j, c);
            float val = uintBitsToFloat(b);
            if (pc.quant != 0u) {
                float m = MX_E2M1[mx_code(b & 0x7fffffffu, e)];
#ifdef OUT_F16
                val = ldexp((b >> 31) != 0u ? -m : m, e - emax); // scaled in one step: no fp32 underflow
#else
                val = ldexp((b >> 31) != 0u ? -m : m, e);
#endif
            }
#ifdef OUT_F16
            y[dst_index(head, j, c)] = float16_t(val);
#else
            y[dst_index(head, j, c)] = val;
#endif
        }
    }
    colscale[idx] = ldexp(1.0, emax);
}
