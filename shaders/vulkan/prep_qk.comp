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
// The output has rows_pad = heads * n_pad rows: row (head, token) comes from input row
// head * n + token, and tokens n..n_pad-1 are written as zero rows (the attention kernels'
// padding), so no buffer needs clearing first.
//
// One invocation holds one block (32 consecutive values of a row) in registers: the
// rotation's stages h < 32 and the block maximum need no communication, stages h >= 32
// pair invocations through shared memory. The workgroup's rows are loaded coalesced into
// shared memory and each invocation reads its block from there (a pitch of 33 floats
// keeps both directions free of bank conflicts). Each stage is element-wise, so the
// result is the sequential transform's bit for bit.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef OUT_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
layout(local_size_x = 64) in;
#include "mxfp4.glsl"

layout(constant_id = 0) const int D = 128;
const int E = D / 32;     // blocks per row
const int ROWS = 64 / E;  // rows per workgroup; invocation i holds block i % E of row i / E
const int PITCH = 33;     // shared floats per block
const uint PAD = 0x80000000u; // marks a padding row in srow (input rows are below 2^31)

#include "prep_input.glsl"
// 16-byte stores: a block is 8 (fp32), 4 (fp16) or 2 (int8) of them
layout(std430, binding = 1) writeonly buffer Y { uvec4 y[]; };
layout(std430, binding = 2) writeonly buffer R { uint rowscale[]; }; // float bits; OUT_I8: [rows][E] block scales

layout(push_constant) uniform P {
    uint rows_pad, n, n_pad, x_offset, hadamard, quant, kind, t;
    float norm;
} pc;

shared float sv[64 * PITCH]; // block i at sv[i * PITCH]
shared uint srow[ROWS + 1];  // each row's input row, | PAD for a padding row (+1: see the load)
shared int semax[64], semin[64]; // each block's exponent, +-1000 for an all-zero block

#if defined(OUT_F16)
const int STORES = 4;
#elif defined(OUT_I8)
const int STORES = 2;
#else
const int STORES = 8;
#endif

// The block's 32 values times 2^shift as 16-byte stores (int8: twice the values, 0 <= shift <= 3).
void store_block(uint dst, const float v[32], int shift)
{
    uint words[4 * STORES];
#if defined(OUT_F16)
    [[unroll]] for (int w = 0; w < 16; w++) words[w] = packFloat2x16(f16vec2(ldexp(v[2 * w], shift), ldexp(v[2 * w + 1], shift)));
#elif defined(OUT_I8)
    [[unroll]] for (int w = 0; w < 8; w++) {
        uint packed = 0u;
        [[unroll]] for (int j = 0; j < 4; j++) packed |= uint((int(2.0 * v[4 * w + j]) << shift) & 0xff) << (8 * j);
        words[w] = packed;
    }
#else
    [[unroll]] for (int w = 0; w < 32; w++) words[w] = floatBitsToUint(ldexp(v[w], shift));
#endif
    [[unroll]] for (int s = 0; s < STORES; s++)
        y[dst + uint(s)] = uvec4(words[4 * s], words[4 * s + 1], words[4 * s + 2], words[4 * s + 3]);
}

void main()
{
    const uint lid = gl_LocalInvocationID.x;
    const uint row0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * uint(ROWS);
    if (lid <= uint(ROWS)) {
        const uint row = row0 + lid, token = row % pc.n_pad;
        srow[lid] = row < pc.rows_pad && token < pc.n && lid < uint(ROWS) ? row / pc.n_pad * pc.n + token : PAD;
    }
    barrier();
    // Element i of the workgroup's rows goes to sv[i / 32 * PITCH + i % 32]. The loads have
    // no condition, so they are all in flight at once (a padding row loads input row 0 and
    // drops it); with ROWS * E < 64, elements past the rows fall into row ROWS and unused blocks.
    // Four elements per load where the offset allows (a row's D is a multiple of 4).
    const bool by4 = (pc.x_offset & 3u) == 0u;
    float loaded[32];
    if (by4) {
        [[unroll]] for (int j = 0; j < 8; j++) {
            const uint i = 4u * (lid + uint(64 * j));
            const vec4 q = load_x4(pc.x_offset + (srow[i / uint(D)] & ~PAD) * uint(D) + i % uint(D));
            [[unroll]] for (int c = 0; c < 4; c++) loaded[4 * j + c] = q[c];
        }
    } else {
        [[unroll]] for (int j = 0; j < 32; j++) {
            const uint i = lid + uint(64 * j);
            loaded[j] = load_x(pc.x_offset + (srow[i / uint(D)] & ~PAD) * uint(D) + i % uint(D));
        }
    }
    [[unroll]] for (int j = 0; j < 32; j++) {
        const uint i = by4 ? 4u * (lid + uint(64 * (j / 4))) + uint(j % 4) : lid + uint(64 * j);
        sv[i / 32u * uint(PITCH) + i % 32u] = (srow[i / uint(D)] & PAD) != 0u ? 0.0 : loaded[j];
    }
    barrier();
    const uint k = lid % uint(E), row = row0 + lid / uint(E);
    const bool live = lid < uint(ROWS * E) && row < pc.rows_pad; // no early return: barriers follow
    float v[32];
    [[unroll]] for (int i = 0; i < 32; i++) v[i] = sv[lid * uint(PITCH) + uint(i)];
    if (pc.hadamard != 0u) {
        [[unroll]] for (int h = 1; h < 32; h *= 2)
            [[unroll]] for (int i = 0; i < 32; i++)
                if ((i & h) == 0) {
                    const float a = v[i], b = v[i + h];
                    v[i] = a + b;
                    v[i + h] = a - b;
                }
        for (uint h = 1u; h < uint(E); h *= 2u) { // stage 32 h: the partner block is k ^ h
            barrier();
            [[unroll]] for (int i = 0; i < 32; i++) sv[lid * uint(PITCH) + uint(i)] = v[i];
            barrier();
            [[unroll]] for (int i = 0; i < 32; i++) {
                const float p = sv[(lid ^ h) * uint(PITCH) + uint(i)];
                v[i] = (k & h) == 0u ? v[i] + p : p - v[i];
            }
        }
        [[unroll]] for (int i = 0; i < 32; i++) v[i] *= pc.norm;
    }
    const uint dst = row * uint(STORES * E) + k * uint(STORES);
#ifndef OUT_I8 // the int8 form exists only for quantized Q/K
    if (pc.quant == 0u) {
        if (live) {
            store_block(dst, v, 0);
            if (k == 0u) rowscale[row] = floatBitsToUint(1.0);
        }
        return;
    }
#endif
    uint maxbits = 0u;
    [[unroll]] for (int i = 0; i < 32; i++) maxbits = max(maxbits, floatBitsToUint(v[i]) & 0x7fffffffu);
    const int ex = mx_exponent(maxbits, pc.kind, pc.t);
    semax[lid] = maxbits != 0u ? ex : -1000;
    semin[lid] = maxbits != 0u ? ex : 1000;
    barrier();
    if (!live) return;
    int emax = -1000, emin = 1000;
    for (uint b = lid - k; b < lid - k + uint(E); b++) {
        emax = max(emax, semax[b]);
        emin = min(emin, semin[b]);
    }
    if (emax == -1000) emax = emin = 0;
    [[unroll]] for (int i = 0; i < 32; i++) {
        const uint b = floatBitsToUint(v[i]);
        const float m = mx_round(b & 0x7fffffffu, ex);
        v[i] = (b >> 31) != 0u ? -m : m;
    }
#if defined(OUT_I8)
    const bool narrow = emax - emin <= 3;
    store_block(dst, v, narrow ? clamp(ex - emin, 0, 3) : 0);
    rowscale[row * uint(E) + k] = narrow ? mx_pow2_bits(emin) : mx_pow2_bits(ex) | 0x80000000u;
#elif defined(OUT_F16)
    store_block(dst, v, ex - emax);
    if (k == 0u) rowscale[row] = mx_pow2_bits(emax);
#else
    store_block(dst, v, ex);
#endif
}
