#version 450
// Q/K preparation for attention: rotates rows of D values by the Walsh-Hadamard matrix
// (radix-2 in SPEC order, then * norm) and quantizes them in blocks of 32 along D.
//   default:  dst = decoded fp32 values, row-major [rows, D] (the scalar kernel's input)
//   OUT_F16:  dst = fp16 values divided by 2^E (E the row's largest block exponent),
//             rowscale = 2^E: every E2M1 value of the row stays exact in fp16 whatever
//             the absolute scale (fp16's range is far smaller than E8M0's), as long
//             as its block exponent is within 23 of E (0.5 * 2^-23 is fp16's smallest
//             subnormal); a block further down loses bits below 2^(E-24).
//   OUT_I8:   dst = int8, 4 per uint: 2 * the E2M1 value (an integer in [-12, 12]), and
//             scales[row][block] such that value = dst * scale / 2. A row whose nonzero
//             blocks' exponents lie within 3 of each other ("narrow") is shifted onto its
//             smallest exponent Emin (|dst| <= 12 * 2^3 = 96) and every block's scale is
//             2^Emin, so a whole row is one integer dot product; a "wide" row keeps each
//             block's own 2^E, stored negated (the sign bit marks the row as wide).
// Rows are written to dst row (row / n) * n_pad + row % n, so heads can be padded.
//
// 32 invocations share a row: invocation t holds elements t + 32k (k < D / 32), so loads
// and stores are coalesced, block k is element k of all 32, butterfly stages h < 32
// pair invocations (through shared memory: any subgroup size) and stages h >= 32 stay
// within one invocation. Each stage is element-wise, so the result is the sequential
// transform's bit for bit.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
layout(local_size_x = 64) in; // two rows
#include "mxfp4.glsl"

layout(constant_id = 0) const int D = 128;
const int E = D / 32; // elements per invocation = blocks per row

layout(std430, binding = 0) readonly buffer X { float x[]; };
#if defined(OUT_F16)
layout(std430, binding = 1) writeonly buffer Y { float16_t y[]; };
#elif defined(OUT_I8)
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
#else
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#endif
layout(std430, binding = 2) writeonly buffer R { float rowscale[]; }; // OUT_I8: [rows][E] block scales

layout(push_constant) uniform P {
    uint rows, n, n_pad, x_offset, hadamard, quant, kind, t;
    float norm;
} pc;

shared float sv[2 * D];       // one butterfly stage's inputs
shared uint sbits[2 * D];     // |value| bits, for the block maxima
shared uint sblock[2 * E];    // each block's largest |value| bits
#ifdef OUT_I8
shared int sq[2 * D];         // the row's int8 values, packed four at a time
#endif

void main()
{
    const uint lr = gl_LocalInvocationID.x / 32u, t = gl_LocalInvocationID.x % 32u;
    const uint row = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 2u + lr;
    const bool live = row < pc.rows; // no early return: barriers follow
    const uint sbase = lr * uint(D);
    float v[E];
    [[unroll]] for (int k = 0; k < E; k++) v[k] = live ? x[pc.x_offset + row * uint(D) + t + uint(32 * k)] : 0.0;
    if (pc.hadamard != 0u) {
        for (uint h = 1u; h < 32u && h < uint(D); h *= 2u) {
            [[unroll]] for (int k = 0; k < E; k++) sv[sbase + t + uint(32 * k)] = v[k];
            barrier();
            [[unroll]] for (int k = 0; k < E; k++) {
                const float p = sv[sbase + (t ^ h) + uint(32 * k)];
                v[k] = (t & h) == 0u ? v[k] + p : p - v[k];
            }
            barrier();
        }
        [[unroll]] for (int hk = 1; hk < E; hk *= 2)
            [[unroll]] for (int k = 0; k < E; k++)
                if ((k & hk) == 0) {
                    const float a = v[k], b = v[k + hk];
                    v[k] = a + b;
                    v[k + hk] = a - b;
                }
        [[unroll]] for (int k = 0; k < E; k++) v[k] *= pc.norm;
    }
    const uint out_row = (row / pc.n) * pc.n_pad + row % pc.n;
    const uint base = out_row * uint(D);
#ifndef OUT_I8 // the int8 form exists only for quantized Q/K
    if (pc.quant == 0u) {
        if (live) {
            [[unroll]] for (int k = 0; k < E; k++) {
#ifdef OUT_F16
                y[base + t + uint(32 * k)] = float16_t(v[k]);
#else
                y[base + t + uint(32 * k)] = v[k];
#endif
            }
            if (t == 0u) rowscale[out_row] = 1.0;
        }
        return;
    }
#endif
    [[unroll]] for (int k = 0; k < E; k++) sbits[sbase + t + uint(32 * k)] = floatBitsToUint(v[k]) & 0x7fffffffu;
    barrier();
    if (t < uint(E)) {
        uint maxbits = 0u;
        for (uint i = 0u; i < 32u; i++) maxbits = max(maxbits, sbits[sbase + t * 32u + i]);
        sblock[lr * uint(E) + t] = maxbits;
    }
    barrier();
#ifndef OUT_I8
    if (!live) return;
#endif
    int ex[E];
    int emax = -1000, emin = 1000;
    [[unroll]] for (int k = 0; k < E; k++) {
        const uint maxbits = sblock[lr * uint(E) + uint(k)];
        ex[k] = mx_exponent(maxbits, pc.kind, pc.t);
        if (maxbits != 0u) {
            emax = max(emax, ex[k]);
            emin = min(emin, ex[k]);
        }
    }
    if (emax == -1000) emax = emin = 0;
#ifdef OUT_I8
    const bool narrow = emax - emin <= 3;
    [[unroll]] for (int k = 0; k < E; k++) {
        const uint b = floatBitsToUint(v[k]);
        const int c2 = int(2.0 * MX_E2M1[mx_code(b & 0x7fffffffu, ex[k])]) << (narrow ? clamp(ex[k] - emin, 0, 3) : 0);
        sq[sbase + t + uint(32 * k)] = (b >> 31) != 0u ? -c2 : c2;
    }
    barrier();
    if (!live) return;
    for (uint u = t; u < uint(D / 4); u += 32u) {
        const uint i = sbase + 4u * u;
        y[out_row * uint(D / 4) + u] = uint(sq[i] & 0xff) | uint(sq[i + 1u] & 0xff) << 8 | uint(sq[i + 2u] & 0xff) << 16 |
                                       uint(sq[i + 3u] & 0xff) << 24;
    }
    [[unroll]] for (int k = 0; k < E; k++)
        if (t == uint(k)) rowscale[out_row * uint(E) + t] = narrow ? ldexp(1.0, emin) : -ldexp(1.0, ex[k]);
#else
    [[unroll]] for (int k = 0; k < E; k++) {
        const uint b = floatBitsToUint(v[k]);
        const float m = MX_E2M1[mx_code(b & 0x7fffffffu, ex[k])];
        const float s = (b >> 31) != 0u ? -m : m;
#ifdef OUT_F16
        y[base + t + uint(32 * k)] = float16_t(ldexp(s, ex[k] - emax));
#else
        y[base + t + uint(32 * k)] = ldexp(s, ex[k]);
#endif
    }
    if (t == 0u) rowscale[out_row] = ldexp(1.0, emax);
#endif
}
