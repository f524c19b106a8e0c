#version 450
// Attention on VK_KHR_cooperative_matrix with the online softmax in registers
// (FlashAttention-2 style), for any driver whose 16-row fragments have the quad layout
// of tensor-core MMAs (measured per device by coopmat_layout_khr.comp): lane L (g = L / 4,
// t = L % 4) holds rows g and g + 8 and columns 2t, 2t + 1 (and 2t + 8, 2t + 9 in a
// 16-column matrix). The matrix shapes are the device's enumerated configurations,
// passed as specialization constants:
//   S = Q K^T: 16 x SN x SK (SN 16 or 8; int8 SK 32 or 16, fp16 SK 16 or 8)
//   O += P V:  16 x PN x 16 on fp16 (PN 16 or 8)
// Inputs are the exact MXFP4 values of prep_qk.comp / prep_v.comp, so every product is
// exact; only fp32 summation order differs from the reference.
//
// The element order within a lane arrives as specialization constants, 3 bits per element
// (bit 0 column + 1, bit 1 row + 8, bit 2 column + 8): S_MAP for the 16 x SN accumulator,
// O_MAP for the 16 x PN accumulator, A_MAP for the fp16 16 x 16 A matrix, so P moves from
// the S accumulators into A matrices without leaving registers.
//
// Workgroup: WARPS subgroups of 32, RB blocks of 16 query rows each. Per key tile (BC = 64)
// the workgroup copies K (keys x D) and V^T (D x keys) into shared memory with 16-byte loads,
// fetched into registers one tile ahead so the loads overlap the previous tile's math. Each
// K and V fragment a subgroup reads from shared memory serves its RB row blocks: those reads,
// not the matrix units, bound the product phases at one block per subgroup (docs/speed-log.md).
// Each subgroup computes S = Q K^T, scales it to log2 units and masks it, takes row maxima
// with quad shuffles, P~ = 2^(S - m), P^ = MXFP4(P~) per 32-key block, rescales O by alpha
// and accumulates O += (2^12 P^) V. The recipe's P quantization, PNQ and rounding rule are
// a specialization constant (MODE), so each pipeline carries only its own softmax.
//
// PIPE (constant 9): the products of the next tile's S run inside this tile's softmax and
// P V. The driver schedules within a basic block, and the barrier per tile starts every
// subgroup on the same phase, so without it the matrix units idle through the softmax and
// the arithmetic units through the products. With it sK holds tile t + 1 while sV holds tile
// t (one buffer each, as before), K is fetched two tiles ahead and V one, and S of tile t + 1
// lives beside P of tile t (32 more registers at one row block).
//
// S_INT8: S from int8 products on prep_qk.comp's OUT_I8 form (2 x E2M1), one 32-wide MXFP4
// block per 32 / SK chained products, exact in int32. A subgroup whose 16 query rows and
// the tile's keys are all narrow (prep_qk.comp) sums all of D in one int32 chain; otherwise
// each block's product is scaled by its two block scales in fp32.
//
// PV_INT8 (with S_INT8): P V on int8 products too, 16 x 16 x 32 per 32-key block. P^ of a
// block is 2 x E2M1 codes times 2^(e_p - 1) per row; V^T (prep_v.comp ALIGN_V) is int8 codes
// already shifted to the column's unit 2^(E_c - 4) (E_c its largest block exponent), blocks
// more than 3 binades below E_c kept unshifted with a factor 2^(e - E_c + 3) and their tile
// flagged. Where every row's two P blocks of the tile lie within 3 binades (and the tile's V
// is unflagged), P codes shifted to the row's tile unit 2^(r - 1) (r = the larger block
// exponent - 3, codes <= 96) make the tile one int32 chain of two products per 16 columns,
// added to O in fp32 times 2^(r - 1); otherwise each block's product is added with its own
// scales. Every product is exact in int32 (|sum| <= 64 * 96 * 96 < 2^22), so only fp32
// summation order differs from the reference. No int <-> float conversion (quarter rate on
// NVIDIA) runs per element: the sums start from the bits of 1.5 * 2^23, and each code is
// the low byte of fma(P^ scaled, 2^(1 - unit), 1.5 * 2^23). The codes reach the A matrices
// through a 16 x 64-byte tile per subgroup in shared memory (lane pairs join their key pairs
// into words with one shuffle), so no int8 fragment layout is assumed.
//
// Extras (extras.glsl): a batch's key length L_b replaces nk in every row's last key and in
// the tiles walked; keys at or after L_b never make a tile wide, so the result equals a call
// with Nk = L_b bit for bit. The bias (times log2(e)) and the mask act on every score a row
// may see, before the causal and length masking and the row maxima.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_control_flow_attributes : require
#ifdef S_INT8
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#endif
#if defined(PV_INT8) && !defined(S_INT8)
#error PV_INT8 needs S_INT8
#endif
#include "mxfp4.glsl"

layout(constant_id = 0) const int D = 128;
layout(constant_id = 1) const int BC = 64; // two 32-key P blocks per tile
layout(constant_id = 2) const int WARPS = 4;
layout(local_size_x_id = 3) in;
layout(constant_id = 4) const int MODE = 3; // bit 0: quantize P, bit 1: PNQ (l sums P^), bit 2: the ceiling rule, bit 3: P and V in MXFP8
layout(constant_id = 5) const int ROWS = 16; // query rows per subgroup, in RB blocks of 16
layout(constant_id = 6) const int SN = 16;
#ifdef S_INT8
layout(constant_id = 7) const int SK = 32;
#else
layout(constant_id = 7) const int SK = 16;
#endif
layout(constant_id = 8) const int PN = 16;
layout(constant_id = 9) const bool PIPE = false; // the next tile's S inside this tile's softmax (see above)
layout(constant_id = 10) const int S_MAP = 0xFAC688; // codes 0..7 in order
layout(constant_id = 11) const int O_MAP = 0xFAC688;
layout(constant_id = 12) const int A_MAP = 0xFAC688;
const bool QUANT_P = (MODE & 1) != 0;
const bool HAT_SUM = (MODE & 3) == 3;
const uint KIND = uint(MODE >> 2) & 1u;
const bool P_FP8 = (MODE & 8) != 0; // MXFP8 P^ (E4M3, e = floor(log2 M) - 8); V^T arrives as fp16 E4M3 values
const float LOG2E = 1.4426950408889634;
const int NE_S = SN / 2;     // S accumulator elements per lane
const int NE_O = PN / 2;     // O accumulator elements per lane
const int KT = BC / SN;      // S tiles per key tile
const int TPB = 32 / SN;     // S tiles per 32-key P block
const int DT = D / PN;       // O accumulators
const int THREADS = WARPS * 32;
const int RB = ROWS / 16;
#ifdef S_INT8
const int NB = D / 32;       // Q/K blocks per row, one scale each
const int KW = D / 16;       // uvec4 per K row (16 int8)
const int CW = SK / 16;      // uvec4 per Q/K chunk of SK values
const int CPB = 32 / SK;     // chunks per MXFP4 block
#else
const int NB = 1;            // one scale per Q/K row
const int KW = D / 8;        // uvec4 per K row (8 halves)
const int CW = SK / 8;
#endif
const int NCH = D / SK;      // Q chunks (A matrices)
const int KSTR = KW + 1;     // sK row stride in uvec4; the +1 spreads fragment rows over banks
#ifdef PV_INT8
const int VPR = BC / 16;     // uvec4 per V^T tile row (int8)
#else
const int VPR = BC / 8;      // (fp16)
#endif
const int VSTR = VPR + 1;    // sV row stride in uvec4
const int PER_THREAD = BC * D / (VPR == BC / 16 ? 16 : 8) / THREADS; // uvec4 of V^T each invocation copies per tile
const int PER_THREAD_K = BC * KW / THREADS;    // and of K
const int PER_THREAD_S = (BC * NB + THREADS - 1) / THREADS; // and of the K scales
#ifdef PV_INT8
const float P_SCALE = 1.0;    // P^ leaves as int8 codes
#else
const float P_SCALE = 4096.0; // P^ <= 1: 2^12 keeps blocks down to 2^-36 exact in fp16
#endif
// PNQ on the fp16 P V path (E2M1 or E4M3 P^): the row sums l adds come from the matrix units,
// rsum = P^ ones (16 x PN, every column the row's sum of the tile), instead of one FADD per
// score and a quad sum at the end; l is then the whole row's sum in each lane of the quad.
#ifdef PV_INT8
const bool MMA_SUM = false;
#else
const bool MMA_SUM = HAT_SUM;
#endif

#ifdef S_INT8
#define QK_T int8_t
#define QK_ACC int32_t
#else
#define QK_T float16_t
#define QK_ACC float
#endif
#define SACC coopmat<QK_ACC, gl_ScopeSubgroup, 16, SN, gl_MatrixUseAccumulator>
#define SACCF coopmat<float, gl_ScopeSubgroup, 16, SN, gl_MatrixUseAccumulator>
#define QMAT coopmat<QK_T, gl_ScopeSubgroup, 16, SK, gl_MatrixUseA>
#define KMAT coopmat<QK_T, gl_ScopeSubgroup, SK, SN, gl_MatrixUseB>
#define PMAT coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define VMAT coopmat<float16_t, gl_ScopeSubgroup, 16, PN, gl_MatrixUseB>
#define OACC coopmat<float, gl_ScopeSubgroup, 16, PN, gl_MatrixUseAccumulator>
#define PMAT8 coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA>
#define VMAT8 coopmat<int8_t, gl_ScopeSubgroup, 32, PN, gl_MatrixUseB>
#define IACC coopmat<int32_t, gl_ScopeSubgroup, 16, PN, gl_MatrixUseAccumulator>

layout(std430, binding = 0) readonly buffer QB { uvec4 q4[]; };    // [b*h, nq_pad, D] fp16 or int8
layout(std430, binding = 1) readonly buffer KB { uvec4 k4[]; };    // [b*hkv, nk_pad, D] fp16 or int8
layout(std430, binding = 2) readonly buffer VB { uvec4 v4[]; };    // [b*hkv, D, nk_pad] fp16 or int8 (V^T)
layout(std430, binding = 3) readonly buffer QS { float qscale[]; }; // [b*h, nq_pad, NB]
layout(std430, binding = 4) readonly buffer KS { float kscale[]; }; // [b*hkv, nk_pad, NB]
layout(std430, binding = 5) readonly buffer VS { float vscale[]; }; // [b*hkv, D]; PV_INT8: factors [b*hkv, D, nk_pad / 32]
#ifdef PV_INT8
// [b*hkv, D] each column's largest V block exponent + 128 (0: no block), then
// [b*hkv, nk_pad / BC] nonzero where a tile has a V block stored with a factor
layout(std430, binding = 11) readonly buffer VX { uint vcol[]; };
#endif
layout(std430, binding = 6) writeonly buffer OB { float o[]; };
layout(std430, binding = 7) writeonly buffer LB { float lse[]; };

layout(push_constant) uniform P { // quant_p, pnq, kind arrive as MODE instead
    uint h, hkv, nq, nk, nq_pad, nk_pad, o_offset, causal, quant_p, pnq, kind, t;
    float scale;
    uint lse_offset, bias_offset, bias_sb, bias_sh, mask_offset, mask_sb, mask_sh;
} pc;
#include "extras.glsl"
#ifdef S_INT8
// The int8 kernels leave Q's row scale out of S on narrow tiles (S holds dot * ks) and apply it
// in the exp2's fma, fma(S, qs, -m): one multiply less per score. The row maxima are scaled
// on their own, as rounded products, so a row's maximum gives exactly exp2(0) = 1 for its
// block's exponent, as the reference's does; the other scores move by at most their rounding
// (an ulp of S, as an exp may err). Bias and mask act on scaled scores, so not with them.
const bool FOLD = !HAS_SIDE;
#else
const bool FOLD = false;
#endif

shared uvec4 sK[BC * KSTR]; // K tile, row-major: sK[key][d]
shared uvec4 sV[D * VSTR];  // V^T tile: sV[d][key]
shared float sKs[BC * NB];  // the tile's K scales
#ifdef PV_INT8
const int PSTR = BC / 4 + 4; // sP row stride in words: 8-row phases of 16-byte loads hit distinct banks
shared uint sP[WARPS * ROWS * PSTR]; // per subgroup: its rows' P^ codes of the tile, 4 per word
#endif

int s_code(int i) { return (S_MAP >> (3 * i)) & 7; }
int o_code(int i) { return (O_MAP >> (3 * i)) & 7; }
int a_code(int i) { return (A_MAP >> (3 * i)) & 7; }

bool code_low(int c) { return (c & 2) != 0; }            // row g + 8, not g
int code_col(int c) { return 8 * (c >> 2) + (c & 1); }   // column offset from 2t
// The S element (within its tile) at A code c's position: with SN = 8 the tile is picked by
// bit 2 (column + 8) and the element by the other two bits.
int s_index(int c)
{
    const int want = SN == 16 ? c : (c & 3);
    int j = 0;
    [[unroll]] for (int i = 0; i < NE_S; i++) if (s_code(i) == want) j = i;
    return j;
}

#ifdef PV_INT8
const int NO_BLOCK = -1000;
// A row's P unit exponent r for a tile of two blocks (bc = 64; the larger block exponent - 3)
// and whether both fit the int8 chain: within 3 binades of the larger, which lies above 2^-60
// (codes times 2^(1 - r) stay normal).
bool tile_unit(int e0, int e1, out int r)
{
    const int hi = max(e0, e1), lo = e0 == NO_BLOCK ? e1 : e1 == NO_BLOCK ? e0 : min(e0, e1);
    r = hi == NO_BLOCK ? -5 : hi - 3;
    return hi == NO_BLOCK || (hi - lo <= 3 && hi >= -60);
}
int block_exp(int e) { return e == NO_BLOCK ? 0 : e; } // an all-zero block: any exponent
// A P V sum started from the bits of 1.5 * 2^23, as the float of the sum: |sum| <= 64 * 96 * 96
// < 2^22 stays inside the mantissa, so the subtraction is exact and one full-rate FADD
// replaces a quarter-rate I2F
float int_sum(int bits) { precise float f = intBitsToFloat(bits) - 12582912.0; return f; }
#endif

float quad_max(float x) { x = max(x, subgroupShuffleXor(x, 1u)); return max(x, subgroupShuffleXor(x, 2u)); }
float quad_sum(float x) { x += subgroupShuffleXor(x, 1u); return x + subgroupShuffleXor(x, 2u); }

// 2^e as a float for any e <= 127 (subnormal below -126, 0 below -149), from bits: no arithmetic
float pow2_any(int e) { return uintBitsToFloat(mx_pow2_bits(e)); }

// MXFP4(p) * P_SCALE (mxfp4.glsl's P^ rounding; 2^12 keeps P^ exact in fp16)
float quantize_p(float p, uint exb, float sat) { return P_SCALE == 1.0 ? mx_quantize_p(p, exb, sat) : mx_quantize_p_scaled(p, exb, sat, 22u, 12u); }

// E4M3(p / 2^e) 2^e * 2^12 for p in [0, 1], with exb = the bits of 2^(e - 6) (E4M3's smallest
// normal binade: below it the step stays 2^(e - 9)) and sat = 448 * 2^e: mx_quantize_p's
// rounding with three mantissa bits (c * 2^20 has the E4M3 step as its unit in the last
// place). E4M3 values are exact in fp16 (times 2^12 down to blocks of about 2^-20).
float quantize_p8(float p, uint exb, float sat) { return mx_quantize_p_scaled(p, exb, sat, 20u, P_SCALE == 1.0 ? 0u : 12u); }

// This invocation's share of a key tile: PER_THREAD_K uvec4 of K rows and PER_THREAD_S of the
// tile's BC * NB K scales (the tile starting at key j0), PER_THREAD uvec4 of V^T rows. k_at,
// v_at: its first pieces in tile 0 (THREADS is a multiple of a V^T row's uvec4 count).
void fetch_k(uint j0, uint tid, uint k_at, uint ks_at, out uvec4 k_next[PER_THREAD_K], out float ks_next[PER_THREAD_S])
{
    [[unroll]] for (int u = 0; u < PER_THREAD_K; u++) k_next[u] = k4[k_at + j0 * uint(KW) + uint(u * THREADS)];
    [[unroll]] for (int u = 0; u < PER_THREAD_S; u++) {
        const uint idx = tid + uint(u * THREADS);
        ks_next[u] = idx < uint(BC * NB) ? kscale[ks_at + j0 * uint(NB) + uint(u * THREADS)] : 0.0;
    }
}
void fetch_v(uint j0, uint v_at, out uvec4 v_next[PER_THREAD])
{
    [[unroll]] for (int u = 0; u < PER_THREAD; u++) v_next[u] = v4[v_at + j0 / uint(BC / VPR) + uint(u * THREADS / VPR) * (pc.nk_pad / uint(BC / VPR))];
}
void stage_k(uint tid, uvec4 k_next[PER_THREAD_K], float ks_next[PER_THREAD_S])
{
    [[unroll]] for (int u = 0; u < PER_THREAD_K; u++) {
        const uint idx = tid + uint(u * THREADS);
        sK[idx / uint(KW) * uint(KSTR) + idx % uint(KW)] = k_next[u];
    }
    [[unroll]] for (int u = 0; u < PER_THREAD_S; u++) {
        const uint idx = tid + uint(u * THREADS);
        if (idx < uint(BC * NB)) sKs[idx] = ks_next[u];
    }
}
void stage_v(uint tid, uvec4 v_next[PER_THREAD])
{
    [[unroll]] for (int u = 0; u < PER_THREAD; u++) {
        const uint idx = tid + uint(u * THREADS);
        sV[idx / uint(VPR) * uint(VSTR) + idx % uint(VPR)] = v_next[u];
    }
}

// The subgroup's Q fragments and row scales (set once in main) and the S that scores_main and
// scores_wide compute: invocation-private globals, as functions cannot take arrays sized by
// specialization constants
QMAT qa[RB * NCH];
float qs_hi[RB], qs_lo[RB];
#ifdef S_INT8
float bq_hi[RB * NB], bq_lo[RB * NB]; // 1/4: each int8 value is twice its E2M1 value
#endif
SACCF s_new[RB * KT];
OACC oacc[RB * DT];         // O, in units of 2^-12
PMAT pa_v[RB * (BC / 16)];  // P^ of the tile as fp16 A matrices, all converted before its P V

// S_INT8: whether the key tile in sK (starting at key j0) takes the one-chain form: its K rows
// and this subgroup's Q rows (wide_q) all narrow; a key beyond the length does not count.
bool tile_narrow(uint j0, int nk, uint lane, bool wide_q)
{
#ifdef S_INT8
    bool wide_k = false;
    [[unroll]] for (int u = 0; u < BC / 32; u++)
        wide_k = wide_k || (floatBitsToUint(sKs[(lane + uint(32 * u)) * uint(NB)]) >> 31 != 0u && (!HAS_KEYLEN || int(j0 + lane) + 32 * u < nk));
    return !(wide_q || subgroupAny(wide_k));
#else
    return false;
#endif
}

// S of the key tile in sK, scaled (log2 units), each K fragment serving every row block: on
// int8 S the one-chain form, right for narrow tiles only (tile_narrow; scores_wide otherwise).
// The chain starts from the bits of 1.5 * 2^23 (0x4B400000), so each element ends as the bits
// of the float 12582912 + dot: narrow codes are at most 96 and D <= 128 (vk_select.c), so
// |dot| <= 128 * 96 * 96 < 2^21 and 0x400000 + dot stays inside the mantissa field. 12582912 +
// dot and 12582912 lie in one binade (ulp 1), so the subtraction is exact (Sterbenz) and gives
// float(dot), the value the int -> float conversion gave; the scaling below is then the
// conversion's expression, operand for operand: float(dot) * (sKs * qs), or under FOLD
// float(dot) * sKs with qs left for the exp2's fma (signed zeros included: dot = 0 gives +0
// either way). One full-rate FADD replaces the quarter-rate I2F; precise keeps the compiler
// from distributing the multiply.
void scores_main()
{
    const uint t4 = gl_SubgroupInvocationID & 3u;
    [[unroll]] for (int kt = 0; kt < KT; kt++) {
#ifdef S_INT8
        SACC si[RB];
        [[unroll]] for (int rb = 0; rb < RB; rb++) si[rb] = SACC(0x4B400000);
        [[unroll]] for (int c = 0; c < NCH; c++) {
            KMAT kb;
            coopMatLoad(kb, sK, uint(kt * SN * KSTR + c * CW), uint(KSTR), gl_CooperativeMatrixLayoutColumnMajor);
            [[unroll]] for (int rb = 0; rb < RB; rb++) si[rb] = coopMatMulAdd(qa[rb * NCH + c], kb, si[rb]);
        }
        [[unroll]] for (int i = 0; i < NE_S; i++) {
            const float ks = sKs[(kt * SN + code_col(s_code(i)) + int(2u * t4)) * NB];
            // FOLD: dot * ks as one fma, (12582912 + dot) ks - 12582912 ks: ks is a power of two
            // (prep_qk_subgroup.comp), so both products are exact and the fma rounds the
            // exact dot * ks once, as the multiply does
            const float nks = -12582912.0 * ks;
            [[unroll]] for (int rb = 0; rb < RB; rb++) {
                precise float dot = intBitsToFloat(si[rb][i]) - 12582912.0;
                s_new[rb * KT + kt][i] = FOLD ? fma(intBitsToFloat(si[rb][i]), ks, nks) : dot * (ks * (code_low(s_code(i)) ? qs_lo[rb] : qs_hi[rb]));
            }
        }
#else
        [[unroll]] for (int rb = 0; rb < RB; rb++) s_new[rb * KT + kt] = SACCF(0.0);
        [[unroll]] for (int c = 0; c < NCH; c++) {
            KMAT kb;
            coopMatLoad(kb, sK, uint(kt * SN * KSTR + c * CW), uint(KSTR), gl_CooperativeMatrixLayoutColumnMajor);
            [[unroll]] for (int rb = 0; rb < RB; rb++) s_new[rb * KT + kt] = coopMatMulAdd(qa[rb * NCH + c], kb, s_new[rb * KT + kt]);
        }
        [[unroll]] for (int rb = 0; rb < RB; rb++)
            [[unroll]] for (int i = 0; i < NE_S; i++)
                s_new[rb * KT + kt][i] *= sKs[kt * SN + code_col(s_code(i)) + int(2u * t4)] * (code_low(s_code(i)) ? qs_lo[rb] : qs_hi[rb]);
#endif
    }
}

#ifdef S_INT8
// S of a wide key tile in sK: each block's product with its own scales.
void scores_wide()
{
    const uint t4 = gl_SubgroupInvocationID & 3u;
    [[unroll]] for (int kt = 0; kt < KT; kt++) {
        [[unroll]] for (int rb = 0; rb < RB; rb++) s_new[rb * KT + kt] = SACCF(0.0);
        [[unroll]] for (int db = 0; db < NB; db++) {
            SACC si[RB];
            [[unroll]] for (int rb = 0; rb < RB; rb++) si[rb] = SACC(0);
            [[unroll]] for (int cc = 0; cc < CPB; cc++) {
                KMAT kb;
                coopMatLoad(kb, sK, uint(kt * SN * KSTR + (db * CPB + cc) * CW), uint(KSTR), gl_CooperativeMatrixLayoutColumnMajor);
                [[unroll]] for (int rb = 0; rb < RB; rb++) si[rb] = coopMatMulAdd(qa[rb * NCH + db * CPB + cc], kb, si[rb]);
            }
            [[unroll]] for (int rb = 0; rb < RB; rb++) {
                SACCF sb = SACCF(si[rb]);
                [[unroll]] for (int i = 0; i < NE_S; i++)
                    s_new[rb * KT + kt][i] += sb[i] * abs(sKs[(kt * SN + code_col(s_code(i)) + int(2u * t4)) * NB + db]) *
                                          (code_low(s_code(i)) ? bq_lo[rb * NB + db] : bq_hi[rb * NB + db]);
            }
        }
    }
}
#endif

#ifndef PV_INT8
float psum_hi[RB], psum_lo[RB]; // pv_tile's row sums of P^ (MMA_SUM)

// O += P^ V for pa_v and the V^T tile in sV, each V fragment serving every row block. MMA_SUM:
// the row sums of the tile's P^ (times 2^12) as rsum = P^ ones, summing the fp16 A elements
// the P V products use (P^ exactly for E2M1 blocks down to 2^-36 and E4M3 blocks down to
// about 2^-20; see P_SCALE, quantize_p8), left in psum. One row's tile sum is exact in fp32
// for E2M1 blocks within about 14 binades of each other; otherwise the matrix unit's fp32
// accumulation rounds it, as it does O's. Either way only the order of l's fp32 summation
// differs from the reference.
void pv_tile()
{
    OACC rsum[RB];
    [[unroll]] for (int rb = 0; rb < RB; rb++) rsum[rb] = OACC(0.0);
    VMAT ones = VMAT(float16_t(1.0)); // not const: glslang mishandles const coopmat values
    [[unroll]] for (int kp = 0; kp < BC / 16; kp++) {
        [[unroll]] for (int dt = 0; dt < DT; dt++) {
            VMAT vb;
            coopMatLoad(vb, sV, uint(dt * PN * VSTR + kp * 2), uint(VSTR), gl_CooperativeMatrixLayoutColumnMajor);
            [[unroll]] for (int rb = 0; rb < RB; rb++) oacc[rb * DT + dt] = coopMatMulAdd(pa_v[rb * (BC / 16) + kp], vb, oacc[rb * DT + dt]);
        }
        if (MMA_SUM) [[unroll]] for (int rb = 0; rb < RB; rb++) rsum[rb] = coopMatMulAdd(pa_v[rb * (BC / 16) + kp], ones, rsum[rb]);
    }
    if (MMA_SUM) { // any element of the lane's row g (row g + 8) holds that row's sum
        [[unroll]] for (int rb = 0; rb < RB; rb++) {
            psum_hi[rb] = psum_lo[rb] = 0.0;
            [[unroll]] for (int i = NE_O - 1; i >= 0; i--) {
                if (code_low(o_code(i))) psum_lo[rb] = rsum[rb][i];
                else psum_hi[rb] = rsum[rb][i];
            }
        }
    }
}
#endif

// S of the key tile in sK into s_new, in the form its narrowness takes
void tile_scores(bool narrow)
{
#ifdef S_INT8
    [[dont_flatten]] if (narrow) scores_main();
    else scores_wide();
#else
    scores_main();
#endif
}

void main()
{
    const float NEG_INF = uintBitsToFloat(0xff800000u);
    const uint tid = gl_LocalInvocationID.x, w = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint g = lane >> 2, t4 = lane & 3u;
    const uint hh = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint bh = b * pc.h + hh, kvh = b * pc.hkv + hh / (pc.h / pc.hkv);
    const uint wg0 = gl_WorkGroupID.x * uint(WARPS * ROWS), i0 = wg0 + w * uint(ROWS); // the subgroup's first row
    uint row_hi[RB], row_lo[RB]; // this lane's rows g and g + 8 of each row block
    [[unroll]] for (int rb = 0; rb < RB; rb++) {
        row_hi[rb] = i0 + uint(16 * rb) + g;
        row_lo[rb] = row_hi[rb] + 8u;
    }

    [[unroll]] for (int rb = 0; rb < RB; rb++)
        [[unroll]] for (int c = 0; c < NCH; c++)
            coopMatLoad(qa[rb * NCH + c], q4, (bh * pc.nq_pad + i0 + uint(16 * rb)) * uint(KW) + uint(c * CW), uint(KW),
                        gl_CooperativeMatrixLayoutRowMajor);
    [[unroll]] for (int dt = 0; dt < RB * DT; dt++) oacc[dt] = OACC(0.0);

#ifdef S_INT8
    bool wide_row = false;
    [[unroll]] for (int rb = 0; rb < RB; rb++) {
        [[unroll]] for (int db = 0; db < NB; db++) {
            const float a = qscale[(bh * pc.nq_pad + row_hi[rb]) * uint(NB) + uint(db)];
            const float c = qscale[(bh * pc.nq_pad + row_lo[rb]) * uint(NB) + uint(db)];
            wide_row = wide_row || (floatBitsToUint(a) | floatBitsToUint(c)) >> 31 != 0u;
            bq_hi[rb * NB + db] = abs(a) * (pc.scale * 0.25 * LOG2E);
            bq_lo[rb * NB + db] = abs(c) * (pc.scale * 0.25 * LOG2E);
        }
        qs_hi[rb] = bq_hi[rb * NB];
        qs_lo[rb] = bq_lo[rb * NB];
        // FOLD multiplies by qs inside the exp2's fma, where a row scale of 0 or Inf would turn a
        // masked -inf into NaN: such rows (never met outside tests) take the per-block path
        wide_row = wide_row || !(min(qs_hi[rb], qs_lo[rb]) >= 7.8886090522101181e-31 && max(qs_hi[rb], qs_lo[rb]) <= 1.2676506002282294e30);
    }
    const bool wide_q = subgroupAny(wide_row);
#else
    const bool wide_q = false; // no int8 S: no narrow form
    [[unroll]] for (int rb = 0; rb < RB; rb++) {
        qs_hi[rb] = qscale[bh * pc.nq_pad + row_hi[rb]] * (pc.scale * LOG2E);
        qs_lo[rb] = qscale[bh * pc.nq_pad + row_lo[rb]] * (pc.scale * LOG2E);
    }
#endif
    const int nk = keys_of(b);
    const int shift = causal_shift(nk);
    int last_hi[RB], last_lo[RB];
    [[unroll]] for (int rb = 0; rb < RB; rb++) {
        last_hi[rb] = pc.causal != 0u ? min(int(row_hi[rb]) + shift, nk - 1) : nk - 1;
        last_lo[rb] = pc.causal != 0u ? min(int(row_lo[rb]) + shift, nk - 1) : nk - 1;
    }
    // every subgroup helps load every tile the workgroup's last real row sees
    const int wg_row = min(int(wg0) + WARPS * ROWS - 1, int(pc.nq) - 1);
    const int wg_last = pc.causal != 0u ? min(nk - 1, wg_row + shift) : nk - 1;
    const int warp_last = pc.causal != 0u ? min(nk - 1, int(i0) + ROWS - 1 + shift) : nk - 1;
    const int warp_first_last = pc.causal != 0u ? int(i0) + shift : nk - 1; // the last key row i0 sees
    // bias and mask rows (padding rows have none: see the side pass)
    uint brow_hi[RB], brow_lo[RB], mrow_hi[RB], mrow_lo[RB];
    [[unroll]] for (int rb = 0; rb < RB; rb++) {
        brow_hi[rb] = HAS_BIAS ? bias_row(b, hh, row_hi[rb]) : 0u;
        brow_lo[rb] = HAS_BIAS ? bias_row(b, hh, row_lo[rb]) : 0u;
        mrow_hi[rb] = HAS_MASK ? mask_row(b, hh, row_hi[rb]) : 0u;
        mrow_lo[rb] = HAS_MASK ? mask_row(b, hh, row_lo[rb]) : 0u;
    }
    const int ntiles = wg_last < 0 ? 0 : wg_last / BC + 1;
    const uint k_row0 = kvh * pc.nk_pad, v_row0 = kvh * uint(D);
    float m_hi[RB], m_lo[RB], l_hi[RB], l_lo[RB];
    [[unroll]] for (int rb = 0; rb < RB; rb++) {
        m_hi[rb] = m_lo[rb] = NEG_INF;
        l_hi[rb] = l_lo[rb] = 0.0;
    }
    const uint p_carry = mx_p_carry(P_FP8 ? 2u : KIND, pc.t);
#ifdef PV_INT8
    const uint v_flags = gl_NumWorkGroups.z * pc.hkv * uint(D) + kvh * (pc.nk_pad / uint(BC)); // this head's tile flags
#endif

    // this invocation's share of the next tiles, in flight while the current one is used: K's
    // and V's of the next tile, or under PIPE K's of the tile after next and V's of the next
    uvec4 k_next[PER_THREAD_K], v_next[PER_THREAD];
    float ks_next[PER_THREAD_S];
    const uint k_at = (k_row0 + tid / uint(KW)) * uint(KW) + tid % uint(KW);
    const uint v_at = (v_row0 + tid / uint(VPR)) * (pc.nk_pad / uint(BC / VPR)) + tid % uint(VPR), ks_at = k_row0 * uint(NB) + tid;
    SACCF s[RB * KT]; // the current tile's S, then P
    bool narrow = false;
    if (ntiles > 0) {
        fetch_k(0u, tid, k_at, ks_at, k_next, ks_next);
        if (PIPE) { // tile 0's S before the loop: sK then holds tile t + 1 while tile t's softmax runs
            stage_k(tid, k_next, ks_next);
            barrier();
            if (ntiles > 1) fetch_k(uint(BC), tid, k_at, ks_at, k_next, ks_next);
            narrow = tile_narrow(0u, nk, lane, wide_q);
            tile_scores(narrow);
            [[unroll]] for (int x = 0; x < RB * KT; x++) s[x] = s_new[x];
        }
        fetch_v(0u, v_at, v_next);
    }
    for (int tile = 0; tile < ntiles; tile++) {
        const uint j0 = uint(tile * BC);
        barrier(); // every subgroup is done with the previous tile (and PIPE: with this tile's K)
        stage_k(tid, k_next, ks_next); // PIPE: the next tile's (the last tile stages a stale copy, never used)
        stage_v(tid, v_next);
        barrier();
        if (tile + 1 < ntiles) fetch_v(j0 + uint(BC), v_at, v_next);
        if (tile + (PIPE ? 2 : 1) < ntiles) fetch_k(j0 + uint(PIPE ? 2 * BC : BC), tid, k_at, ks_at, k_next, ks_next);
        // this subgroup's rows see none of these keys (causal only: a constant, so a non-causal
        // pipeline has no second path around the tile, whose merge cost register moves)
        if (HAS_CAUSAL && int(j0) > warp_last) continue;

        // S of this tile (PIPE: computed during the previous tile)
        if (!PIPE) {
            narrow = tile_narrow(j0, nk, lane, wide_q);
            tile_scores(narrow);
            [[unroll]] for (int x = 0; x < RB * KT; x++) s[x] = s_new[x];
        }

        // bias and mask on the keys each row may see (the masking below hides the rest)
        if (HAS_SIDE) {
            [[unroll]] for (int rb = 0; rb < RB; rb++) {
                [[unroll]] for (int kt = 0; kt < KT; kt++) {
                    [[unroll]] for (int i = 0; i < NE_S; i++) {
                        const bool lo = code_low(s_code(i));
                        const int j = int(j0) + kt * SN + code_col(s_code(i)) + int(2u * t4);
                        if ((lo ? row_lo[rb] : row_hi[rb]) < pc.nq && j <= (lo ? last_lo[rb] : last_hi[rb]))
                            s[rb * KT + kt][i] = side_score(s[rb * KT + kt][i], lo ? brow_lo[rb] : brow_hi[rb],
                                                            lo ? mrow_lo[rb] : mrow_hi[rb], uint(j), LOG2E);
                    }
                }
            }
        }

        const bool masked = int(j0) + BC - 1 > min(warp_first_last, nk - 1);
        float alpha_hi[RB], alpha_lo[RB], mn_hi[RB], mn_lo[RB];
        // S is in log2 units (the Q scales carry log2(e)). Maxima per row and 32-key block,
        // masking only tiles that reach past some row's last key: one branch for every row
        // block, so that the rest of the tile's softmax is one basic block at RB = 2 too (the
        // driver schedules within one; H100, N4096 D64, device time: 182.5, 182.6 and 183.6
        // TFLOP/s against 172.5, 172.7 and 173.8 in two commands).
        float bm_hi[RB * (BC / 32)], bm_lo[RB * (BC / 32)];
        [[unroll]] for (int x = 0; x < RB * (BC / 32); x++) bm_hi[x] = bm_lo[x] = NEG_INF;
        [[dont_flatten]] if (masked) {
            [[unroll]] for (int rb = 0; rb < RB; rb++) {
                const int lim_hi = last_hi[rb] - int(j0 + 2u * t4), lim_lo = last_lo[rb] - int(j0 + 2u * t4); // masked column offsets exceed these
                [[unroll]] for (int kt = 0; kt < KT; kt++) {
                    [[unroll]] for (int i = 0; i < NE_S; i++) {
                        const bool lo = code_low(s_code(i));
                        const int x = rb * (BC / 32) + kt / TPB;
                        if (kt * SN + code_col(s_code(i)) > (lo ? lim_lo : lim_hi)) s[rb * KT + kt][i] = NEG_INF;
                        if (lo) bm_lo[x] = max(bm_lo[x], s[rb * KT + kt][i]);
                        else bm_hi[x] = max(bm_hi[x], s[rb * KT + kt][i]);
                    }
                }
            }
        } else {
            [[unroll]] for (int rb = 0; rb < RB; rb++) {
                [[unroll]] for (int kt = 0; kt < KT; kt++) {
                    [[unroll]] for (int i = 0; i < NE_S; i++) {
                        const int x = rb * (BC / 32) + kt / TPB;
                        if (code_low(s_code(i))) bm_lo[x] = max(bm_lo[x], s[rb * KT + kt][i]);
                        else bm_hi[x] = max(bm_hi[x], s[rb * KT + kt][i]);
                    }
                }
            }
        }
        [[unroll]] for (int rb = 0; rb < RB; rb++) {
            // the factor still to apply to s (FOLD), and the block maxima with it (qs > 0 keeps their order)
            const float qf_hi = FOLD && narrow ? qs_hi[rb] : 1.0, qf_lo = FOLD && narrow ? qs_lo[rb] : 1.0;
            float mx_hi = NEG_INF, mx_lo = NEG_INF;
            [[unroll]] for (int blk = rb * (BC / 32); blk < (rb + 1) * (BC / 32); blk++) {
                bm_hi[blk] = quad_max(bm_hi[blk]) * qf_hi;
                bm_lo[blk] = quad_max(bm_lo[blk]) * qf_lo;
                mx_hi = max(mx_hi, bm_hi[blk]);
                mx_lo = max(mx_lo, bm_lo[blk]);
            }
            mn_hi[rb] = max(m_hi[rb], mx_hi);
            mn_lo[rb] = max(m_lo[rb], mx_lo);
            alpha_hi[rb] = mn_hi[rb] == NEG_INF ? 1.0 : exp2(m_hi[rb] - mn_hi[rb]);
            alpha_lo[rb] = mn_lo[rb] == NEG_INF ? 1.0 : exp2(m_lo[rb] - mn_lo[rb]);
            const float mz_hi = mn_hi[rb] == NEG_INF ? 0.0 : mn_hi[rb], mz_lo = mn_lo[rb] == NEG_INF ? 0.0 : mn_lo[rb]; // a row with no key yet: P = 0

            // P~ = 2^(S - m), then P^ per 32-key block (TPB tiles), all times 2^12 (P_SCALE);
            // rs: this lane's share of the row sums l adds (P^ under PNQ, else P~; not under MMA_SUM)
            float rs_hi = 0.0, rs_lo = 0.0;
#ifdef PV_INT8
            int pe_hi[BC / 32], pe_lo[BC / 32]; // each P block's exponent, NO_BLOCK where it is all zero
#endif
            [[unroll]] for (int blk = 0; blk < BC / 32; blk++) {
                [[unroll]] for (int kt = TPB * blk; kt < TPB * blk + TPB; kt++) {
                    [[unroll]] for (int i = 0; i < NE_S; i++) {
                        const bool lo = code_low(s_code(i));
                        const float p = exp2(fma(s[rb * KT + kt][i], lo ? qf_lo : qf_hi, -(lo ? mz_lo : mz_hi)));
                        s[rb * KT + kt][i] = p;
                        if (!HAT_SUM) {
                            if (lo) rs_lo += p;
                            else rs_hi += p;
                        }
                    }
                }
                if (QUANT_P) {
                    // The block's largest P~ is the exp2 of its largest S (the same operands as that
                    // element's own P~), as long as exp2 is monotonic; were it not somewhere, a P~
                    // 1 ulp above a block exponent boundary could saturate. Saves a max per
                    // element over P~'s bits.
                    const float pm_hi = exp2(bm_hi[rb * (BC / 32) + blk] - mz_hi), pm_lo = exp2(bm_lo[rb * (BC / 32) + blk] - mz_lo);
                    uint exb_hi = mx_p_exponent_bits(floatBitsToUint(pm_hi), p_carry, P_FP8 ? 2u : KIND);
                    uint exb_lo = mx_p_exponent_bits(floatBitsToUint(pm_lo), p_carry, P_FP8 ? 2u : KIND);
                    // E2M1: saturation at 6 * 2^e; E4M3: at 448 * 2^e, rounding from the binade e - 6 up
                    const float sat_hi = uintBitsToFloat(exb_hi + (P_FP8 ? 0x04600000u : 0x01400000u));
                    const float sat_lo = uintBitsToFloat(exb_lo + (P_FP8 ? 0x04600000u : 0x01400000u));
                    if (P_FP8) {
                        exb_hi = max(exb_hi, 0x03800000u) - 0x03000000u;
                        exb_lo = max(exb_lo, 0x03800000u) - 0x03000000u;
                    }
#ifdef PV_INT8
                    pe_hi[blk] = pm_hi == 0.0 ? NO_BLOCK : int(exb_hi >> 23) - 127;
                    pe_lo[blk] = pm_lo == 0.0 ? NO_BLOCK : int(exb_lo >> 23) - 127;
#endif
                    [[unroll]] for (int kt = TPB * blk; kt < TPB * blk + TPB; kt++) {
                        [[unroll]] for (int i = 0; i < NE_S; i++) {
                            const bool lo = code_low(s_code(i));
                            const float q = P_FP8 ? quantize_p8(s[rb * KT + kt][i], lo ? exb_lo : exb_hi, lo ? sat_lo : sat_hi)
                                                  : quantize_p(s[rb * KT + kt][i], lo ? exb_lo : exb_hi, lo ? sat_lo : sat_hi);
                            s[rb * KT + kt][i] = q;
                            if (HAT_SUM && !MMA_SUM) {
                                if (lo) rs_lo += q;
                                else rs_hi += q;
                            }
                        }
                    }
                } else {
                    [[unroll]] for (int kt = TPB * blk; kt < TPB * blk + TPB; kt++) s[rb * KT + kt] *= P_SCALE;
                }
            }
            if (!HAT_SUM) {
                rs_hi *= P_SCALE;
                rs_lo *= P_SCALE;
            }
            if (mn_hi[rb] != NEG_INF) { if (!MMA_SUM) l_hi[rb] = alpha_hi[rb] * l_hi[rb] + rs_hi; m_hi[rb] = mn_hi[rb]; }
            if (mn_lo[rb] != NEG_INF) { if (!MMA_SUM) l_lo[rb] = alpha_lo[rb] * l_lo[rb] + rs_lo; m_lo[rb] = mn_lo[rb]; }
            [[unroll]] for (int dt = 0; dt < DT; dt++)
                [[unroll]] for (int i = 0; i < NE_O; i++) oacc[rb * DT + dt][i] *= code_low(o_code(i)) ? alpha_lo[rb] : alpha_hi[rb];

#ifdef PV_INT8
            // the tile's P unit per row: its blocks within 3 binades of the larger, above 2^-60
            int r_hi, r_lo;
            const bool narrow_hi = tile_unit(pe_hi[0], pe_hi[1], r_hi), narrow_lo = tile_unit(pe_lo[0], pe_lo[1], r_lo);
            const bool v_wide = vcol[v_flags + uint(tile)] != 0u;
            const bool chain = subgroupAll(narrow_hi && narrow_lo) && !v_wide;
            // codes = P^ * 2^(1 - unit exponent), in two steps (a block exponent may be -127)
            const uint prow = (w * uint(RB) + uint(rb)) * 16u * uint(PSTR);
            [[unroll]] for (int blk = 0; blk < BC / 32; blk++) {
                const float g_hi = pow2_any(-63 - (chain ? r_hi : block_exp(pe_hi[blk])));
                const float g_lo = pow2_any(-63 - (chain ? r_lo : block_exp(pe_lo[blk])));
                [[unroll]] for (int kt = 2 * blk; kt < 2 * blk + 2; kt++) {
                    // this lane's pairs: keys 2t, 2t + 1 and 2t + 8, 2t + 9 of rows g and g + 8
                    uint pair[4] = {0u, 0u, 0u, 0u}; // (row, second pair) -> 16 bits
                    [[unroll]] for (int i = 0; i < NE_S; i++) {
                        const int c = s_code(i);
                        const bool lo = code_low(c);
                        precise float up = s[rb * KT + kt][i] * 18446744073709551616.0; // 2^64 first: never folded into g
                        // up * g is the code, an integer <= 96: exact, it lands in the low byte of
                        // 1.5 * 2^23 + code (an fma, not a quarter-rate F2I)
                        const uint code = floatBitsToUint(fma(up, lo ? g_lo : g_hi, 12582912.0)) & 0xffu;
                        pair[(lo ? 2 : 0) + (c >> 2)] |= code << (8 * (c & 1));
                    }
                    // even t sends its second pairs, odd t its first: each then holds 4 consecutive keys
                    const bool odd = (t4 & 1u) != 0u;
                    const uint send = odd ? pair[0] | pair[2] << 16 : pair[1] | pair[3] << 16;
                    const uint got = subgroupShuffleXor(send, 1u);
                    const uint word_hi = odd ? (got & 0xffffu) | pair[1] << 16 : pair[0] | got << 16;
                    const uint word_lo = odd ? (got >> 16) | pair[3] << 16 : pair[2] | (got & 0xffff0000u);
                    const uint col = uint(kt * 4) + (odd ? 2u + t4 / 2u : t4 / 2u);
                    sP[prow + g * uint(PSTR) + col] = word_hi;
                    sP[prow + (g + 8u) * uint(PSTR) + col] = word_lo;
                }
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            PMAT8 pa[BC / 32];
            [[unroll]] for (int blk = 0; blk < BC / 32; blk++)
                coopMatLoad(pa[blk], sP, prow + uint(blk * 8), uint(PSTR), gl_CooperativeMatrixLayoutRowMajor);
            [[dont_flatten]] if (chain) {
                const float u_hi = pow2_any(r_hi - 1), u_lo = pow2_any(r_lo - 1);
                [[unroll]] for (int dt = 0; dt < DT; dt++) {
                    IACC acc = IACC(0x4B400000); // the bits of 1.5 * 2^23: see int_sum
                    [[unroll]] for (int blk = 0; blk < BC / 32; blk++) {
                        VMAT8 vb;
                        coopMatLoad(vb, sV, uint(dt * PN * VSTR + blk * 2), uint(VSTR), gl_CooperativeMatrixLayoutColumnMajor);
                        acc = coopMatMulAdd(pa[blk], vb, acc);
                    }
                    [[unroll]] for (int i = 0; i < NE_O; i++)
                        oacc[rb * DT + dt][i] = fma(int_sum(acc[i]), code_low(o_code(i)) ? u_lo : u_hi, oacc[rb * DT + dt][i]);
                }
            } else { // each block with its own exponent (and the V factors of a flagged tile); rare: kept rolled up
                [[dont_unroll]] for (int blk = 0; blk < BC / 32; blk++) {
                    const float u_hi = pow2_any(block_exp(pe_hi[blk]) - 1), u_lo = pow2_any(block_exp(pe_lo[blk]) - 1);
                    [[unroll]] for (int dt = 0; dt < DT; dt++) {
                        VMAT8 vb;
                        coopMatLoad(vb, sV, uint(dt * PN * VSTR + blk * 2), uint(VSTR), gl_CooperativeMatrixLayoutColumnMajor);
                        IACC f = coopMatMulAdd(pa[blk], vb, IACC(0x4B400000));
                        [[unroll]] for (int i = 0; i < NE_O; i++) {
                            float u = code_low(o_code(i)) ? u_lo : u_hi;
                            if (v_wide) u *= vscale[(v_row0 + uint(dt * PN + code_col(o_code(i))) + 2u * t4) * (pc.nk_pad / 32u) + j0 / 32u + uint(blk)];
                            oacc[rb * DT + dt][i] = fma(int_sum(f[i]), u, oacc[rb * DT + dt][i]);
                        }
                    }
                }
            }
#endif
        }

        // PIPE: the next tile's S, in the same basic block as this tile's softmax and P V, so the
        // driver can interleave their matrix and arithmetic work (on the last tile, or one no row
        // here sees, it reads a stale or unseen K tile and is never used)
        if (PIPE) scores_main();

#ifndef PV_INT8
        // P^ of this tile (times 2^12) into pa_v, the A matrices of its P V
        [[unroll]] for (int kp = 0; kp < BC / 16; kp++)
            [[unroll]] for (int rb = 0; rb < RB; rb++)
                [[unroll]] for (int i = 0; i < 8; i++) {
                    const int c = a_code(i);
                    pa_v[rb * (BC / 16) + kp][i] = float16_t(s[rb * KT + (SN == 16 ? kp : 2 * kp + (c >> 2))][s_index(c)]);
                }
        pv_tile();
        if (MMA_SUM)
            [[unroll]] for (int rb = 0; rb < RB; rb++) {
                if (mn_hi[rb] != NEG_INF) l_hi[rb] = alpha_hi[rb] * l_hi[rb] + psum_hi[rb];
                if (mn_lo[rb] != NEG_INF) l_lo[rb] = alpha_lo[rb] * l_lo[rb] + psum_lo[rb];
            }
#endif
        if (PIPE) {
            narrow = tile_narrow(j0 + uint(BC), nk, lane, wide_q);
#ifdef S_INT8
            [[dont_flatten]] if (tile + 1 < ntiles && !narrow && (!HAS_CAUSAL || int(j0) + BC <= warp_last))
                scores_wide();
#endif
            [[unroll]] for (int x = 0; x < RB * KT; x++) s[x] = s_new[x];
        }
    }

    // O = acc * vscale / l (both in units of 2^-12); MMA_SUM's l is already the row's sum
    [[unroll]] for (int rb = 0; rb < RB; rb++) {
        if (!MMA_SUM) {
            l_hi[rb] = quad_sum(l_hi[rb]);
            l_lo[rb] = quad_sum(l_lo[rb]);
        }
        const float inv_hi = m_hi[rb] == NEG_INF ? 0.0 : 1.0 / l_hi[rb];
        const float inv_lo = m_lo[rb] == NEG_INF ? 0.0 : 1.0 / l_lo[rb];
        [[unroll]] for (int dt = 0; dt < DT; dt++) {
            [[unroll]] for (int i = 0; i < NE_O; i++) {
                const bool lo = code_low(o_code(i));
                const uint row = lo ? row_lo[rb] : row_hi[rb], c = uint(dt * PN + code_col(o_code(i))) + 2u * t4;
#ifdef PV_INT8
                const uint cm = vcol[v_row0 + c];
                const float vs = cm == 0u ? 0.0 : pow2_any(int(cm) - 132); // the column's unit 2^(E - 4)
#else
                const float vs = vscale[v_row0 + c];
#endif
                if (row < pc.nq) o[pc.o_offset + (bh * pc.nq + row) * uint(D) + c] = oacc[rb * DT + dt][i] * vs * (lo ? inv_lo : inv_hi);
            }
        }
        if (t4 == 0u) {
            if (row_hi[rb] < pc.nq)
                lse[pc.lse_offset + bh * pc.nq + row_hi[rb]] = m_hi[rb] == NEG_INF ? NEG_INF : m_hi[rb] * (1.0 / LOG2E) + log(l_hi[rb] * (1.0 / P_SCALE));
            if (row_lo[rb] < pc.nq)
                lse[pc.lse_offset + bh * pc.nq + row_lo[rb]] = m_lo[rb] == NEG_INF ? NEG_INF : m_lo[rb] * (1.0 / LOG2E) + log(l_lo[rb] * (1.0 / P_SCALE));
        }
    }
}
