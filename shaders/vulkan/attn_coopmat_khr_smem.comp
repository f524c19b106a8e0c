#version 450
// Attention, portable VK_KHR_cooperative_matrix variant with the softmax through shared
// memory. The element -> (row, column) map of a KHR fragment is opaque, so no matrix element
// is ever touched by index: every per-row or per-column operation goes through shared memory
// (coopMatStore, lanes work on rows, coopMatLoad) or through component-wise arithmetic
// between two cooperative matrices of the same type. Any subgroup-scope shape a driver
// enumerates works (SN and PN multiples of 4), and any subgroup size (gl_SubgroupSize at run
// time: every lane loop is strided by it); the host must launch full subgroups.
//
// Builds (one source):
//   -DS_INT8=1: S = Q K^T on int8 (A = Q: SM x SK int8, B = K^T: SK x SN int8, C int32) from
//     prep_qk.comp's OUT_I8 form (int8 = 2 x E2M1, scales [row][D/32], negative = wide row).
//     A subgroup whose SM query rows and the tile's BC keys are all narrow sums all of D in
//     one int32 chain (exact: |int8| <= 96) and scales once, 0.25 * qscale * kscale, in the
//     softmax pass; otherwise each 32-wide block's product (32 / SK MMAs chained in int32) is
//     converted to fp32 and multiplied component-wise by a matrix of the block's scale products
//     (built in the subgroup's S buffer), then summed over the blocks in fp32, block order.
//   default: S on fp16 (A SM x SK, B SK x SN, C fp32) from prep_qk.comp OUT_F16 (values / 2^E,
//     one power-of-two scale per row), products exact (prep_qk.comp OUT_F16).
//   Both: O += P V on fp16: A = P^ * 2^12 (SM x PK, from shared), B = V^T tile (PK x PN,
//     column-major from prep_v.comp's OUT_F16 transpose = 1 layout V^T [heads, D, n_pad]),
//     C fp32 (SM x PN), D / PN accumulators per subgroup.
//
// Work split: WARPS subgroups of SM query rows each walk the key tiles (BC keys) in lockstep.
// Per tile the workgroup stages K (BC keys x D, row stride KW + 1 uvec4) and then V^T (D x BC
// keys, row stride BC / 8 + 1 uvec4) through ONE shared buffer sKV, both copied with 16-byte
// loads by all invocations, each fetched into registers half a tile ahead (V during S and the
// softmax, the next K during P V); the odd row strides keep the fragment loads free of bank
// conflicts. Subgroups whose rows see no key of a tile (causal), or that own only padding
// rows, still take part in the copies and the workgroup barriers. Per tile and subgroup:
//   1. S tiles (BC / SN accumulators) -> its S buffer [SM][BC] fp32 (row stride BC + 4).
//   2. lanes take (row, 32-key block) items (row = item % SM, so 8 consecutive lanes read 8
//      different rows: 16-byte reads without bank conflicts): scale to log2 units, mask
//      (keys >= nk, causal), block maximum (the row's block 0 folds in the running maximum)
//      -> shared. With one item per lane (gl_SubgroupSize >= SM * BC / 32) the 32 values stay
//      in registers for step 3, else step 3 recomputes them from the unchanged S buffer.
//   3. items: m_new = max of the row's block maxima, P~ = 2^(S - m_new), P^ = MXFP4(P~) per
//      32-key block (MODE bit 0; bit 2 the ceiling rule), the block's row-sum share (P^ under
//      PNQ, else P~), P^ * 2^12 -> its P buffer [SM][BC] fp16 (row stride BC + 8), 16-byte
//      stores.
//   4. rows: alpha = 2^(m - m_new), l = alpha * l + row sum (blocks in key order). Unless every
//      alpha is 1 (exact, and common) the alphas fill an SM x PN block of the S buffer that is
//      loaded as an accumulator matrix and multiplies each O accumulator component-wise.
//   5. O += P^ V^T, P^ from the P buffer as the A matrix, V^T from sKV.
// End: the O accumulators pass through the S buffer BC / PN at a time; lanes write
// O = acc * vscale / l, and lse = m ln 2 + ln(l / 2^12). Results equal
// attn_coopmat_khr.comp's up to fp32 summation order (row sums, int8 wide blocks, MMA
// internals).
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
// Shared memory, bytes (KW = D / 16 for S_INT8, D / 8 for fp16; NB = D / 32 for S_INT8, 1 for
// fp16; NBLK = BC / 32):
//   16 * max(BC * (KW + 1), D * (BC / 8 + 1))        sKV (the K tile, then the V^T tile)
//   + 8 (S_INT8 with SK >= 16) or 16 (S_INT8 with SK = 8)  the unused one of sKV / sKV2
//   + 4 * NB * BC                                     sKs, the tile's K scales
//   + WARPS * SM * (16 * (BC / 4 + 1 + BC / 8 + 1) + 8 * NBLK + 12)
//                                                     per subgroup: S and P buffers, block
//                                                     maxima and sums, m, l, alpha
//   BC = 64: 16 * max(64 * (KW + 1), 9 * D) + 4 * 64 * NB + 444 * WARPS * SM (+ 8 / 16 int8).
//   WARPS * SM = 64: int8 D = 128: 47880, D = 64: 38152; fp16 D = 128: 47104, D = 64: 37888.
//   Nothing depends on SN, SK (beyond the +8 / +16), PN, PK.
//
// Extras (extras.glsl, spec 13): a batch's key length L_b replaces nk in every row's last key
// and in the tiles walked; keys at or after L_b never make a tile wide, so the result equals a
// call with Nk = L_b bit for bit. Step 2 adds the bias (times log2(e)) and applies the mask to
// every score a row may see, before the block maxima.
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
const int CH = BC / PN;       // O accumulators per pass through the S buffer at the end
#ifdef S_INT8
const int NB = D / 32;        // Q/K scales per row
const int SUB = 32 / SK;      // MMAs per 32-wide block
const int KW = D / 16;        // uvec4 per K row (16 int8)
const bool U2 = SK == 8;      // K fragments start 8 bytes apart: sKV as uvec2 (sKV2)
#else
const int NB = 1;
const int KW = D / 8;         // uvec4 per K row (8 halves)
const bool U2 = false;
#endif
const int KSTR = KW + 1;      // sKV row stride of the K tile, uvec4
const int VSTR = BC / 8 + 1;  // and of the V^T tile
const int KVN = BC * KSTR > D * VSTR ? BC * KSTR : D * VSTR; // sKV size, uvec4
const int SST = BC / 4 + 1;   // S buffer row stride, uvec4 (4 fp32 each)
const int PST = BC / 8 + 1;   // P buffer row stride, uvec4 (8 fp16 each)
const int SOFF = SM * SST;    // P buffer offset within the subgroup's region
const int RSZ = SOFF + SM * PST; // region per subgroup, uvec4
const uint THREADS = gl_WorkGroupSize.x;
const uint K_N = uint(BC * KW), V_N = uint(D * (BC / 8)), KS_N = uint(NB * (BC / 4));
const uint PT_K = (K_N + THREADS - 1u) / THREADS;   // uvec4 of K per invocation and tile
const uint PT_V = (V_N + THREADS - 1u) / THREADS;   // uvec4 of V^T
const uint PT_S = (KS_N + THREADS - 1u) / THREADS;  // vec4 of K scales

#define ROWMAJOR gl_CooperativeMatrixLayoutRowMajor
#define COLMAJOR gl_CooperativeMatrixLayoutColumnMajor

// Q and K: int8 (16 per uvec4, 8 per uvec2: the uvec2 view serves SK = 8, whose fragments
// start 8 bytes apart) or fp16 (8 per uvec4). V^T fp16, 8 per uvec4.
layout(std430, binding = 0) readonly buffer QB { uvec4 q4[]; };    // [b*h, nq_pad, D]
layout(std430, binding = 0) readonly buffer QB2 { uvec2 q2[]; };   // the same buffer
layout(std430, binding = 1) readonly buffer KB { uvec4 k4[]; };    // [b*hkv, nk_pad, D]
layout(std430, binding = 2) readonly buffer VB { uvec4 v4[]; };    // [b*hkv, D, nk_pad] (V^T)
layout(std430, binding = 3) readonly buffer QS { float qscale[]; }; // [b*h, nq_pad, NB]
layout(std430, binding = 4) readonly buffer KS { float kscale[]; }; // [b*hkv, nk_pad, NB]
layout(std430, binding = 5) readonly buffer VS { float vscale[]; }; // [b*hkv, D]
layout(std430, binding = 6) writeonly buffer OB { float o[]; };
layout(std430, binding = 7) writeonly buffer LB { float lse[]; };

layout(push_constant) uniform P { // quant_p, pnq, kind arrive as MODE
    uint h, hkv, nq, nk, nq_pad, nk_pad, o_offset, causal, quant_p, pnq, kind, t;
    float scale;
    uint lse_offset, bias_offset, bias_sb, bias_sh, mask_offset, mask_sb, mask_sh;
} pc;
#include "extras.glsl"

shared uvec4 sKV[U2 ? 1 : KVN];       // K tile [key][KSTR], then V^T tile [d][VSTR]
#ifdef S_INT8
shared uvec2 sKV2[U2 ? 2 * KVN : 1];  // the same for SK = 8, in uvec2 units
#endif
shared vec4 sKs[NB * (BC / 4)];       // the tile's K scales, [block][key]
// per subgroup w: region [w * RSZ ...]: S buffer (fp32 bits, row stride SST; also the wide
// path's scale matrices, the alpha block and the final O passes), then the P buffer
// (P^ * 2^12 as fp16 pairs, row stride PST)
shared uvec4 sR[WARPS * RSZ];
shared float sBM[WARPS * NI];         // block maxima of S, [w][blk][row]
shared float sBS[WARPS * NI];         // block row sums, [w][blk][row]
shared float sM[WARPS * SM];          // running maximum, log2 units
shared float sL[WARPS * SM];          // running row sum, units of 2^-12
shared float sAl[WARPS * SM];         // this tile's alpha; at the end 1 / l

// MXFP4(p) * P_SCALE (mxfp4.glsl's P^ rounding; 2^12 keeps P^ exact in fp16)
float quantize_p(float p, uint exb, float sat) { return P_SCALE == 1.0 ? mx_quantize_p(p, exb, sat) : mx_quantize_p_scaled(p, exb, sat, 22u, 12u); }

// the S factor of query row qrow (narrow int8 / fp16): |qscale| * scale * log2(e) (int8: / 4)
float q_factor(uint qrow)
{
#ifdef S_INT8
    return abs(qscale[qrow * uint(NB)]) * (pc.scale * 0.25 * LOG2E); // 1/4: each int8 is twice its E2M1 value
#else
    return qscale[qrow] * (pc.scale * LOG2E);
#endif
}

// Item (row r, block blk) of the S buffer at a0 (uvec4 index): scaled to log2 units and masked
// (keys past `last`) into p, its maximum into bm. f = 1 on the wide path (already scaled).
// With a bias or mask, (b, hh, row) names the item's row (row < nq: a padding row has none).
void load_item(uint a0, uint blk, int jb, int last, float qs, bool wide, uint b, uint hh, uint row, out float p[32], out float bm)
{
    uint brow = 0u, mrow = 0u;
    if (HAS_BIAS) brow = bias_row(b, hh, row);
    if (HAS_MASK) mrow = mask_row(b, hh, row);
    const int side_last = row < pc.nq ? last : -1; // the keys whose bias and mask exist
    const float NEG_INF = uintBitsToFloat(0xff800000u);
    bm = NEG_INF;
    [[unroll]] for (int e4 = 0; e4 < 8; e4++) {
        const vec4 sv = uintBitsToFloat(sR[a0 + uint(e4)]);
        const vec4 kf = wide ? vec4(1.0) : sKs[blk * 8u + uint(e4)] * qs;
        [[unroll]] for (int i = 0; i < 4; i++) {
            float v = jb + 4 * e4 + i <= last ? sv[i] * kf[i] : NEG_INF;
            if (HAS_SIDE && jb + 4 * e4 + i <= side_last) v = side_score(v, brow, mrow, uint(jb + 4 * e4 + i), LOG2E);
            p[4 * e4 + i] = v;
            bm = max(bm, v);
        }
    }
}

// This invocation's share of a tile's K (and K scales) and of its V^T.
void fetch_k(uint j0, uint tid, uint kbase, out uvec4 kn[PT_K], out vec4 ksn[PT_S])
{
    [[unroll]] for (uint u = 0u; u < PT_K; u++) {
        const uint idx = tid + u * THREADS;
        if (K_N % THREADS == 0u || idx < K_N) kn[u] = k4[(kbase + j0) * uint(KW) + idx]; // contiguous
    }
    [[unroll]] for (uint u = 0u; u < PT_S; u++) {
        const uint idx = tid + u * THREADS; // (block, 4 keys)
        if (KS_N % THREADS == 0u || idx < KS_N) {
            const uint db = idx / uint(BC / 4), key = kbase + j0 + 4u * (idx % uint(BC / 4));
            [[unroll]] for (uint i = 0u; i < 4u; i++) ksn[u][i] = kscale[(key + i) * uint(NB) + db];
        }
    }
}

void fetch_v(uint j0, uint tid, uint kvh, out uvec4 vn[PT_V])
{
    [[unroll]] for (uint u = 0u; u < PT_V; u++) {
        const uint idx = tid + u * THREADS; // (d, 8 keys): BC / 8 uvec4 per d row, coalesced
        if (V_N % THREADS == 0u || idx < V_N)
            vn[u] = v4[(kvh * uint(D) + idx / uint(BC / 8)) * (pc.nk_pad / 8u) + j0 / 8u + idx % uint(BC / 8)];
    }
}

void put_kv(uint at, uvec4 v)
{
#ifdef S_INT8
    if (U2) {
        sKV2[2u * at] = v.xy;
        sKV2[2u * at + 1u] = v.zw;
        return;
    }
#endif
    sKV[at] = v;
}

void main()
{
    const float NEG_INF = uintBitsToFloat(0xff800000u);
    const uint tid = gl_LocalInvocationID.x, w = gl_SubgroupID, lane = gl_SubgroupInvocationID, SG = gl_SubgroupSize;
    const uint hh = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint bh = b * pc.h + hh, kvh = b * pc.hkv + hh / (pc.h / pc.hkv);
    const uint wg0 = gl_WorkGroupID.x * uint(WARPS * SM);
    if (wg0 >= pc.nq) return; // the whole workgroup: only padding rows (uniform, before any barrier)
    const uint i0 = wg0 + w * uint(SM);
    // a subgroup beyond the plan (never with full subgroups) or of padding rows only still
    // copies tiles and meets the barriers, but computes nothing
    const bool act = w < uint(WARPS) && i0 < pc.nq;
    const uint wr = act ? w : 0u;        // keeps the shared indices below in range
    const uint sb = wr * uint(RSZ);      // this subgroup's S buffer (uvec4); its P buffer at sb + SOFF
    const uint rb = wr * uint(SM);       // its row arrays
    const uint bb = wr * uint(NI);       // its item arrays
    const uint kbase = kvh * pc.nk_pad;  // first K row of the kv head
    const int nk = keys_of(b);
    const int shift = causal_shift(nk);

    // Q fragments, resident for the whole kernel
    const uint qe = (bh * pc.nq_pad + (act ? i0 : wg0)) * uint(D); // element (int8 / fp16) index of row i0
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

    // per-row state
    bool wide_row = false;
    if (act) {
        for (uint r = lane; r < uint(SM); r += SG) {
#ifdef S_INT8
            const uint qrow = bh * pc.nq_pad + i0 + r;
            [[unroll]] for (int db = 0; db < NB; db++) wide_row = wide_row || floatBitsToUint(qscale[qrow * uint(NB) + uint(db)]) >> 31 != 0u;
#endif
            sM[rb + r] = NEG_INF;
            sL[rb + r] = 0.0;
        }
    }
#ifdef S_INT8
    const bool wide_q = subgroupAny(wide_row);
#endif
    // one (row, block) item per lane: its values stay in registers between steps 2 and 3
    const bool one = SG >= uint(NI);
    const uint r1 = lane % uint(SM);
    const float qs1 = q_factor(bh * pc.nq_pad + (act ? i0 : wg0) + r1); // the first item's row factor

    // every subgroup helps copy every tile the workgroup's last real row sees
    const int wg_row = min(int(wg0) + WARPS * SM - 1, int(pc.nq) - 1);
    const int wg_last = pc.causal != 0u ? min(nk - 1, wg_row + shift) : nk - 1;
    const int ntiles = wg_last < 0 ? 0 : wg_last / BC + 1;
    const int warp_row = min(int(i0) + SM - 1, int(pc.nq) - 1); // the subgroup's last real row
    const int warp_last = !act ? -1 : pc.causal != 0u ? min(nk - 1, warp_row + shift) : nk - 1;

    uvec4 kn[PT_K], vn[PT_V];
    vec4 ksn[PT_S];
    if (ntiles > 0) fetch_k(0u, tid, kbase, kn, ksn);

    for (int tile = 0; tile < ntiles; tile++) {
        const uint j0 = uint(tile * BC);
        barrier(); // every subgroup is done with the previous V^T tile
        [[unroll]] for (uint u = 0u; u < PT_K; u++) {
            const uint idx = tid + u * THREADS;
            if (K_N % THREADS == 0u || idx < K_N) put_kv(idx / uint(KW) * uint(KSTR) + idx % uint(KW), kn[u]);
        }
        [[unroll]] for (uint u = 0u; u < PT_S; u++) {
            const uint idx = tid + u * THREADS;
            if (KS_N % THREADS == 0u || idx < KS_N) sKs[idx] = ksn[u];
        }
        barrier();
        fetch_v(j0, tid, kvh, vn); // in flight during S and the softmax
        const bool comp = int(j0) <= warp_last; // subgroup-uniform

        [[dont_flatten]] if (comp) {
            // --- 1. S = Q K^T -> the S buffer
            coopmat<float, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator> s[ST];
#ifdef S_INT8
            bool wide_key = false;
            for (uint e = lane; e < KS_N; e += SG) {
                uvec4 wk = floatBitsToUint(sKs[e]) >> 31;
                if (HAS_KEYLEN) // a key beyond the length does not exist
                    wk &= uvec4(lessThan(ivec4(int(j0 + 4u * (e % uint(BC / 4)))) + ivec4(0, 1, 2, 3), ivec4(nk)));
                wide_key = wide_key || any(notEqual(wk, uvec4(0u)));
            }
            const bool wide = wide_q || subgroupAny(wide_key);
            [[dont_flatten]] if (!wide) {
                [[unroll]] for (int kt = 0; kt < ST; kt++) {
                    coopmat<int, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator> si = coopmat<int, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator>(0);
                    [[unroll]] for (int t = 0; t < QT; t++) {
                        coopmat<int8_t, gl_ScopeSubgroup, SK, SN, gl_MatrixUseB> kb;
                        if (U2) coopMatLoad(kb, sKV2, uint(2 * kt * SN * KSTR + t), uint(2 * KSTR), COLMAJOR);
                        else coopMatLoad(kb, sKV, uint(kt * SN * KSTR + t * SK / 16), uint(KSTR), COLMAJOR);
                        si = coopMatMulAdd(qa[t], kb, si);
                    }
                    s[kt] = coopmat<float, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator>(si); // exact: |si| < 2^24
                }
            } else { // some row or key is wide: each block's product times its scale products, in fp32
                [[unroll]] for (int kt = 0; kt < ST; kt++) s[kt] = coopmat<float, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator>(0.0);
                [[unroll]] for (int db = 0; db < NB; db++) {
                    subgroupMemoryBarrierShared();
                    subgroupBarrier(); // the previous block's scale matrices are loaded
                    // [r][c] = |kscale(key c, db)| * |qscale(row r, db)| * scale * log2(e) / 4
                    for (uint e = lane; e < uint(SM * (BC / 4)); e += SG) {
                        const uint r = e / uint(BC / 4), c4 = e % uint(BC / 4);
                        const float qf = abs(qscale[(bh * pc.nq_pad + i0 + r) * uint(NB) + uint(db)]) * (pc.scale * 0.25 * LOG2E);
                        sR[sb + r * uint(SST) + c4] = floatBitsToUint(abs(sKs[uint(db * (BC / 4)) + c4]) * qf);
                    }
                    subgroupMemoryBarrierShared();
                    subgroupBarrier();
                    [[unroll]] for (int kt = 0; kt < ST; kt++) {
                        coopmat<int, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator> si = coopmat<int, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator>(0);
                        [[unroll]] for (int u = 0; u < SUB; u++) {
                            const int t = db * SUB + u;
                            coopmat<int8_t, gl_ScopeSubgroup, SK, SN, gl_MatrixUseB> kb;
                            if (U2) coopMatLoad(kb, sKV2, uint(2 * kt * SN * KSTR + t), uint(2 * KSTR), COLMAJOR);
                            else coopMatLoad(kb, sKV, uint(kt * SN * KSTR + t * SK / 16), uint(KSTR), COLMAJOR);
                            si = coopMatMulAdd(qa[t], kb, si);
                        }
                        coopmat<float, gl_ScopeSubgroup, SM, SN, gl_MatrixUseAccumulator> sc;
                        coopMatLoad(sc, sR, sb + uint(kt * SN / 4), uint(SST), ROWMAJOR);
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
                [[unroll]] for (int t = 0; t < QT; t++) {
                    coopmat<float16_t, gl_ScopeSubgroup, SK, SN, gl_MatrixUseB> kb;
                    coopMatLoad(kb, sKV, uint(kt * SN * KSTR + t * SK / 8), uint(KSTR), COLMAJOR);
                    s[kt] = coopMatMulAdd(qa[t], kb, s[kt]);
                }
            }
#endif
            [[unroll]] for (int kt = 0; kt < ST; kt++) coopMatStore(s[kt], sR, sb + uint(kt * SN / 4), uint(SST), ROWMAJOR);
            subgroupMemoryBarrierShared();
            subgroupBarrier();

            // --- 2. items (row r = it % SM, block blk = it / SM): scaled, masked, block maxima;
            // block 0 folds in the row's running maximum (only it reads sM here)
            float p[32];
            for (uint it = lane; it < uint(NI); it += SG) {
                const uint r = it % uint(SM), blk = it / uint(SM), row = i0 + r;
                const int last = pc.causal != 0u ? min(int(row) + shift, nk - 1) : nk - 1;
                const float qs = one ? qs1 : q_factor(bh * pc.nq_pad + row);
                float bm;
                load_item(sb + r * uint(SST) + blk * 8u, blk, int(j0 + blk * 32u), last, qs, wide, b, hh, row, p, bm);
                if (blk == 0u) bm = max(bm, sM[rb + r]);
                sBM[bb + it] = bm;
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();

            // --- 3. items: P~, P^ (* 2^12) -> the P buffer, block row sums
            for (uint it = lane; it < uint(NI); it += SG) {
                const uint r = it % uint(SM), blk = it / uint(SM);
                if (!one) { // recompute the item's values from the unchanged S buffer
                    const uint row = i0 + r;
                    const int last = pc.causal != 0u ? min(int(row) + shift, nk - 1) : nk - 1;
                    float bm;
                    load_item(sb + r * uint(SST) + blk * 8u, blk, int(j0 + blk * 32u), last, q_factor(bh * pc.nq_pad + row), wide, b, hh, row, p,
                              bm);
                }
                float mn = NEG_INF;
                [[unroll]] for (int k = 0; k < NBLK; k++) mn = max(mn, sBM[bb + uint(k * SM) + r]);
                const float mz = mn == NEG_INF ? 0.0 : mn; // a row with no key yet: all P = 0
                uint maxbits = 0u;
                float rs = 0.0;
                [[unroll]] for (int e = 0; e < 32; e++) {
                    p[e] = exp2(p[e] - mz); // masked: exp2(-inf) = 0
                    maxbits = max(maxbits, floatBitsToUint(p[e]));
                    if (!HAT_SUM) rs += p[e];
                }
                if (QUANT_P) {
                    const uint exb = mx_p_exponent_bits(maxbits, mx_p_carry(KIND, pc.t), KIND);
                    const float sat = uintBitsToFloat(exb + 0x01400000u); // 6 * 2^ex
                    [[unroll]] for (int e = 0; e < 32; e++) {
                        p[e] = quantize_p(p[e], exb, sat);
                        if (HAT_SUM) rs += p[e];
                    }
                } else {
                    [[unroll]] for (int e = 0; e < 32; e++) p[e] *= P_SCALE;
                }
                if (!HAT_SUM) rs *= P_SCALE;
                const uint pa0 = sb + uint(SOFF) + r * uint(PST) + blk * 4u;
                [[unroll]] for (int c = 0; c < 4; c++)
                    sR[pa0 + uint(c)] = uvec4(packFloat2x16(f16vec2(p[8 * c], p[8 * c + 1])), packFloat2x16(f16vec2(p[8 * c + 2], p[8 * c + 3])),
                                              packFloat2x16(f16vec2(p[8 * c + 4], p[8 * c + 5])), packFloat2x16(f16vec2(p[8 * c + 6], p[8 * c + 7])));
                sBS[bb + it] = rs;
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();

            // --- 4. rows: m, alpha, l; the alpha block (rows of the S buffer, now free) when some max moved
            bool moved = false;
            for (uint r = lane; r < uint(SM); r += SG) {
                float mn = NEG_INF, rsum = 0.0;
                [[unroll]] for (int k = 0; k < NBLK; k++) {
                    mn = max(mn, sBM[bb + uint(k * SM) + r]);
                    rsum += sBS[bb + uint(k * SM) + r];
                }
                const float mo = sM[rb + r];
                // mo = -inf: l and the row of O are 0, so alpha = 1 is as good as the reference's 0
                const float alpha = mo == NEG_INF ? 1.0 : exp2(mo - mn);
                if (mn != NEG_INF) sL[rb + r] = alpha * sL[rb + r] + rsum;
                sM[rb + r] = mn;
                sAl[rb + r] = alpha;
                moved = moved || alpha != 1.0;
            }
            [[dont_flatten]] if (subgroupAny(moved)) {
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                for (uint e = lane; e < uint(SM * (PN / 4)); e += SG) {
                    const uint r = e / uint(PN / 4), c4 = e % uint(PN / 4);
                    sR[sb + r * uint(SST) + c4] = floatBitsToUint(vec4(sAl[rb + r]));
                }
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                coopmat<float, gl_ScopeSubgroup, SM, PN, gl_MatrixUseAccumulator> am;
                coopMatLoad(am, sR, sb, uint(SST), ROWMAJOR);
                [[unroll]] for (int dt = 0; dt < OT; dt++) oacc[dt] = oacc[dt] * am;
            }
        }

        barrier(); // every subgroup is done with the K tile
        [[unroll]] for (uint u = 0u; u < PT_V; u++) {
            const uint idx = tid + u * THREADS;
            if (V_N % THREADS == 0u || idx < V_N) put_kv(idx / uint(BC / 8) * uint(VSTR) + idx % uint(BC / 8), vn[u]);
        }
        barrier();
        if (tile + 1 < ntiles) fetch_k(j0 + uint(BC), tid, kbase, kn, ksn); // in flight during P V

        // --- 5. O += P^ V
        [[dont_flatten]] if (comp) {
            [[unroll]] for (int kt = 0; kt < VT; kt++) {
                coopmat<float16_t, gl_ScopeSubgroup, SM, PK, gl_MatrixUseA> pa;
                coopMatLoad(pa, sR, sb + uint(SOFF + kt * PK / 8), uint(PST), ROWMAJOR);
                [[unroll]] for (int dt = 0; dt < OT; dt++) {
                    coopmat<float16_t, gl_ScopeSubgroup, PK, PN, gl_MatrixUseB> vb;
#ifdef S_INT8
                    if (U2) coopMatLoad(vb, sKV2, uint(2 * (dt * PN * VSTR) + kt * PK / 4), uint(2 * VSTR), COLMAJOR);
                    else
#endif
                    coopMatLoad(vb, sKV, uint(dt * PN * VSTR + kt * PK / 8), uint(VSTR), COLMAJOR);
                    oacc[dt] = coopMatMulAdd(pa, vb, oacc[dt]);
                }
            }
        }
    }

    // O = acc * vscale / l (acc and l both in units of 2^-12); lse
    if (!act) return; // no barriers follow
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint r = lane; r < uint(SM); r += SG) {
        const float m = sM[rb + r], l = sL[rb + r];
        sAl[rb + r] = m == NEG_INF ? 0.0 : 1.0 / l;
        const uint row = i0 + r;
        if (row < pc.nq) lse[pc.lse_offset + bh * pc.nq + row] = m == NEG_INF ? NEG_INF : m * (1.0 / LOG2E) + log(l * (1.0 / P_SCALE));
    }
    [[unroll]] for (int d0 = 0; d0 < OT; d0 += CH) {
        subgroupMemoryBarrierShared();
        subgroupBarrier(); // sAl is written; the previous pass's reads of the S buffer are done
        [[unroll]] for (int u = 0; u < CH; u++)
            if (d0 + u < OT) coopMatStore(oacc[d0 + u], sR, sb + uint(u * PN / 4), uint(SST), ROWMAJOR);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (uint e = lane; e < uint(SM * BC); e += SG) {
            const uint r = e / uint(BC), cc = e % uint(BC), c = uint(d0 * PN) + cc, row = i0 + r;
            if (row < pc.nq && c < uint(D))
                o[pc.o_offset + (bh * pc.nq + row) * uint(D) + c] = uintBitsToFloat(sR[sb + r * uint(SST) + cc / 4u][cc % 4u]) * vscale[kvh * uint(D) + c] * sAl[rb + r];
        }
    }
}
