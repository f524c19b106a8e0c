#version 450
// Attention on packed int8 dot products (SPIR-V OpSDot, VK_KHR_shader_integer_dot_product,
// PackedVectorFormat4x8Bit): a tiled FlashAttention-2 style kernel for GPUs without
// cooperative matrices. Exact like the other mxa kernels: Q, K (prep_qk.comp OUT_I8), P^ and
// V^T (prep_v.comp OUT_I8) are int8 holding 2 x an E2M1 value, so every 32-wide block product
// is an exact int32; block scales (powers of two) are applied in fp32, and only the fp32
// summation order differs from the reference.
//
// Workgroup: THREADS invocations (local_size_x, spec 3) and BR query rows (spec 5); key tiles
// of BC = 64 (spec 1, must be 64: two 32-key P blocks). Q's BR rows stay in shared memory;
// per tile the workgroup stages K (64 x D int8 + its scales), computes S and the softmax,
// then stages V^T (D x 64 int8 + its block scales) in the same shared buffer and computes
// O += P^ V. Each stage is fetched into registers one stage ahead (16-byte coalesced global
// loads), so the global latency overlaps the previous stage's math.
//
// S phase: invocation t = 8 rg + kg holds SR = 8 BR / THREADS rows (rg SR + r) x 8 keys:
// kg 4 + w (block 0) and 32 + kg 4 + w (block 1), w < 4. Per 16 D values it loads SR Q and
// 8 K uvec4 from shared memory and does 4 SR 8 dot products. A row's 64 keys live in 8
// consecutive invocations: block maxima, row maxima and row sums are subgroupShuffleXor over
// lanes ^1, ^2, ^4 (needs a subgroup of at least 8 invocations; see tid below). Narrow rows
// and keys (prep_qk.comp) sum all of D in one int32 chain; an invocation with a wide row or
// key scales each 32-wide block product by its two block scales. P~ = 2^(S - m) with log2(e)
// in the Q scales, P^ = MXFP4(P~) per row and 32-key block, written as int8 codes to
// shared memory with its block scale 2^(e - 1) and alpha.
//
// PV phase: invocation t = CG rg2 + cg holds OR rows (spec 6; rg2 OR + r) x OC = D / CG
// columns (cg + CG u, so 8 neighbouring lanes read 8 neighbouring V^T rows and store 8
// neighbouring floats), CG = THREADS OR / BR. Per 32-key block and chunk of OCH columns
// (spec 7) it sums OR x OCH int32 dot products over 8 uvec4 pairs, then adds each times
// (P block scale x V block scale), an exact power of two, into the fp32 accumulator.
//
// Shared memory (bytes): BR D (Q) + 64 D + 256 (K or V^T) + 8 D (their scales) + 64 BR (P^)
// + 12 BR: D 128, BR 64: 22,528; D 64, BR 64: 13,824; D 256, BR 32: 29,312 (BR 64: 39,936,
// over a 32 KiB limit).
// Bank conflicts: 16-byte reads are conflict-free per 8 lanes (128 bytes): Q and P^ reads are
// broadcasts; K row j sits at j KW + j / 4 (uvec4), V^T row d's 16-key chunk k at
// 4 d + (k ^ (d / 2 % 4)).
//
// Device requirements: shaderIntegerDotProduct, subgroup shuffles in compute, subgroups of at
// least 8 invocations that are full (THREADS a multiple of the subgroup size, or one subgroup).
// Constraints: THREADS % 8 == 0, 8 BR % THREADS == 0, BR % OR == 0, THREADS % (BR / OR) == 0
// and D % CG == 0 (CG a multiple of 8 for conflict-free V^T reads); OCH is reduced to a
// divisor of OC. MODE bit 0 (quantize P) must be set: unquantized P has no exact int8 form.
//
// Extras (extras.glsl): a batch's key length L_b replaces nk in every row's last key and in
// the tiles the workgroup walks; keys at or after L_b never make a block wide, so the result
// equals a call with Nk = L_b bit for bit. The bias (times log2(e)) and the mask act on every
// score a row may see, after the causal and length masking.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_spirv_intrinsics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "mxfp4.glsl"

// OpSDot (4450) on two uints of 4 signed bytes each (PackedVectorFormat4x8Bit = 0): glslang 12
// has no GLSL built-in for it. Capabilities DotProduct (6019), DotProductInput4x8BitPacked (6018).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int packed_format);

layout(constant_id = 0) const int D = 128;
layout(constant_id = 1) const int BC = 64;  // key tile: the code assumes 64
layout(local_size_x_id = 3, local_size_x = 128) in;
layout(constant_id = 4) const int MODE = 3; // bit 0: quantize P (required), bit 1: PNQ (l sums P^), bit 2: the ceiling rule
layout(constant_id = 5) const int BR = 64;  // query rows per workgroup
layout(constant_id = 6) const int OR_ = 4;  // PV phase: rows per invocation (0: 4)
layout(constant_id = 7) const int OCH = 8;  // PV phase: columns per int32 accumulator chunk (0: 8)
const int OR = OR_ > 0 ? OR_ : 4;
const int THREADS = int(gl_WorkGroupSize.x);
const bool HAT_SUM = (MODE & 3) == 3;
const uint KIND = uint(MODE >> 2) & 1u;
const float LOG2E = 1.4426950408889634;
const int NB = D / 32;  // Q/K blocks per row
const int KW = D / 16;  // uvec4 per Q/K row
const int SR = 8 * BR / THREADS;     // S phase rows per invocation
const int CG = THREADS * OR / BR;    // PV phase column groups
const int OC = D / CG;               // PV phase columns per invocation
const int OCH_ = OCH > 0 ? OCH : 8;
const int OCE = OC % OCH_ == 0 ? OCH_ : (OC % 4 == 0 ? 4 : (OC % 2 == 0 ? 2 : 1));
const int STAGE = 4 * D;             // uvec4 per staged tile (K: 64 x KW, V^T: D x 4)
const int STAGE_U = (STAGE + THREADS - 1) / THREADS;
const int STAGE_F = (2 * D + THREADS - 1) / THREADS; // floats of scales (K: 64 x NB, V: D x 2)

layout(std430, binding = 0) readonly buffer QB { uvec4 q4[]; };     // [b*h, nq_pad, D] int8
layout(std430, binding = 1) readonly buffer KB { uvec4 k4[]; };     // [b*hkv, nk_pad, D] int8
layout(std430, binding = 2) readonly buffer VB { uvec4 v4[]; };     // [b*hkv, D, nk_pad] int8 (V^T)
layout(std430, binding = 3) readonly buffer QS { float qscale[]; }; // [b*h, nq_pad, NB], < 0: wide row
layout(std430, binding = 4) readonly buffer KS { float kscale[]; }; // [b*hkv, nk_pad, NB], < 0: wide row
layout(std430, binding = 5) readonly buffer VS { float vscale[]; }; // [b*hkv, D, nk_pad / 32]
layout(std430, binding = 6) writeonly buffer OB { float o[]; };
layout(std430, binding = 7) writeonly buffer LB { float lse[]; };

layout(push_constant) uniform P {
    uint h, hkv, nq, nk, nq_pad, nk_pad, o_offset, causal, quant_p, pnq, kind, t;
    float scale;
    uint lse_offset, bias_offset, bias_sb, bias_sh, mask_offset, mask_sb, mask_sh;
} pc;
#include "extras.glsl"

shared uvec4 sQ[BR * KW];     // Q rows
shared uvec4 sKV[STAGE + 16]; // K tile (row j at j * KW + j / 4) or V^T tile (see v_addr)
shared float sS[2 * D];       // K scales [64][NB] or V block scales [2][D]
shared uvec4 sP[BR * 4];      // P^ codes [BR][64 keys]
shared float sPs[BR * 2];     // P^ block scales 2^(e - 1)
shared float sAl[BR];         // alpha, at the end 1 / l

uint k_addr(uint j) { return j * uint(KW) + (j >> 2); }
uint v_addr(uint d, uint k16) { return d * 4u + (k16 ^ ((d >> 1) & 3u)); }

int dot16(uvec4 a, uvec4 b, int acc)
{
    return acc + sdot4x8(a.x, b.x, 0) + sdot4x8(a.y, b.y, 0) + sdot4x8(a.z, b.z, 0) + sdot4x8(a.w, b.w, 0);
}

// 2 x E2M1(w) for 0 <= w < 8, w = P~ * 2^-e: clamping at 6 saturates, adding then subtracting
// c = 2^(max(binade(w), 0) + 22) rounds to the E2M1 step, ties to even (mx_quantize_p of
// mxfp4.glsl in units of 2^e).
int p_code(float w)
{
    const float wm = min(w, 6.0);
    const float c = uintBitsToFloat(max(floatBitsToUint(wm) & 0x7f800000u, 127u << 23) + (22u << 23));
    precise float x = wm + c;
    precise float r = x - c;
    return int(r * 2.0);
}

// 2^e for -149 <= e <= 127, as bits
float pow2(int e) { return uintBitsToFloat(mx_pow2_bits(e)); }

void main()
{
    const float NEG_INF = uintBitsToFloat(0xff800000u);
    // Invocations numbered through their subgroups, so 8 consecutive ones share a subgroup
    // whatever the driver's mapping of local ids (needs subgroups of >= 8 invocations, and full
    // subgroups: THREADS a multiple of the subgroup size, or a single subgroup).
    const uint tid = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    const uint hh = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint bh = b * pc.h + hh, kvh = b * pc.hkv + hh / (pc.h / pc.hkv);
    const uint wg0 = gl_WorkGroupID.x * uint(BR);
    const uint rg = tid >> 3, kg = tid & 7u;           // S phase
    const uint rg2 = tid / uint(CG), cg = tid % uint(CG); // PV phase

    [[unroll]] for (int u = 0; u < (BR * KW + THREADS - 1) / THREADS; u++) {
        const uint idx = tid + uint(u * THREADS);
        if (idx < uint(BR * KW)) sQ[idx] = q4[(bh * pc.nq_pad + wg0) * uint(KW) + idx];
    }
    const int nk = keys_of(b);
    const int shift = causal_shift(nk);
    float qs[SR];  // narrow rows' scale, with the softmax scale, log2(e) and the 1/4 of int8 = 2 x E2M1
    int last[SR];  // each row's last visible key
    float m[SR], l[SR];
    bool wide_q = false;
    [[unroll]] for (int r = 0; r < SR; r++) {
        const uint row = wg0 + rg * uint(SR) + uint(r);
        const float a = qscale[(bh * pc.nq_pad + row) * uint(NB)];
        wide_q = wide_q || floatBitsToUint(a) >> 31 != 0u;
        qs[r] = abs(a) * (pc.scale * 0.25 * LOG2E);
        last[r] = pc.causal != 0u ? min(int(row) + shift, nk - 1) : nk - 1;
        m[r] = NEG_INF;
        l[r] = 0.0;
    }
    float acc[OR][OC];
    [[unroll]] for (int r = 0; r < OR; r++)
        [[unroll]] for (int u = 0; u < OC; u++) acc[r][u] = 0.0;

    const int wg_row = min(int(wg0) + BR - 1, int(pc.nq) - 1);
    const int wg_last = pc.causal != 0u ? min(nk - 1, wg_row + shift) : nk - 1;
    const int wg_first_last = pc.causal != 0u ? min(int(wg0) + shift, nk - 1) : nk - 1;
    const int ntiles = wg_last < 0 ? 0 : wg_last / 64 + 1;
    const uint k_row0 = kvh * pc.nk_pad, v_row0 = kvh * uint(D);
    const uint vstride = pc.nk_pad / 16u, sstride = pc.nk_pad / 32u;

    // the next stage, in flight while the current one is used
    uvec4 nx[STAGE_U];
    float nxs[STAGE_F];
    // K of tile 0
    [[unroll]] for (int u = 0; u < STAGE_U; u++) {
        const uint idx = tid + uint(u * THREADS);
        if (ntiles > 0 && idx < uint(STAGE)) nx[u] = k4[k_row0 * uint(KW) + idx];
    }
    [[unroll]] for (int u = 0; u < STAGE_F; u++) {
        const uint idx = tid + uint(u * THREADS);
        if (ntiles > 0 && idx < uint(2 * D)) nxs[u] = kscale[k_row0 * uint(NB) + idx];
    }

    for (int tile = 0; tile < ntiles; tile++) {
        const uint j0 = uint(tile * 64);
        barrier(); // every invocation is done with the previous tile's V^T and P^
        [[unroll]] for (int u = 0; u < STAGE_U; u++) {
            const uint idx = tid + uint(u * THREADS);
            if (idx < uint(STAGE)) sKV[k_addr(idx / uint(KW)) + idx % uint(KW)] = nx[u];
        }
        [[unroll]] for (int u = 0; u < STAGE_F; u++) {
            const uint idx = tid + uint(u * THREADS);
            if (idx < uint(2 * D)) sS[idx] = nxs[u];
        }
        barrier();
        // V^T of this tile: row d's 16-key chunk k16 from v4[(v_row0 + d) * vstride + 4 tile + k16]
        [[unroll]] for (int u = 0; u < STAGE_U; u++) {
            const uint idx = tid + uint(u * THREADS);
            if (idx < uint(STAGE)) nx[u] = v4[(v_row0 + (idx >> 2)) * vstride + uint(tile * 4) + (idx & 3u)];
        }
        [[unroll]] for (int u = 0; u < STAGE_F; u++) {
            const uint idx = tid + uint(u * THREADS);
            if (idx < uint(2 * D)) nxs[u] = vscale[(v_row0 + (idx >> 1)) * sstride + uint(tile * 2) + (idx & 1u)];
        }

        // S = Q K^T, scaled to log2 units
        float s[SR][8];
        bool wide = wide_q;
        [[unroll]] for (int u = 0; u < 8; u++) {
            const uint j = uint(u >> 2) * 32u + kg * 4u + uint(u & 3);
            // a key beyond the length does not exist
            wide = wide || (floatBitsToUint(sS[j * uint(NB)]) >> 31 != 0u && (!HAS_KEYLEN || int(j0 + j) < nk));
        }
        [[dont_flatten]] if (!wide) {
            int si[SR][8];
            [[unroll]] for (int r = 0; r < SR; r++)
                [[unroll]] for (int u = 0; u < 8; u++) si[r][u] = 0;
            for (int dc = 0; dc < KW; dc++) {
                uvec4 qv[SR], kv[8];
                [[unroll]] for (int r = 0; r < SR; r++) qv[r] = sQ[(rg * uint(SR) + uint(r)) * uint(KW) + uint(dc)];
                [[unroll]] for (int u = 0; u < 8; u++) kv[u] = sKV[k_addr(uint(u >> 2) * 32u + kg * 4u + uint(u & 3)) + uint(dc)];
                [[unroll]] for (int r = 0; r < SR; r++)
                    [[unroll]] for (int u = 0; u < 8; u++) si[r][u] = dot16(qv[r], kv[u], si[r][u]);
            }
            [[unroll]] for (int u = 0; u < 8; u++) {
                const float ks = sS[(uint(u >> 2) * 32u + kg * 4u + uint(u & 3)) * uint(NB)];
                [[unroll]] for (int r = 0; r < SR; r++) s[r][u] = float(si[r][u]) * (ks * qs[r]);
            }
        } else { // a wide row or key: each 32-wide block product with its own scales
            [[unroll]] for (int r = 0; r < SR; r++)
                [[unroll]] for (int u = 0; u < 8; u++) s[r][u] = 0.0;
            for (int db = 0; db < NB; db++) {
                int si[SR][8];
                [[unroll]] for (int r = 0; r < SR; r++)
                    [[unroll]] for (int u = 0; u < 8; u++) si[r][u] = 0;
                [[unroll]] for (int dc = 2 * db; dc < 2 * db + 2; dc++) {
                    uvec4 qv[SR], kv[8];
                    [[unroll]] for (int r = 0; r < SR; r++) qv[r] = sQ[(rg * uint(SR) + uint(r)) * uint(KW) + uint(dc)];
                    [[unroll]] for (int u = 0; u < 8; u++) kv[u] = sKV[k_addr(uint(u >> 2) * 32u + kg * 4u + uint(u & 3)) + uint(dc)];
                    [[unroll]] for (int r = 0; r < SR; r++)
                        [[unroll]] for (int u = 0; u < 8; u++) si[r][u] = dot16(qv[r], kv[u], si[r][u]);
                }
                float bq[SR];
                [[unroll]] for (int r = 0; r < SR; r++)
                    bq[r] = abs(qscale[(bh * pc.nq_pad + wg0 + rg * uint(SR) + uint(r)) * uint(NB) + uint(db)]) * (pc.scale * 0.25 * LOG2E);
                [[unroll]] for (int u = 0; u < 8; u++) {
                    const float ks = abs(sS[(uint(u >> 2) * 32u + kg * 4u + uint(u & 3)) * uint(NB) + uint(db)]);
                    [[unroll]] for (int r = 0; r < SR; r++) s[r][u] += float(si[r][u]) * ks * bq[r];
                }
            }
        }

        // mask (only tiles reaching past the workgroup's first row's last key), softmax, P^
        [[dont_flatten]] if (int(j0) + 63 > wg_first_last) {
            [[unroll]] for (int r = 0; r < SR; r++)
                [[unroll]] for (int u = 0; u < 8; u++)
                    if (int(j0) + (u >> 2) * 32 + int(kg) * 4 + (u & 3) > last[r]) s[r][u] = NEG_INF;
        }
        if (HAS_SIDE) {
            [[unroll]] for (int r = 0; r < SR; r++) {
                const uint row = wg0 + rg * uint(SR) + uint(r);
                if (row < pc.nq) { // padding rows have no bias or mask row
                    uint brow = 0u, mrow = 0u;
                    if (HAS_BIAS) brow = bias_row(b, hh, row);
                    if (HAS_MASK) mrow = mask_row(b, hh, row);
                    [[unroll]] for (int u = 0; u < 8; u++) {
                        const int j = int(j0) + (u >> 2) * 32 + int(kg) * 4 + (u & 3);
                        if (j <= last[r]) s[r][u] = side_score(s[r][u], brow, mrow, uint(j), LOG2E);
                    }
                }
            }
        }
        [[unroll]] for (int r = 0; r < SR; r++) {
            float bm0 = max(max(s[r][0], s[r][1]), max(s[r][2], s[r][3]));
            float bm1 = max(max(s[r][4], s[r][5]), max(s[r][6], s[r][7]));
            [[unroll]] for (uint x = 1u; x < 8u; x *= 2u) {
                bm0 = max(bm0, subgroupShuffleXor(bm0, x));
                bm1 = max(bm1, subgroupShuffleXor(bm1, x));
            }
            const float mn = max(m[r], max(bm0, bm1));
            const float alpha = mn == NEG_INF ? 1.0 : exp2(m[r] - mn);
            const float mz = mn == NEG_INF ? 0.0 : mn; // a row with no key yet: P = 0
            float rs_tilde = 0.0, ps[2];
            int isum = 0; // block 0's code sum in the low 16 bits, block 1's above
            const uint row = rg * uint(SR) + uint(r);
            [[unroll]] for (int blk = 0; blk < 2; blk++) {
                // the block's largest P~ is the exp2 of its largest S (exp2 monotonic)
                const float pm = exp2((blk == 0 ? bm0 : bm1) - mz);
                const int ex = mx_exponent(floatBitsToUint(pm), KIND, pc.t); // -127 <= ex <= 0
                const float inv = uintBitsToFloat(uint(127 - ex) << 23);   // 2^-ex
                ps[blk] = pow2(ex - 1);
                uint packed = 0u;
                [[unroll]] for (int w = 0; w < 4; w++) {
                    const float p = exp2(s[r][4 * blk + w] - mz);
                    rs_tilde += p;
                    const int code = p_code(p * inv);
                    isum += code << (16 * blk);
                    packed |= uint(code) << (8 * w);
                }
                sP[row * 4u + uint(blk * 2) + (kg >> 2)][kg & 3u] = packed;
            }
            float rs;
            if (HAT_SUM) {
                [[unroll]] for (uint x = 1u; x < 8u; x *= 2u) isum += subgroupShuffleXor(isum, x);
                rs = float(isum & 0xffff) * ps[0] + float(isum >> 16) * ps[1];
            } else {
                [[unroll]] for (uint x = 1u; x < 8u; x *= 2u) rs_tilde += subgroupShuffleXor(rs_tilde, x);
                rs = rs_tilde;
            }
            if (mn != NEG_INF) {
                l[r] = alpha * l[r] + rs;
                m[r] = mn;
            }
            if (kg == 0u) {
                sAl[row] = alpha;
                sPs[row * 2u] = ps[0];
                sPs[row * 2u + 1u] = ps[1];
            }
        }

        barrier(); // every invocation is done with K
        [[unroll]] for (int u = 0; u < STAGE_U; u++) {
            const uint idx = tid + uint(u * THREADS);
            if (idx < uint(STAGE)) sKV[v_addr(idx >> 2, idx & 3u)] = nx[u];
        }
        [[unroll]] for (int u = 0; u < STAGE_F; u++) {
            const uint idx = tid + uint(u * THREADS);
            if (idx < uint(2 * D)) sS[(idx & 1u) * uint(D) + (idx >> 1)] = nxs[u];
        }
        barrier(); // V^T, P^ and its scales are in shared memory
        if (tile + 1 < ntiles) { // K of the next tile
            const uint jn = j0 + 64u;
            [[unroll]] for (int u = 0; u < STAGE_U; u++) {
                const uint idx = tid + uint(u * THREADS);
                if (idx < uint(STAGE)) nx[u] = k4[(k_row0 + jn) * uint(KW) + idx];
            }
            [[unroll]] for (int u = 0; u < STAGE_F; u++) {
                const uint idx = tid + uint(u * THREADS);
                if (idx < uint(2 * D)) nxs[u] = kscale[(k_row0 + jn) * uint(NB) + idx];
            }
        }

        // O = alpha O + P^ V
        [[unroll]] for (int r = 0; r < OR; r++) {
            const float al = sAl[rg2 * uint(OR) + uint(r)];
            [[unroll]] for (int u = 0; u < OC; u++) acc[r][u] *= al;
        }
        [[unroll]] for (int blk = 0; blk < 2; blk++) {
            float ps[OR];
            [[unroll]] for (int r = 0; r < OR; r++) ps[r] = sPs[(rg2 * uint(OR) + uint(r)) * 2u + uint(blk)];
            [[unroll]] for (int ch = 0; ch < OC / OCE; ch++) {
                int pv[OR][OCE];
                [[unroll]] for (int r = 0; r < OR; r++)
                    [[unroll]] for (int c = 0; c < OCE; c++) pv[r][c] = 0;
                [[unroll]] for (int k16 = 2 * blk; k16 < 2 * blk + 2; k16++) {
                    uvec4 pw[OR], vw[OCE];
                    [[unroll]] for (int r = 0; r < OR; r++) pw[r] = sP[(rg2 * uint(OR) + uint(r)) * 4u + uint(k16)];
                    [[unroll]] for (int c = 0; c < OCE; c++) vw[c] = sKV[v_addr(cg + uint(CG * (ch * OCE + c)), uint(k16))];
                    [[unroll]] for (int r = 0; r < OR; r++)
                        [[unroll]] for (int c = 0; c < OCE; c++) pv[r][c] = dot16(pw[r], vw[c], pv[r][c]);
                }
                [[unroll]] for (int c = 0; c < OCE; c++) {
                    const float vs = sS[blk * D + int(cg) + CG * (ch * OCE + c)];
                    [[unroll]] for (int r = 0; r < OR; r++)
                        acc[r][ch * OCE + c] = fma(float(pv[r][c]), ps[r] * vs, acc[r][ch * OCE + c]);
                }
            }
        }
    }

    barrier(); // every invocation is done with sAl
    [[unroll]] for (int r = 0; r < SR; r++) {
        const uint row = rg * uint(SR) + uint(r);
        if (kg == 0u) {
            sAl[row] = m[r] == NEG_INF ? 0.0 : 1.0 / l[r];
            if (wg0 + row < pc.nq) lse[pc.lse_offset + bh * pc.nq + wg0 + row] = m[r] == NEG_INF ? NEG_INF : m[r] * (1.0 / LOG2E) + log(l[r]);
        }
    }
    barrier();
    [[unroll]] for (int r = 0; r < OR; r++) {
        const uint row = wg0 + rg2 * uint(OR) + uint(r);
        const float inv = sAl[rg2 * uint(OR) + uint(r)];
        if (row < pc.nq) {
            [[unroll]] for (int u = 0; u < OC; u++)
                o[pc.o_offset + (bh * pc.nq + row) * uint(D) + cg + uint(CG * u)] = acc[r][u] * inv;
        }
    }
}
