#version 450
// Q/K preparation for attention: one invocation per row of D values. Rotates by the
// Walsh-Hadamard matrix (radix-2 in SPEC order, then * norm) and quantizes in blocks
// of 32 along D.
//   default:  dst = decoded fp32 values, row-major [rows, D] (the scalar kernel's input)
//   OUT_F16:  dst = fp16 values divided by 2^E (E the row's largest block exponent),
//             rowscale = 2^E: every E2M1 value of the row stays exact in fp16 whatever
//             the absolute scale (fp16's range is far smaller than E8M0's).
// Rows are written to dst row (row / n) * n_pad + row % n, so heads can be padded.
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
layout(std430, binding = 2) writeonly buffer R { float rowscale[]; };

layout(push_constant) uniform P {
    uint rows, n, n_pad, x_offset, hadamard, quant, kind, t;
    float norm;
} pc;

void main()
{
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x * 64u + gl_GlobalInvocationID.x;
    if (row >= pc.rows) return;
    float v[D];
    for (int i = 0; i < D; i++) v[i] = x[pc.x_offset + row * uint(D) + uint(i)];
    if (pc.hadamard != 0u) {
        for (int h = 1; h < D; h *= 2)
            for (int i = 0; i < D; i += 2 * h)
                for (int j = i; j < i + h; j++) {
                    float a = v[j], b = v[j + h];
                    v[j] = a + b;
                    v[j + h] = a - b;
                }
        for (int i = 0; i < D; i++) v[i] *= pc.norm;
    }
    uint out_row = (row / pc.n) * pc.n_pad + row % pc.n;
    uint base = out_row * uint(D);
    if (pc.quant == 0u) {
#ifdef OUT_F16
        for (int i = 0; i < D; i++) y[base + uint(i)] = float16_t(v[i]);
#else
        for (int i = 0; i < D; i++) y[base + uint(i)] = v[i];
#endif
        rowscale[out_row] = 1.0;
        return;
    }
    int ex[D / 32];
    int emax = -1000;
    for (int blk = 0; blk < D / 32; blk++) {
        uint maxbits = 0u;
        for (int i = 0; i < 32; i++) maxbits = max(maxbits, floatBitsToUint(v[blk * 32 + i]) & 0x7fffffffu);
        ex[blk] = mx_exponent(maxbits, pc.kind, pc.t);
        if (maxbits != 0u) emax = max(emax, ex[blk]);
    }
    if (emax == -1000) emax = 0;
    for (int blk = 0; blk < D / 32; blk++)
        for (int i = 0; i < 32; i++) {
            uint b = floatBitsToUint(v[blk * 32 + i]);
            float m = MX_E2M1[mx_code(b & 0x7fffffffu, ex[blk])];
            float s = (b >> 31) != 0u ? -m : m;
#ifdef OUT_F16
            y[base + uint(blk * 32 + i)] = float16_t(ldexp(s, ex[blk] - emax));
#else
            y[base + uint(blk * 32 + i)] = ldexp(s, ex[blk]);
#endif
        }
    rowscale[out_row] = ldexp(1.0, emax);
}
