#version 450
// Attention, NV cooperative-matrix variant (fp16 16x16x16 -> fp32). Inputs are the
// exact MXFP4 values of prep_*.comp (OUT_F16) divided by a power of two per Q/K row
// and per V column, so every E2M1 value is exact in fp16 whatever the absolute scale
// (blocks within 23 binades of their row's/column's largest; see prep_qk.comp); the
// power-of-two factors are applied in fp32 when the S tile passes through shared
// memory. Products are exact; only fp32 summation order differs from the reference.
//
// One subgroup (32 lanes) owns 16 query rows; K and V fragments are loaded straight
// from the storage buffers (column-major, L1-shared by the subgroups of a workgroup),
// so subgroups never wait for each other. Per key tile (BC = 64): S = Q K^T (4 x D/16
// MMAs) -> shared; lane = (row, 32-key block): scale, mask, running max (pairs of
// lanes share a row), P~ = exp, P^ = MXFP4(P~), row sums; P^ * 2^12 -> shared fp16;
// O += P^ V (D/16 x 4 MMAs). O is rescaled by alpha through shared memory only when
// some row's maximum moved (alpha == 1 is exact and common).
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#include "mxfp4.glsl"

layout(constant_id = 0) const int D = 128;
layout(constant_id = 1) const int BC = 64;
layout(constant_id = 2) const int WARPS = 4;
layout(local_size_x_id = 3) in;
const int DT = D / 16;
const int KT = BC / 16;
const float P_SCALE = 4096.0; // P^ <= 1: 2^12 keeps blocks down to 2^-36 exact in fp16

layout(std430, binding = 0) readonly buffer QB { float16_t q[]; };   // [b*h, nq_pad, D]
layout(std430, binding = 1) readonly buffer KB { float16_t k[]; };   // [b*hkv, nk_pad, D]
layout(std430, binding = 2) readonly buffer VB { float16_t vt[]; };  // [b*hkv, nk_pad, D]
layout(std430, binding = 3) readonly buffer QS { float qscale[]; };  // [b*h, nq_pad]
layout(std430, binding = 4) readonly buffer KS { float kscale[]; };  // [b*hkv, nk_pad]
layout(std430, binding = 5) readonly buffer VS { float vscale[]; };  // [b*hkv, D]
layout(std430, binding = 6) writeonly buffer OB { float o[]; };
layout(std430, binding = 7) writeonly buffer LB { float lse[]; };

layout(push_constant) uniform P {
    uint h, hkv, nq, nk, nq_pad, nk_pad, o_offset, causal, quant_p, pnq, kind, t;
    float scale;
} pc;

shared float sS[WARPS * 16 * BC];
shared float16_t sP[WARPS * 16 * BC];

void main()
{
    const uint w = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint hh = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint bh = b * pc.h + hh, kvh = b * pc.hkv + hh / (pc.h / pc.hkv);
    const uint i0 = gl_WorkGroupID.x * uint(WARPS * 16) + w * 16u;
    const uint r = lane >> 1, half_ = lane & 1u; // this lane's row and 32-key block
    const uint row = i0 + r;
    const uint sbase = w * uint(16 * BC);
    const uint cbase = half_ * 32u;
    // Lane (r, half) visits its 32 keys starting at column `skew`: at every step the 32
    // lanes touch 32 different shared-memory banks (row stride BC is a multiple of 32).
    const uint skew = (r + 16u * half_) & 31u;
    const float NEG_INF = uintBitsToFloat(0xff800000u);

    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qa[DT];
    [[unroll]] for (int dt = 0; dt < DT; dt++)
        coopMatLoadNV(qa[dt], q, (bh * pc.nq_pad + i0) * uint(D) + uint(dt * 16), uint(D), false);
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> oacc[DT];
    [[unroll]] for (int dt = 0; dt < DT; dt++) oacc[dt] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

    const float qs = qscale[bh * pc.nq_pad + row] * pc.scale;
    const int last = pc.causal != 0u ? int(row) + int(pc.nk) - int(pc.nq) : int(pc.nk) - 1;
    const int warp_last = pc.causal != 0u ? min(int(pc.nk) - 1, int(i0) + 15 + int(pc.nk) - int(pc.nq)) : int(pc.nk) - 1;
    const int ntiles = warp_last < 0 ? 0 : warp_last / BC + 1;
    const uint kbase = kvh * pc.nk_pad;
    float m = NEG_INF, l = 0.0;

    for (int tile = 0; tile < ntiles; tile++) {
        const uint j0 = uint(tile * BC);
        subgroupBarrier(); // previous tile's loads from sS/sP are done
        [[unroll]] for (int kt = 0; kt < KT; kt++) {
            fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> sacc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
            [[unroll]] for (int dt = 0; dt < DT; dt++) {
                fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> kb;
                coopMatLoadNV(kb, k, (kbase + j0 + uint(kt * 16)) * uint(D) + uint(dt * 16), uint(D), true);
                sacc = coopMatMulAddNV(qa[dt], kb, sacc);
            }
            coopMatStoreNV(sacc, sS, sbase + uint(kt * 16), uint(BC), false);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // this lane: row r, keys j0 + half_*32 .. +31
        float p[32];
        float tile_max = NEG_INF;
        [[unroll]] for (uint e = 0u; e < 32u; e++) {
            const uint col = cbase + ((e + skew) & 31u);
            const uint j = j0 + col;
            float s = NEG_INF;
            if (int(j) <= last && j < pc.nk) s = sS[sbase + r * uint(BC) + col] * kscale[kbase + j] * qs;
            p[e] = s;
            tile_max = max(tile_max, s);
        }
        tile_max = max(tile_max, subgroupShuffleXor(tile_max, 1u));
        const float m_new = max(m, tile_max);
        float alpha = 1.0;
        float part = 0.0;
        if (m_new != NEG_INF) {
            alpha = exp(m - m_new);
            float sum_tilde = 0.0, sum_hat = 0.0;
            uint maxbits = 0u;
            [[unroll]] for (uint e = 0u; e < 32u; e++) {
                p[e] = p[e] == NEG_INF ? 0.0 : exp(p[e] - m_new);
                sum_tilde += p[e];
                maxbits = max(maxbits, floatBitsToUint(p[e]));
            }
            if (pc.quant_p != 0u) {
                const int ex = mx_exponent(maxbits, pc.kind, pc.t);
                // P~ in [0, 1], ex in [-127, -2]: v = P~ * 2^-ex is an exact power-of-two
                // scaling, so float compares give the RNE code of mx_code (a subnormal P~
                // may flush to 0 here: its weight is below 2^-126 of the row maximum).
                const float up = uintBitsToFloat(uint(127 - ex) << 23);
                const float down = ldexp(1.0, ex);
                [[unroll]] for (uint e = 0u; e < 32u; e++) {
                    const float v = p[e] * up;
                    const float c = float(v > 0.25) + float(v >= 0.75) + float(v > 1.25) + float(v >= 1.75);
                    const float g = v > 5.0 ? 6.0 : v >= 3.5 ? 4.0 : v > 2.5 ? 3.0 : 0.5 * c; // E2M1 value
                    p[e] = g * down;
                    sum_hat += p[e];
                }
            } else {
                sum_hat = sum_tilde;
            }
            part = (pc.pnq != 0u || pc.quant_p == 0u) ? sum_hat : sum_tilde;
        }
        else {
            [[unroll]] for (uint e = 0u; e < 32u; e++) p[e] = 0.0; // nothing visible yet
        }
        // row sum = first block + second block, in key order like the reference
        const float other = subgroupShuffleXor(part, 1u);
        const float rowsum = half_ == 0u ? part + other : other + part;
        if (m_new != NEG_INF) {
            l = alpha * l + rowsum;
            m = m_new;
        }
        [[unroll]] for (uint e = 0u; e < 32u; e++)
            sP[sbase + r * uint(BC) + cbase + ((e + skew) & 31u)] = float16_t(p[e] * P_SCALE);

        if (subgroupAny(alpha != 1.0)) {
            // rescale O rows through shared memory, KT accumulators (16 x BC floats) at a time
            for (int d0 = 0; d0 < DT; d0 += KT) {
                subgroupBarrier();
                for (int u = 0; u < KT && d0 + u < DT; u++)
                    coopMatStoreNV(oacc[d0 + u], sS, sbase + uint(u * 16), uint(BC), false);
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                [[unroll]] for (uint e = 0u; e < 32u; e++) sS[sbase + r * uint(BC) + cbase + ((e + skew) & 31u)] *= alpha;
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                for (int u = 0; u < KT && d0 + u < DT; u++)
                    coopMatLoadNV(oacc[d0 + u], sS, sbase + uint(u * 16), uint(BC), false);
            }
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        [[unroll]] for (int kt = 0; kt < KT; kt++) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> pa;
            coopMatLoadNV(pa, sP, sbase + uint(kt * 16), uint(BC), false);
            [[unroll]] for (int dt = 0; dt < DT; dt++) {
                fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> vb;
                coopMatLoadNV(vb, vt, (kbase + j0 + uint(kt * 16)) * uint(D) + uint(dt * 16), uint(D), false);
                oacc[dt] = coopMatMulAddNV(pa, vb, oacc[dt]);
            }
        }
    }

    // O = acc * vscale / (2^12 l), through shared memory KT accumulators at a time
    const bool valid = row < pc.nq;
    const float inv = m == NEG_INF ? 0.0 : 1.0 / (P_SCALE * l);
    for (int d0 = 0; d0 < DT; d0 += KT) {
        subgroupBarrier();
        for (int u = 0; u < KT && d0 + u < DT; u++) coopMatStoreNV(oacc[d0 + u], sS, sbase + uint(u * 16), uint(BC), false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        [[unroll]] for (uint e = 0u; e < 32u; e++) {
            const uint col = cbase + ((e + skew) & 31u);
            const uint c = uint(d0 * 16) + col;
            if (valid && c < uint(D))
                o[pc.o_offset + (bh * pc.nq + row) * uint(D) + c] =
                    m == NEG_INF ? 0.0 : sS[sbase + r * uint(BC) + col] * vscale[kvh * uint(D) + c] * inv;
        }
    }
    if (valid && half_ == 0u) lse[bh * pc.nq + row] = m == NEG_INF ? NEG_INF : m + log(l);
}
