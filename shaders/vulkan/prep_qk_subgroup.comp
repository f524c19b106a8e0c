#version 450
// Q/K preparation through subgroup shuffles: prep_qk.comp's outputs, bit for bit (the same
// formats, padding rows and scales; its header says what they are), without shared memory
// or barriers. A row's D values lie on L = D / P consecutive invocations of one subgroup,
// P consecutive values each, so the row loads as one coalesced run and the int8 form stores
// one word per invocation at P = 4. The rotation's stages h < P stay in registers; a stage
// h >= P pairs invocation i with i ^ (h / P) by a shuffle. Each stage is element-wise, as in
// the sequential transform, so the result is its bit for bit. Block maxima and the row's
// exponent range are shuffle reductions over a block's 32 / P and a row's L invocations.
// The host picks P with L no wider than the subgroup (vk_prep.c) and requires full
// subgroups, so the invocation numbering below is the subgroup's.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#ifdef OUT_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
layout(local_size_x = 128) in;
#include "mxfp4.glsl"

layout(constant_id = 0) const int D = 128;
layout(constant_id = 1) const int P = 4; // values per invocation: a power of two in 4..32
const int L = D / P;                     // invocations per row
const int BL = 32 / P;                   // invocations per block of 32
const int ROWS = 128 / L;                // rows per workgroup
const int E = D / 32;                    // blocks per row

#include "prep_input.glsl"
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(std430, binding = 1) writeonly buffer Y2 { uvec2 y2[]; }; // the same buffer: 8- and 16-byte stores
layout(std430, binding = 1) writeonly buffer Y4 { uvec4 y4[]; };
layout(std430, binding = 2) writeonly buffer R { uint rowscale[]; }; // float bits; OUT_I8: [rows][E] block scales

layout(push_constant) uniform PC {
    uint rows_pad, n, n_pad, x_offset, hadamard, quant, kind, t;
    float norm;
} pc;

#if defined(OUT_F16)
const int WORDS = P / 2; // output words per invocation
#elif defined(OUT_I8)
const int WORDS = P / 4;
#else
const int WORDS = P;
#endif

// The invocation's P values times 2^shift as WORDS words at word `dst` (int8: twice the
// values, 0 <= shift <= 3), in the widest stores the count allows.
void store_values(uint dst, const float v[P], int shift)
{
    uint words[32]; // WORDS used (a specialization-sized array would be sized 1 at compile time)
#if defined(OUT_F16)
    [[unroll]] for (int w = 0; w < WORDS; w++) words[w] = packFloat2x16(f16vec2(ldexp(v[2 * w], shift), ldexp(v[2 * w + 1], shift)));
#elif defined(OUT_I8)
    [[unroll]] for (int w = 0; w < WORDS; w++) {
        uint packed = 0u;
        [[unroll]] for (int j = 0; j < 4; j++) packed |= uint((int(2.0 * v[4 * w + j]) << shift) & 0xff) << (8 * j);
        words[w] = packed;
    }
#else
    [[unroll]] for (int w = 0; w < WORDS; w++) words[w] = floatBitsToUint(ldexp(v[w], shift));
#endif
    if (WORDS % 4 == 0) {
        [[unroll]] for (int s = 0; s < WORDS / 4; s++)
            y4[dst / 4u + uint(s)] = uvec4(words[4 * s], words[4 * s + 1], words[4 * s + 2], words[4 * s + 3]);
    } else if (WORDS == 2) {
        y2[dst / 2u] = uvec2(words[0], words[1]);
    } else {
        [[unroll]] for (int s = 0; s < WORDS; s++) y[dst + uint(s)] = words[s];
    }
}

void main()
{
    const uint inv = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    const uint lane = inv % uint(L); // the invocation's place in its row
    const uint row = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * uint(ROWS) + inv / uint(L);
    const uint token = row % pc.n_pad;
    const bool live = row < pc.rows_pad; // no early return: every invocation takes part in the shuffles
    float v[P];
    if (live && token < pc.n) {
        const uint src = pc.x_offset + (row / pc.n_pad * pc.n + token) * uint(D) + lane * uint(P);
        if ((pc.x_offset & 3u) == 0u) {
            [[unroll]] for (int j = 0; j < P / 4; j++) {
                const vec4 q = load_x4(src + uint(4 * j));
                [[unroll]] for (int c = 0; c < 4; c++) v[4 * j + c] = q[c];
            }
        } else {
            [[unroll]] for (int i = 0; i < P; i++) v[i] = load_x(src + uint(i));
        }
    } else {
        [[unroll]] for (int i = 0; i < P; i++) v[i] = 0.0; // padding rows are zeros
    }
    if (pc.hadamard != 0u) {
        [[unroll]] for (int h = 1; h < P; h *= 2)
            [[unroll]] for (int i = 0; i < P; i++)
                if ((i & h) == 0) {
                    const float a = v[i], b = v[i + h];
                    v[i] = a + b;
                    v[i + h] = a - b;
                }
        [[unroll]] for (int m = 1; m < L; m *= 2) // stage P m: the partner values are on lane ^ m
            [[unroll]] for (int i = 0; i < P; i++) {
                const float p = subgroupShuffleXor(v[i], uint(m));
                v[i] = (lane & uint(m)) == 0u ? v[i] + p : p - v[i];
            }
        [[unroll]] for (int i = 0; i < P; i++) v[i] *= pc.norm;
    }
    const uint dst = row * uint(WORDS * L) + lane * uint(WORDS);
    const uint k = lane / uint(BL); // the invocation's block
#ifndef OUT_I8 // the int8 form exists only for quantized Q/K
    if (pc.quant == 0u) {
        if (live) {
            store_values(dst, v, 0);
            if (lane == 0u) rowscale[row] = floatBitsToUint(1.0);
        }
        return;
    }
#endif
    uint maxbits = 0u;
    [[unroll]] for (int i = 0; i < P; i++) maxbits = max(maxbits, floatBitsToUint(v[i]) & 0x7fffffffu);
    [[unroll]] for (int m = 1; m < BL; m *= 2) maxbits = max(maxbits, subgroupShuffleXor(maxbits, uint(m)));
    const int ex = mx_exponent(maxbits, pc.kind, pc.t);
    int emax = maxbits != 0u ? ex : -1000, emin = maxbits != 0u ? ex : 1000; // an all-zero block does not count
    [[unroll]] for (int m = BL; m < L; m *= 2) {
        emax = max(emax, subgroupShuffleXor(emax, uint(m)));
        emin = min(emin, subgroupShuffleXor(emin, uint(m)));
    }
    if (!live) return;
    if (emax == -1000) emax = emin = 0;
    [[unroll]] for (int i = 0; i < P; i++) {
        const uint b = floatBitsToUint(v[i]);
        const float m = mx_round(b & 0x7fffffffu, ex);
        v[i] = (b >> 31) != 0u ? -m : m;
    }
#if defined(OUT_I8)
    const bool narrow = emax - emin <= 3;
    store_values(dst, v, narrow ? clamp(ex - emin, 0, 3) : 0);
    if (lane % uint(BL) == 0u) rowscale[row * uint(E) + k] = narrow ? mx_pow2_bits(emin) : mx_pow2_bits(ex) | 0x80000000u;
#elif defined(OUT_F16)
    store_values(dst, v, ex - emax);
    if (lane == 0u) rowscale[row] = mx_pow2_bits(emax);
#else
    store_values(dst, v, ex);
#endif
}
