#version 450
// Attention, portable VK_KHR_cooperative_matrix variant with the softmax through shared
// memory. The element -> (row, column) map of a KHR fragment is opaque, so no matrix element
// is ever touched by index: every per-row or per-column operation goes through shared memory
// (coopMatStore, lanes work on rows, coopMatLoad) or through component-wise arithmetic
// between two cooperative matrices of the same type. Any subgroup-scope shape a driver
// enumerates works, and any subgroup size (gl_SubgroupSize at run time: every lane loop is
// strided by it); the host must launch full subgroups.
//
// Builds (one source):
//   -DS_INT8=1: S = Q K^T on int8 (A = Q: SM x SK int8, B = K^T: SK x SN int8, C int32) from
//     prep_qk.comp's OUT_I8 form (int8 = 2 x E2M1, scales [row][D/32], negative = wide row).
//     A subgroup whose SM query rows and the tile's BC keys are all narrow sums all of D in
//     one int32 chain (exact: |int8| <= 96) and scales once, 0.25 * qscale * kscale, in the
//     softmax pass; otherwise each 32-wide block's product (32 / SK MMAs chained in int32) is
//     converted to fp32 and multiplied component-wise by a matrix of the block's scale products
//     (built in the shared S buffer), then summed over the blocks in fp32, block order.
//   default: S on fp16 (A SM x SK, B SK x SN, C fp32) from prep_qk.comp OUT_F16 (values / 2^E,
//     one power-of-two scale per row), products exact as in attn_coopmat_nv.comp.
//   Both: O += P V on fp16: A = P^ * 2^12 (SM x PK, from shared), B = V^T tile (PK x PN,
//     column-major from prep_v.comp's OUT_F16 transpose = 1 layout V^T [heads, D, n_pad]),
//     C fp32 (SM x PN), D / PN accumulators per subgroup.
//
// Work split: a subgroup owns SM query rows and never waits for the other subgroups of its
// workgroup (only subgroup barriers, no workgroup barrier). Q, K and V^T fragments are loaded
// straight from the storage buffers (shared between subgroups through the caches); nothing of
// K or V is staged in shared memory except the tile's K scales (sKs, per subgroup). Per key
// tile (BC keys):
//   1. S tiles (BC / SN accumulators) -> per-subgroup shared S buffer sS [SM][BC] fp32.
//   2. lanes take (row, 32-key block) items, strided by gl_SubgroupSize: scale to log2 units,
//      mask (keys >= nk, causal), write back, block maxima -> shared.
//   3. lanes take rows: m_new = max(m, block maxima), alpha = 2^(m - m_new).
//   4. items again: P~ = 2^(S - m_new), P^ = MXFP4(P~) per 32-key block (MODE bit 0; bit 2 the
//      ceiling rule), the block's row-sum share (P^ under PNQ, else P~), P^ * 2^12 -> shared
//      fp16 sP [SM][BC].
//   5. rows: l = alpha * l + row sum (blocks in key order). Unless every alpha is 1 (exact,
//      and common) the alphas fill an SM x PN block of sS (row r = alpha[r]) that is loaded
//      as an accumulator matrix and multiplies each O accumulator component-wise.
//   6. O += P^ V^T, P^ from sP as the A matrix.
// End: the O accumulators pass through sS BC / PN at a time; lanes write O = acc * vscale / l
// coalesced, and lse = m ln 2 + ln(l / 2^12). Results equal attn_coopmat_nv_reg.comp's up to
// fp32 summation order (row sums, int8 wide blocks, MMA internals).
//
// Specialization constants: 0 D (multiple of 32, of SK and of PN), 1 BC (multiple of 32, SN,
// PK; >= PN; 64 from the host), 2 WARPS, 3 local_size_x = WARPS * subgroup size, 4 MODE (bit 0
// quantize P, bit 1 PNQ, bit 2 ceiling rule), 5 SM (rows of the S and P/O matrices, = PM),
// 6 SN, 7 SK (int8: 8, 16 or 32; fp16: a multiple of 8), 8 PN, 9 PK (a multiple of 8).
// nq_pad must be a multiple of WARPS * SM, nk_pad of BC. Features: cooperativeMatrix with the
// two shapes (subgroup scope), shaderFloat16, shaderInt8 (S_INT8), vulkanMemoryModel (glslang
// emits the Vulkan memory model, as for the NV kernels), subgroup basic + vote, full subgroups
// of the size local_size_x / WARPS was computed with (any size: 8, 16, 32, 64 ...).
//
// Shared memory, bytes: WARPS * (6 * SM * BC + 4 * NB * (BC + SM) + 12 * SM + SM * BC / 4),
//   NB = D / 32 for S_INT8, 1 for fp16: per subgroup sS 4 * SM * BC, sP 2 * SM * BC, sKs 4 * NB * BC,
//   sQs 4 * NB * SM, sM/sL/sAl 12 * SM, sBM/sBS 8 * SM * BC / 32; nothing depends on SN, SK,
//   PN, PK. WARPS = 4, SM = 16, BC = 64: 27648 bytes (fp16, any D); int8 31488 at D = 128,
//   36608 at D = 256.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#ifdef S_INT8
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#endif
#include "mxfp4.glsl"

layout(constant_id = 0) const int D = 128;
layout(constant_id = 1) const int BC = 64;
layout(constant_id = 2) const int WARPS = 4;
layout(local_size_x_id = 3) in;
layout(constant_id = 4) const int MODE = 3; // bit 0: quantize P, bit 1: PNQ (l sums P^), bit 2: the ceiling rule
layout(constant_id = 5) const int SM = 16;
layout(constant_id = 6) const int SN = 16;
#ifdef S_INT8
layout(constant_id = 7) const int SK = 32;
#else
layout(constant_id = 7) const int SK = 16;
#endif
layout(constant_id = 8) const int PN = 16;
layout(constant_id = 9) const int PK = 16;

const bool QUANT_P = (MODE & 1) != 0;
const bool HAT_SUM = (MODE & 3) == 3;
const uint KIND = uint(MODE >> 2) & 1u;
const float LOG2E = 1.4426950408889634;
const float P_SCALE = 4096.0; // P^ <= 1: 2^12 keeps blocks down to 2^-36 exact in fp16
const int NBLK = BC / 32;     // 32-key P blocks per tile row
const int NI = SM * NBLK;     // (row, block) items per subgroup and tile
const int ST = BC / SN;       // S accumulators per tile
const int QT = D / SK;        // Q A matrices
const int OT = D / PN;        // O accumulators
const int VT = BC / PK;       // P A matrices per tile
const int CH = BC / PN;       // O accumulators per pass through sS at the end
#ifdef S_INT8
const int NB = D / 32;        // Q/K scales per row
const int SUB = 32 / SK;      // MMAs per 32-wide block
#else
const int NB = 1;
#endif

#define ROWMAJOR gl_CooperativeMatrixLayoutRowMajor
#define COLMAJOR gl_CooperativeMatrixLayoutColumnMajor

// Q and K: int8 (16 per uvec4, 8 per uvec2: the uvec2 view serves SK = 8, whose fragments
// start 8 bytes apart) or fp16 (8 per uvec4). V^T fp16, 8 per uvec4.
layout(std430, binding = 0) readonly buffer QB { uvec4 q4[]; };    // [b*h, nq_pad, D]
layout(std430, binding = 0) readonly buffer QB2 { uvec2 q2[]; };   // the same buffer
layout(std430, binding = 1) readonly buffer KB { uvec4 k4[]; };    // [b*hkv, nk_pad, D]
layout(std430, binding = 1) readonly buffer KB2 { uvec2 k2[]; };   // the same buffer
layout(std430, binding = 2) readonly buffer VB { uvec4 v4[]; };    // [b*hkv, D, nk_pad] (V^T)
layout(std430, binding = 3) readonly buffer QS { float qscale[]; }; // [b*h, nq_pad, NB]
layout(std430, binding = 4) readonly buffer KS { float kscale[]; }; // [b*hkv, nk_pad, NB]
layout(std430, binding = 5) readonly buffer VS { float vscale[]; }; // [b*hkv, D]
layout(std430, binding = 6) writeonly buffer OB { float o[]; };
layout(std430, binding = 7) writeonly buffer LB { float lse[]; };

layout(push_constant) uniform P { // quant_p, pnq, kind arrive as MODE
    uint h, hkv, nq, nk, nq_pad, nk_pad, o_offset, causal, quant_p, pnq, kind, t;
    float scale;
} pc;

// per subgroup w: [w * SM * BC ...], [w * BC ...], [w * SM ...], [w * SM * NBLK ...]
shared float sS[WARPS * SM * BC];     // S tile (row-major, row stride BC); also the wide path's
                                      // scale matrices, the alpha block and the final O passes
shared float16_t sP[WARPS * SM * BC]; // P^ * 2^12, row-major, row stride BC
shared float sKs[WARPS * NB * BC];    // the tile's K scales, [block][key]
shared float sQs[WARPS * NB * SM];    // |qscale| * scale * log2(e) (int8: * 1/4), [block][row]
shared float sM[WARPS * SM];          // running maximum, log2 units
shared float sL[WARPS * SM];          // running row sum, units of 2^-12
shared float sAl[WARPS * SM];         // this tile's alpha; at the end 1 / l
shared float sBM[WARPS * SM * NBLK];  // block maxima of S
shared float sBS[WARPS * SM * NBLK];  // block row sums

// MXFP4(p) * 2^12 for p in [0, 1] under the block exponent ex (exb = (ex + 127) << 23,
// sat = 6 * 2^ex), as attn_coopmat_nv_reg.comp: clamp at sat, then adding and subtracting
// c = 2^(max(e, ex) + 22) (e the binade of the clamped p) rounds to the E2M1 step, ties to
// even. `precise` keeps the compiler from folding (x + c) - c.
float quantize_p(float p, uint exb, float sat)
{
    const float pm = min(p, sat);
    const float c = uintBitsToFloat(max(floatBitsToUint(pm), exb) & 0x7f800000u);
    precise float x = fma(c, 4194304.0, pm);
    precise float r = fma(c, -4194304.0, x);
    return r * P_SCALE;
}

void main()
{
    const float NEG_INF = uintBitsToFloat(0xff800000u);
    const uint w = gl_SubgroupID, lane = gl_SubgroupInvocationID, SG = gl_SubgroupSize;
    if (w >= uint(WARPS)) return; // more subgroups than planned (never with full subgroups)
    const uint hh = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint bh = b * pc.h + hh, kvh = b * pc.hkv + hh / (pc.h / pc.hkv);
    const uint i0 = gl_WorkGroupID.x * uint(WARPS * SM) + w * uint(SM);
    if (i0 >= pc.nq) return; // only padding rows: nothing to write (no workgroup barriers follow)
    const uint sb = w * uint(SM * BC);   // this subgroup's sS / sP
    const uint kb0 = w * uint(NB * BC);  // its sKs
    const uint qb0 = w * uint(NB * SM);  // its sQs
    const uint rb = w * uint(SM);        // its row arrays
    const uint bb = w * uint(SM * NBLK); // its block arrays
    const uint kbase = kvh * pc.nk_pad;  // first K row of the kv head
    const int shift = int(pc.nk) - int(pc.nq);

    // Q fragments, resident for the whole kernel
    const uint qe = (bh * pc.nq_pad + i0) * uint(D); // element (int8 / fp16) index of row i0
#ifdef S_INT8
    coopmat<int8_t, gl_ScopeSubgroup, SM, SK, gl_MatrixUseA> qa[QT];
    [[unroll]] for (int t = 0; t < QT; t++) {
        if (SK >= 16) coopMatLoad(qa[t], q4, (qe + uint(t * SK)) / 16u, uint(D / 16), ROWMAJOR);
        else coopMatLoad(qa[t], q2, (qe + uint(t * SK)) / 8u, uint(D / 8), ROWMAJOR);
    }
#else
    coopmat<float16_t, gl_ScopeSubgroup, SM, SK, gl_MatrixUseA> qa[QT];
    [[unroll]] for (int t = 0; t < QT; t++) coopMatLoad(qa[t], q4, (qe + uint(t * SK)) / 8u, uint(D / 8), ROWMAJOR);
#endif
    coopmat<float, gl_ScopeSubgroup, SM, PN, gl_MatrixUseAccumulator> oacc[OT];
    [[unroll]] for (int dt = 0; dt < OT; dt++) oacc[dt] = coopmat<float, gl_ScopeSubgroup, SM, PN, gl_MatrixUseAccumulator>(0.0);

    // per-row state and S factors
    bool wide_row = false;
    for (uint r = lane; r < uint(SM); r += SG) {
        const uint qrow = bh * pc.nq_pad + i0 + r;
#ifdef S_INT8
        [[unroll]] for (int db = 0; db < NB; db++) {
            const float qsv = qscale[qrow * uint(NB) + uint(db)];
            wide_row = wide_row || floatBitsToUint(qsv) >> 31 != 0u;
            sQs[qb0 + uint(db * SM) + r] = abs(qsv) * (pc.scale * 0.25 * LOG2E); // 1/4: each int8 is twice its E2M1 value
        }
#else
        sQs[qb0 + r] = qscale[qrow] * (pc.scale * LOG2E);
#endif
        sM[rb + r] = NEG_INF;
        sL[rb + r] = 0.0;
    }
#ifdef S_INT8
    const bool wide_q = subgroupAny(wide_row);
#endif

    const int warp_row = min(int(i0) + SM - 1, int(pc.nq) - 1); // the subgroup's last real row
    const int warp_last = pc.causal != 0u ? min(int(pc.nk) - 1, warp_row + shift) : int(pc.nk) - 1;
    const int ntiles = warp_last < 0 ? 0 : warp_last / BC + 1;

    for (int tile = 0; tile < ntiles; tile++) {
        const uint j0 = uint(tile * BC);
        subgroupMemoryBarrierShared();
        subgroupBarrier(); // the previous tile's reads of sS, sP, sKs are done

        // --- 1. S = Q K^T -> sS
        bool wide_key = false;
        for (uint e = lane; e < uint(BC * NB); e += SG) { // contiguous in kscale
            const float ks = kscale[(kbase + j0) * uint(NB) + e];
            sKs[kb0 + (e % uint(NB)) * uint(BC) + e / uint(NB)] = ks;
            wide_key = wide_key || floatBitsToUint(ks) >> 31 != 0u;
        }
        coopmat<float, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator> s[ST];
#ifdef S_INT8
        const bool wide = wide_q || subgroupAny(wide_key);
        [[dont_flatten]] if (!wide) {
            [[unroll]] for (int kt = 0; kt < ST; kt++) {
                coopmat<int, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator> si = coopmat<int, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator>(0);
                const uint ke = (kbase + j0 + uint(kt * SN)) * uint(D);
                [[unroll]] for (int t = 0; t < QT; t++) {
                    coopmat<int8_t, gl_ScopeSubgroup, SK, SN, gl_MatrixUseB> kb;
                    if (SK >= 16) coopMatLoad(kb, k4, (ke + uint(t * SK)) / 16u, uint(D / 16), COLMAJOR);
                    else coopMatLoad(kb, k2, (ke + uint(t * SK)) / 8u, uint(D / 8), COLMAJOR);
                    si = coopMatMulAdd(qa[t], kb, si);
                }
                s[kt] = coopmat<float, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator>(si); // exact: |si| < 2^24
            }
        } else { // some row or key is wide: each block's product times its scale products, in fp32
            [[unroll]] for (int kt = 0; kt < ST; kt++) s[kt] = coopmat<float, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator>(0.0);
            [[unroll]] for (int db = 0; db < NB; db++) {
                subgroupMemoryBarrierShared();
                subgroupBarrier(); // the previous block's scale matrices are loaded
                // sS[r][c] = |kscale(key c, db)| * |qscale(row r, db)| * scale * log2(e) / 4
                for (uint e = lane; e < uint(SM * BC); e += SG)
                    sS[sb + e] = abs(sKs[kb0 + uint(db * BC) + e % uint(BC)]) * sQs[qb0 + uint(db * SM) + e / uint(BC)];
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                [[unroll]] for (int kt = 0; kt < ST; kt++) {
                    coopmat<int, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator> si = coopmat<int, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator>(0);
                    const uint ke = (kbase + j0 + uint(kt * SN)) * uint(D);
                    [[unroll]] for (int u = 0; u < SUB; u++) {
                        const int t = db * SUB + u;
                        coopmat<int8_t, gl_ScopeSubgroup, SK, SN, gl_MatrixUseB> kb;
                        if (SK >= 16) coopMatLoad(kb, k4, (ke + uint(t * SK)) / 16u, uint(D / 16), COLMAJOR);
                        else coopMatLoad(kb, k2, (ke + uint(t * SK)) / 8u, uint(D / 8), COLMAJOR);
                        si = coopMatMulAdd(qa[t], kb, si);
                    }
                    coopmat<float, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator> sc;
                    coopMatLoad(sc, sS, sb + uint(kt * SN), uint(BC), ROWMAJOR);
                    coopmat<float, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator> sf = coopmat<float, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator>(si);
                    s[kt] = s[kt] + sf * sc;
                }
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier(); // the last scale matrices are loaded before S overwrites them
        }
#else
        const bool wide = false;
        [[unroll]] for (int kt = 0; kt < ST; kt++) {
            s[kt] = coopmat<float, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator>(0.0);
            const uint ke = (kbase + j0 + uint(kt * SN)) * uint(D);
            [[unroll]] for (int t = 0; t < QT; t++) {
                coopmat<float16_t, gl_ScopeSubgroup, SK, SN, gl_MatrixUseB> kb;
                coopMatLoad(kb, k4, (ke + uint(t * SK)) / 8u, uint(D / 8), COLMAJOR);
                s[kt] = coopMatMulAdd(qa[t], kb, s[kt]);
            }
        }
#endif
        [[unroll]] for (int kt = 0; kt < ST; kt++) coopMatStore(s[kt], sS, sb + uint(kt * SN), uint(BC), ROWMAJOR);
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // --- 2. items (row r, block blk): scale to log2 units, mask, block maxima. Item it
        // visits its 32 keys from column `skew` on: 32 consecutive items touch 32 different
        // banks at every step (the row stride BC is a multiple of 32).
        for (uint it = lane; it < uint(NI); it += SG) {
            const uint r = it / uint(NBLK), blk = it % uint(NBLK), skew = it & 31u;
            const uint row = i0 + r;
            const int last = pc.causal != 0u ? min(int(row) + shift, int(pc.nk) - 1) : int(pc.nk) - 1;
            const float qs = sQs[qb0 + r];
            const uint base = sb + r * uint(BC) + blk * 32u;
            float bm = NEG_INF;
            [[unroll]] for (uint e = 0u; e < 32u; e++) {
                const uint col = (e + skew) & 31u;
                const int j = int(j0 + blk * 32u + col);
                const float f = wide ? 1.0 : sKs[kb0 + blk * 32u + col] * qs; // wide: already scaled
                const float sv = j <= last ? sS[base + col] * f : NEG_INF;
                sS[base + col] = sv;
                bm = max(bm, sv);
            }
            sBM[bb + it] = bm;
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // --- 3. rows: new maximum and alpha
        bool moved = false;
        for (uint r = lane; r < uint(SM); r += SG) {
            float mx = NEG_INF;
            [[unroll]] for (int blk = 0; blk < NBLK; blk++) mx = max(mx, sBM[bb + r * uint(NBLK) + uint(blk)]);
            const float mo = sM[rb + r], mn = max(mo, mx);
            // mo = -inf: l and the row of O are 0, so alpha = 1 is as good as the reference's 0
            const float alpha = mo == NEG_INF ? 1.0 : exp2(mo - mn);
            sM[rb + r] = mn;
            sAl[rb + r] = alpha;
            moved = moved || alpha != 1.0;
        }
        const bool rescale = subgroupAny(moved);
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // --- 4. items: P~, P^ (* 2^12) -> sP, block row sums
        for (uint it = lane; it < uint(NI); it += SG) {
            const uint r = it / uint(NBLK), blk = it % uint(NBLK), skew = it & 31u;
            const uint base = sb + r * uint(BC) + blk * 32u;
            const float mn = sM[rb + r];
            const float mz = mn == NEG_INF ? 0.0 : mn; // a row with no key yet: all P = 0
            float p[32];
            uint maxbits = 0u;
            float rs = 0.0;
            [[unroll]] for (uint e = 0u; e < 32u; e++) {
                p[e] = exp2(sS[base + ((e + skew) & 31u)] - mz); // masked: exp2(-inf) = 0
                maxbits = max(maxbits, floatBitsToUint(p[e]));
                if (!HAT_SUM) rs += p[e];
            }
            if (QUANT_P) {
                const uint exb = uint(mx_exponent(maxbits, KIND, pc.t) + 127) << 23;
                const float sat = uintBitsToFloat(exb + 0x01400000u); // 6 * 2^ex
                [[unroll]] for (uint e = 0u; e < 32u; e++) {
                    p[e] = quantize_p(p[e], exb, sat);
                    if (HAT_SUM) rs += p[e];
                }
            } else {
                [[unroll]] for (uint e = 0u; e < 32u; e++) p[e] *= P_SCALE;
            }
            if (!HAT_SUM) rs *= P_SCALE;
            [[unroll]] for (uint e = 0u; e < 32u; e++) sP[base + ((e + skew) & 31u)] = float16_t(p[e]);
            sBS[bb + it] = rs;
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // --- 5. rows: l; the alpha block (rows of sS, stride BC, now free) when some max moved
        for (uint r = lane; r < uint(SM); r += SG) {
            float rsum = 0.0;
            [[unroll]] for (int blk = 0; blk < NBLK; blk++) rsum += sBS[bb + r * uint(NBLK) + uint(blk)];
            if (sM[rb + r] != NEG_INF) sL[rb + r] = sAl[rb + r] * sL[rb + r] + rsum;
        }
        if (rescale) {
            for (uint e = lane; e < uint(SM * PN); e += SG) {
                const uint r = e / uint(PN), c = e % uint(PN);
                sS[sb + r * uint(BC) + c] = sAl[rb + r];
            }
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        if (rescale) {
            coopmat<float, gl_ScopeSubgroup, SM, PN, gl_MatrixUseAccumulator> am;
            coopMatLoad(am, sS, sb, uint(BC), ROWMAJOR);
            [[unroll]] for (int dt = 0; dt < OT; dt++) oacc[dt] = oacc[dt] * am;
        }

        // --- 6. O += P^ V
        [[unroll]] for (int kt = 0; kt < VT; kt++) {
            coopmat<float16_t, gl_ScopeSubgroup, SM, PK, gl_MatrixUseA> pa;
            coopMatLoad(pa, sP, sb + uint(kt * PK), uint(BC), ROWMAJOR);
            [[unroll]] for (int dt = 0; dt < OT; dt++) {
                coopmat<float16_t, gl_ScopeSubgroup, PK, PN, gl_MatrixUseB> vb;
                const uint ve = (kvh * uint(D) + uint(dt * PN)) * pc.nk_pad + j0 + uint(kt * PK); // V^T element (d, key)
                coopMatLoad(vb, v4, ve / 8u, pc.nk_pad / 8u, COLMAJOR);
                oacc[dt] = coopMatMulAdd(pa, vb, oacc[dt]);
            }
        }
    }

    // O = acc * vscale / l (acc and l both in units of 2^-12); lse
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint r = lane; r < uint(SM); r += SG) {
        const float m = sM[rb + r], l = sL[rb + r];
        sAl[rb + r] = m == NEG_INF ? 0.0 : 1.0 / l;
        const uint row = i0 + r;
        if (row < pc.nq) lse[bh * pc.nq + row] = m == NEG_INF ? NEG_INF : m * (1.0 / LOG2E) + log(l * (1.0 / P_SCALE));
    }
    [[unroll]] for (int d0 = 0; d0 < OT; d0 += CH) {
        subgroupMemoryBarrierShared();
        subgroupBarrier(); // sAl is written; the previous pass's reads of sS are done
        [[unroll]] for (int u = 0; u < CH; u++)
            if (d0 + u < OT) coopMatStore(oacc[d0 + u], sS, sb + uint(u * PN), uint(BC), ROWMAJOR);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (uint e = lane; e < uint(SM * BC); e += SG) {
            const uint r = e / uint(BC), c = uint(d0 * PN) + e % uint(BC), row = i0 + r;
            if (row < pc.nq && c < uint(D))
                o[pc.o_offset + (bh * pc.nq + row) * uint(D) + c] = sS[sb + e] * vscale[kvh * uint(D) + c] * sAl[rb + r];
        }
    }
}
