#version 450
// Attention, scalar variant: one workgroup of 64 invocations per query row, SPEC §2
// step by step on the prepared fp32 Q/K/V of prep_*.comp. Runs on any Vulkan 1.1
// device. Invocations split the keys of a tile (scores, exponentials, one 32-key
// block each for P quantization) and the D output columns; every invocation keeps
// the same running m and l by reading the tile from shared memory in key order, so
// sums follow the reference's order. Private arrays stay tiny (lavapipe runs compute
// shaders on small coroutine stacks). Bias, mask and key lengths (extras.glsl) enter where
// the reference takes them: a row walks only its batch's L_b keys, in the same tiles as a
// call with Nk = L_b. kind 2 (an MXFP8 P V): P^ in MXFP8 per 32 keys, V arrives decoded
// from prep_v in MXFP8 too; E4M3 products are exact in fp32.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;
#include "mxfp4.glsl"

layout(constant_id = 0) const int D = 128;
layout(constant_id = 1) const int BC = 64;
const int CPT = (D + 63) / 64; // output columns per invocation

layout(std430, binding = 0) readonly buffer QB { float q[]; };  // [b*h, nq, D]
layout(std430, binding = 1) readonly buffer KB { float k[]; };  // [b*hkv, nk_pad, D]
layout(std430, binding = 2) readonly buffer VB { float v[]; };  // [b*hkv, nk_pad, D]
layout(std430, binding = 3) writeonly buffer OB { float o[]; };
layout(std430, binding = 4) writeonly buffer LB { float lse[]; };

layout(push_constant) uniform P {
    uint h, hkv, nq, nk, nk_pad, o_offset, causal, quant_p, pnq, kind, t, rows;
    float scale;
    uint lse_offset, bias_offset, bias_sb, bias_sh, mask_offset, mask_sb, mask_sh;
} pc;
#include "extras.glsl"

shared float sq[D];
shared float sp[BC];  // scores, then P~, then P^
shared float spt[BC]; // P~ (direct placement sums it)

void main()
{
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= pc.rows) return; // uniform over the workgroup
    const uint tid = gl_LocalInvocationID.x;
    const uint bh = row / pc.nq, i = row % pc.nq;
    const uint b = bh / pc.h, hh = bh % pc.h;
    const uint kvh = b * pc.hkv + hh / (pc.h / pc.hkv);
    const uint kbase = kvh * pc.nk_pad * uint(D);
    const float NEG_INF = uintBitsToFloat(0xff800000u);
    const int nk = keys_of(b);
    const int last = pc.causal != 0u ? min(int(i) + causal_shift(nk), nk - 1) : nk - 1;
    uint brow = 0u, mrow = 0u;
    if (HAS_BIAS) brow = bias_row(b, hh, i);
    if (HAS_MASK) mrow = mask_row(b, hh, i);

    for (uint c = tid; c < uint(D); c += 64u) sq[c] = q[row * uint(D) + c];
    float acc[CPT];
    for (int u = 0; u < CPT; u++) acc[u] = 0.0;
    float m = NEG_INF, l = 0.0;
    barrier();
    for (int j0 = 0; j0 <= last; j0 += BC) {
        const int len = min(BC, nk - j0);
        for (int j = int(tid); j < len; j += 64) {
            float s = NEG_INF;
            if (j0 + j <= last) {
                uint kr = kbase + uint(j0 + j) * uint(D);
                float dot = 0.0;
                for (int blk = 0; blk < D / 32; blk++) { // block products, summed in block order
                    float part = 0.0;
                    for (int c = blk * 32; c < blk * 32 + 32; c++) part += sq[c] * k[kr + uint(c)];
                    dot += part;
                }
                s = dot * pc.scale;
                if (HAS_SIDE) s = side_score(s, brow, mrow, uint(j0 + j), 1.0);
            }
            sp[j] = s;
        }
        barrier();
        float tile_max = NEG_INF;
        for (int j = 0; j < len; j++) tile_max = max(tile_max, sp[j]);
        const float m_new = max(m, tile_max);
        barrier();
        if (m_new != NEG_INF) { // uniform: every invocation computed the same m_new
            const float alpha = exp(m - m_new);
            for (int j = int(tid); j < len; j += 64) {
                float p = sp[j] == NEG_INF ? 0.0 : exp(sp[j] - m_new);
                sp[j] = p;
                spt[j] = p;
            }
            barrier();
            if (pc.quant_p != 0u) {
                for (int blk = int(tid); blk * 32 < len; blk += 64) {
                    const int end = min(len, blk * 32 + 32);
                    uint maxbits = 0u;
                    for (int j = blk * 32; j < end; j++) maxbits = max(maxbits, floatBitsToUint(sp[j]));
                    const int e = mx_exponent(maxbits, pc.kind, pc.t);
                    for (int j = blk * 32; j < end; j++) sp[j] = ldexp(mx_round_kind(floatBitsToUint(sp[j]), e, pc.kind), e);
                }
                barrier();
            }
            float sum_hat = 0.0, sum_tilde = 0.0;
            for (int j = 0; j < len; j++) {
                sum_hat += sp[j];
                sum_tilde += spt[j];
            }
            l = alpha * l + ((pc.pnq != 0u || pc.quant_p == 0u) ? sum_hat : sum_tilde);
            const uint vbase = kbase + uint(j0) * uint(D);
            for (int u = 0; u < CPT; u++) {
                const uint c = tid + uint(u) * 64u;
                if (c >= uint(D)) break;
                float pv = 0.0;
                for (int j = 0; j < len; j++) pv += sp[j] * v[vbase + uint(j) * uint(D) + c];
                acc[u] = alpha * acc[u] + pv;
            }
            m = m_new;
            barrier(); // the next tile overwrites sp
        }
    }
    const uint obase = pc.o_offset + row * uint(D);
    for (int u = 0; u < CPT; u++) {
        const uint c = tid + uint(u) * 64u;
        if (c < uint(D)) o[obase + c] = m == NEG_INF ? 0.0 : acc[u] / l;
    }
    if (tid == 0u) lse[pc.lse_offset + row] = m == NEG_INF ? NEG_INF : m + log(l);
}
