/*
 * MXAttention forward on NVIDIA tensor cores (sm_80+), through inline PTX:
 * every MXFP4 block product is one mma.sync.m16n8k32 s8 x s8 -> s32 (K = 32 =
 * exactly one block), the operands being 2 x E2M1 as int8 (integers in
 * [-12, 12], |dot| <= 4608), scaled afterwards by the two block exponents in
 * fp32: exact, like the reference's ldexp(sum, ea + eb - 2).
 *
 * Work-group: 4 warps; warp w owns 16 query rows (one m16 tile), so a group
 * owns 64 rows; keys in tiles of MXA_BC. Each lane (group g = lane / 4,
 * t = lane % 4) holds rows g and g + 8 of its warp and, per 8-key n-tile, keys
 * 2t and 2t + 1 (the C fragment). P is quantized in registers; its A fragment
 * takes keys {2t, 2t+1, 8+2t, 9+2t} (+16) of each 32-key block, so V is stored
 * with the keys of each block in that order (prep.cl, mxa_v_key). Inside each
 * 32-byte block the 4-byte words are stored in the order 0 4 1 5 2 6 3 7
 * (prep.cl, mxa_word_pos): the two words a lane feeds one mma are adjacent,
 * one 64-bit local load.
 *
 * The accumulator starts at 1.5 x 2^23 (bits 0x4B400000): read as fp32 the
 * result r is then 1.5 x 2^23 + dot exactly, which saves an int-to-float
 * conversion (a quarter-rate instruction) per element, and fma(r, f,
 * -1.5 x 2^23 f) gives dot x f exactly in one instruction.
 *
 * Scores with one scale per row: prep.cl shifts the codes of a Q or K row
 * whose block exponents lie within 3 of each other to the smallest one (12 <<
 * 3 = 96 still fits int8), so all D/32 blocks chain in one int32 mma sum
 * (|dot| <= 256 x 96 x 96 < 2^22, inside the 1.5 x 2^23 trick) and one
 * multiply per score replaces the per-block scale fmas. Bit for bit the
 * per-block result: with spreads <= 3 the reference's fp32 sum of the block
 * products is exact too (integer multiples of the smallest scale, < 2^22 of
 * them). Tiles or warps holding a row with a wider spread take the per-block
 * path, which is exact for either layout.
 *
 * P V the same way, per key tile: prep.cl puts each V column's codes on one
 * unit 2^(E - 4), E its largest block exponent (blocks more than 3 binades
 * below keep their codes, get a factor and flag their key block), and a row
 * whose nonzero P blocks in the tile lie within 3 binades gets its codes on
 * the unit 2^(hi - 4) of the largest. When every row of the warp has that and
 * no V block of the tile is flagged, the tile's blocks chain in one int32 sum
 * per element (|dot| <= 64 x 96 x 96 < 2^22), added to O with one fma; O stays
 * in the column units until the end. Otherwise each block is scaled on its
 * own (its P exponent, the V factors). Exact either way: only fp32 summation
 * order differs from the reference.
 */
#define WG 128
#define BR 64
#define NT (MXA_BC / 8)
#define NKB (MXA_BC / 32)
#define DB (MXA_D / 32)
#define CT (MXA_D / 8)
/* Row pitches in words, = 8 or 24 (mod 32): the 64-bit fragment loads of a
 * half-warp (4 rows x 4 lanes) then hit 32 distinct banks. */
#define PITCH(w) ((w) == 8 ? 8 : (w) + 8)
#define KPITCH PITCH(MXA_D / 4)
#define VPITCH PITCH(MXA_BC / 4)
#define BIAS 12582912.0f
#define BIAS_BITS 0x4B400000
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f
#define NO_BLOCK (-1000) /* the exponent of a P block that is all zero */

/* NVIDIA's OpenCL compiler takes GNU `asm`; clang (used for offline checks) wants __asm__ */
#ifndef MXA_ASM
#define MXA_ASM asm
#endif

/* Scores in log2 units with the hardware ex2 (about 2 ulp) unless
 * MXA_EXACT_EXP (the reference's exp of fp32 scores); the difference can move
 * a P~ value across an E2M1 boundary now and then (see the tests).
 *
 * The ex2 is PTX's ex2.approx.ftz.f32. NVIDIA's compiler turns native_exp2
 * into the non-ftz ex2.approx.f32, which keeps subnormal results at a cost
 * (the kernel ran 3.5-4% faster with ftz on the H200). Flushing only changes
 * P~ below 2^-126, whose share of a row sum (the row's largest P~ is 1) lies
 * far below fp32's resolution. MXA_NATIVE_EXP2 keeps native_exp2, to compare. */
#ifdef MXA_EXACT_EXP
#define EXPS(x) exp(x)
#define M_TO_NATURAL(m) (m)
#define BIAS_FACTOR 1.0f
#else
#ifdef MXA_NATIVE_EXP2
#define EXPS(x) native_exp2(x)
#else
float ex2_ftz(float x)
{
    float r;
    MXA_ASM("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
#define EXPS(x) ex2_ftz(x)
#endif
#define M_TO_NATURAL(m) ((m) * LN2)
#define BIAS_FACTOR LOG2E /* the bias joins the scores in log2 units (docs/attention-inputs.md) */
#endif

/* FOLD: the one-scale path leaves the Q row scale out of S and applies it in the exp's
 * fma, fma(S, qs, -m): one multiply less per score. The block maxima are scaled on their
 * own, as rounded products, so a row's maximum still gives exp(0) = 1 for its block's
 * exponent; the other scores move by at most their rounding. Bias and mask act on scaled
 * scores, so not with them. */
#if defined(MXA_BIAS) || defined(MXA_MASK)
#define FOLD 0
#else
#define FOLD 1
#endif
/* one-scale score path (0: per-block scales everywhere, for comparisons) */
#ifndef MXA_QK_CHAIN
#define MXA_QK_CHAIN 1
#endif

/* PNQ (l sums P^) or direct placement (l sums P~), fixed at build time */
#ifndef MXA_PNQ
#define MXA_PNQ 1
#endif

/* Stages of the K/V tile pipeline: 2 = cp.async double buffering (the next
 * tile streams into local memory while this one is computed). */
#ifndef MXA_STAGES
#define MXA_STAGES 1
#endif

/* d = a (16x32 s8, row) x b (32x8 s8, col) + 1.5 x 2^23, as floats */
void mma16832(float d[4], const uint a[4], uint2 b)
{
    int r0, r1, r2, r3;
    MXA_ASM volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%10,%10,%10,%10};"
                     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y), "r"(BIAS_BITS));
    d[0] = as_float(r0);
    d[1] = as_float(r1);
    d[2] = as_float(r2);
    d[3] = as_float(r3);
}

/* d += a x b in int32: chains the blocks of one dot product */
void mma16832_acc(int d[4], const uint a[4], uint2 b)
{
    int r0, r1, r2, r3;
    MXA_ASM volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%10,%11,%12,%13};"
                     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y), "r"(d[0]), "r"(d[1]),
                       "r"(d[2]), "r"(d[3]));
    d[0] = r0;
    d[1] = r1;
    d[2] = r2;
    d[3] = r3;
}

float shfl_xor(float v, int mask)
{
    uint r;
    MXA_ASM volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(as_uint(v)), "r"(mask));
    return as_float(r);
}

/* bytes of a and b picked by sel (PTX prmt): 0x0040 joins their low bytes, 0x5410 their low halves */
uint prmt(uint a, uint b, uint sel)
{
    uint r;
    MXA_ASM("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
    return r;
}

/* max / sum over the 4 lanes of a quad (the lanes sharing rows g, g + 8) */
float quad_max(float v)
{
    v = fmax(v, shfl_xor(v, 1));
    return fmax(v, shfl_xor(v, 2));
}

float quad_sum(float v)
{
    v += shfl_xor(v, 1);
    return v + shfl_xor(v, 2);
}

/* whether v is nonzero in every lane of the warp: one vote instead of five
 * dependent shuffles (it sits between the maxima and the P codes of every tile) */
int warp_all(int v)
{
    uint r;
    MXA_ASM volatile("{ .reg .pred p, q; setp.ne.s32 p, %1, 0; vote.sync.all.pred q, p, 0xffffffff; selp.u32 %0, 1, 0, q; }"
                     : "=r"(r)
                     : "r"(v));
    return (int)r;
}

#ifndef MXA_NO_CP_ASYNC
/* 16-byte global -> local copy that bypasses registers (sm_80 cp.async). A
 * __local pointer converted to an integer is its shared-window address. */
void cp_async16(__local uint *dst, __global const uint4 *src)
{
    MXA_ASM volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((uint)(size_t)dst), "l"((ulong)(size_t)src)
                     : "memory");
}

void cp_async_commit(void)
{
    MXA_ASM volatile("cp.async.commit_group;" ::: "memory");
}

/* wait until at most `pending` (0 or 1) committed groups are still in flight */
void cp_async_wait(int pending)
{
    if (pending) MXA_ASM volatile("cp.async.wait_group 1;" ::: "memory");
    else MXA_ASM volatile("cp.async.wait_group 0;" ::: "memory");
}
#else /* plain loads and stores (single stage only) */
void cp_async16(__local uint *dst, __global const uint4 *src)
{
    vstore4(*src, 0, dst);
}
void cp_async_commit(void) {}
void cp_async_wait(int pending) { (void)pending; }
#endif

#define KWORDS (MXA_BC * KPITCH)
#define VWORDS (MXA_D * VPITCH)
#define STAGE_WORDS (KWORDS + VWORDS + MXA_BC * DB + NKB * MXA_D)

/* A tile's copy in 16-byte chunks: work-item tid takes chunks tid, tid + WG, ... of the K
 * tile (key-major, D / 16 chunks per key), the V tile (channel-major, BC / 16 per channel),
 * the K scales (channel block-major, BC / 4 per block) and the V scales (contiguous). A
 * chunk's local offset, and its global offset less the tile's, are the same in every tile,
 * so each work-item finds its global bases once (copy_bases) and a tile adds only j0: the
 * index arithmetic of a plain copy loop cost about 17 instructions per chunk, a fifth of
 * the key-tile loop (offline count of the driver's PTX). */
#define K_CHUNKS (MXA_BC * MXA_D / 16)
#define V_CHUNKS (MXA_D * MXA_BC / 16)
#define KF_CHUNKS (MXA_BC * DB / 4)
#define VF_CHUNKS (NKB * MXA_D / 4)
#define PIECES(n) (((n) + WG - 1) / WG)
#if WG % (MXA_BC / 16) != 0 || WG % (MXA_BC / 4) != 0
#error a work-group must hold whole V rows and K scale rows of a tile
#endif

typedef struct copy_bases {
    __global const uint4 *k, *v, *vf; /* tile 0's chunk tid */
    __global const float *kf;
    uint v_step, kf_step; /* from piece u to u + 1: WG chunks on in the tile, whole rows apart in memory */
} copy_bases;

copy_bases copy_setup(uint tid, __global const uint4 *kbase, __global const uint4 *vbase, __global const float *kfbase,
                      __global const uint4 *vfbase, uint nk_pad)
{
    copy_bases c;
    c.k = kbase + tid;
    c.v = vbase + (size_t)(tid / (MXA_BC / 16)) * (nk_pad / 16) + tid % (MXA_BC / 16);
    c.v_step = WG / (MXA_BC / 16) * (nk_pad / 16);
    c.kf = kfbase + (size_t)(tid / (MXA_BC / 4)) * nk_pad + tid % (MXA_BC / 4) * 4;
    c.kf_step = WG / (MXA_BC / 4) * nk_pad;
    c.vf = vfbase + tid;
    return c;
}

/* Starts copying tile j0 of K, V and their scales into one stage at `buf`:
 * K [key][d], V [d][key], K scales [channel block][key], V scales [key block][d]. */
void load_tile(__local uint *buf, uint j0, uint tid, const copy_bases *c)
{
    __local uint *ks = buf, *vs = buf + KWORDS, *kf = vs + VWORDS, *vf = kf + MXA_BC * DB;
#pragma unroll
    for (uint u = 0; u < PIECES(K_CHUNKS); u++) {
        const uint idx = tid + u * WG;
        if (K_CHUNKS % WG == 0 || idx < K_CHUNKS)
            cp_async16(ks + idx / (MXA_D / 16) * KPITCH + idx % (MXA_D / 16) * 4, c->k + j0 * (MXA_D / 16) + u * WG);
    }
#pragma unroll
    for (uint u = 0; u < PIECES(V_CHUNKS); u++) {
        const uint idx = tid + u * WG;
        if (V_CHUNKS % WG == 0 || idx < V_CHUNKS)
            cp_async16(vs + idx / (MXA_BC / 16) * VPITCH + idx % (MXA_BC / 16) * 4, c->v + j0 / 16 + u * c->v_step);
    }
#pragma unroll
    for (uint u = 0; u < PIECES(KF_CHUNKS); u++) {
        const uint idx = tid + u * WG;
        if (KF_CHUNKS % WG == 0 || idx < KF_CHUNKS)
            cp_async16(kf + idx * 4, (__global const uint4 *)(c->kf + j0 + u * c->kf_step));
    }
#pragma unroll
    for (uint u = 0; u < PIECES(VF_CHUNKS); u++) {
        const uint idx = tid + u * WG;
        if (VF_CHUNKS % WG == 0 || idx < VF_CHUNKS) cp_async16(vf + idx * 4, c->vf + j0 / 32 * (MXA_D / 4) + u * WG);
    }
    cp_async_commit();
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void mxa_attention_mma(__global const uint *q8, __global const float *qe, __global const uint4 *k8,
                       __global const float *ke, __global const uint4 *v8, __global const float *ve, __global const uint *vx,
                       __global MXA_OUT_T *o, ulong o_off, __global float *lse, int has_lse, int h, int hkv,
                       int nq, int nk, int nq_pad, int nk_pad, float score_scale, int causal, MXA_EXTRA_PARAMS,
                       int ceil_rule, uint thr, int pow2_dec)
{
    /* per stage: K tile int8 [key][d], V tile int8 [d][key] (permuted blocks),
     * 2^(e-1) per (channel block, key) and per (key block, channel) */
    __local uint4 stage4[MXA_STAGES * STAGE_WORDS / 4];
    __local uint *stages = (__local uint *)stage4;

    const int tid = get_local_id(0), warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int row0 = get_group_id(0) * BR, bh = get_group_id(1);
    const uint p_carry = mxa_p_carry(ceil_rule, thr); /* pow2_dec is thr = 2^23: the carry -1 */
    (void)pow2_dec;
    const int kvh = (bh / h) * hkv + (bh % h) / (h / hkv);
    const int ra = row0 + warp * 16 + g, rb = ra + 8;

    uint qa[DB][4];
    float fq[DB][2], nbq[DB][2]; /* 2^(e-1) of the Q blocks, and -1.5 x 2^23 times it */
    {
        __global const uint2 *qra = (__global const uint2 *)(q8 + ((size_t)bh * nq_pad + ra) * (MXA_D / 4));
        __global const uint2 *qrb = (__global const uint2 *)(q8 + ((size_t)bh * nq_pad + rb) * (MXA_D / 4));
#pragma unroll
        for (int blk = 0; blk < DB; blk++) {
            const uint2 wa = qra[blk * 4 + t], wb = qrb[blk * 4 + t];
            qa[blk][0] = wa.x;
            qa[blk][1] = wb.x;
            qa[blk][2] = wa.y;
            qa[blk][3] = wb.y;
            fq[blk][0] = qe[((size_t)bh * nq_pad + ra) * DB + blk];
            fq[blk][1] = qe[((size_t)bh * nq_pad + rb) * DB + blk];
            nbq[blk][0] = -BIAS * fq[blk][0];
            nbq[blk][1] = -BIAS * fq[blk][1];
        }
    }
#if MXA_QK_CHAIN
    /* every row of the warp has one scale for all its blocks (see prep.cl), and (FOLD) one
     * that the exp's fma can take: 0 or Inf there would turn a masked -inf into NaN */
    const float qs[2] = {fq[0][0] * score_scale, fq[0][1] * score_scale}; /* exact: fq is a power of two */
    int q_one = !FOLD || (fmin(qs[0], qs[1]) >= 0x1p-100f && fmax(qs[0], qs[1]) <= 0x1p100f);
#pragma unroll
    for (int blk = 1; blk < DB; blk++) q_one &= fq[blk][0] == fq[0][0] && fq[blk][1] == fq[0][1];
    q_one = warp_all(q_one);
#endif
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    float acc[CT][4];
#pragma unroll
    for (int ct = 0; ct < CT; ct++)
#pragma unroll
        for (int i = 0; i < 4; i++) acc[ct][i] = 0.0f;

    /* the keys this batch has, and with causal the last one any row of this group sees */
    const int nkb = mxa_keys_of(klen, has_klen, bh / h, nk), shift = mxa_causal_shift(causal, nkb, nq);
    const mxa_side_rows side = mxa_side_head(bias, bias_off, bias_bs, bias_hs, mask, mask_off, mask_bs, mask_hs, bh, h);
    const int last_row = min(row0 + BR, nq) - 1;
    const int kend = causal ? clamp(last_row + shift + 1, 0, nkb) : nkb;
    const int ntiles = (kend + MXA_BC - 1) / MXA_BC;
    __global const uint4 *kbase = k8 + (size_t)kvh * nk_pad * (MXA_D / 16);
    __global const uint4 *vbase = v8 + (size_t)kvh * MXA_D * (nk_pad / 16);
    __global const float *kfbase = ke + (size_t)kvh * DB * nk_pad;
    __global const uint4 *vfbase = (__global const uint4 *)(ve + (size_t)kvh * (nk_pad / 32) * MXA_D);
    /* V: each column's largest block exponent + 128, and the key blocks holding a factor (prep.cl) */
    __global const uint *vcol = vx + (size_t)kvh * MXA_D;
    __global const uint *vflag = vx + (size_t)(get_num_groups(1) / h) * hkv * MXA_D + (size_t)kvh * (nk_pad / 32);
    const copy_bases copy = copy_setup((uint)tid, kbase, vbase, kfbase, vfbase, (uint)nk_pad);
    if (ntiles > 0) load_tile(stages, 0u, (uint)tid, &copy);

    for (int tile = 0; tile < ntiles; tile++) {
        const int j0 = tile * MXA_BC;
#if MXA_STAGES == 2
        barrier(CLK_LOCAL_MEM_FENCE); /* everyone is done with the stage about to be refilled */
        if (tile + 1 < ntiles) {      /* the next tile streams in while this one is computed */
            load_tile(stages + ((tile + 1) & 1) * STAGE_WORDS, (uint)(j0 + MXA_BC), (uint)tid, &copy);
            cp_async_wait(1);
        } else {
            cp_async_wait(0);
        }
        __local const uint *cur = stages + (tile & 1) * STAGE_WORDS;
#else
        if (tile > 0) {
            barrier(CLK_LOCAL_MEM_FENCE); /* everyone is done with the previous tile */
            load_tile(stages, (uint)j0, (uint)tid, &copy);
        }
        cp_async_wait(0);
        __local const uint *cur = stages;
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        __local const uint *ks = cur, *vs = cur + KWORDS;
        __local const float *kf = (__local const float *)(vs + VWORDS), *vf = kf + MXA_BC * DB;

        float s[NT][4];
#if MXA_QK_CHAIN
        /* ---- one-scale path when every key of the tile has one scale too */
        int one = q_one;
        if (one) { /* q_one is the same in the whole warp */
            for (int key = lane; key < MXA_BC; key += 32)
#pragma unroll
                for (int blk = 1; blk < DB; blk++) one &= kf[blk * MXA_BC + key] == kf[key];
            one = warp_all(one);
        }
        if (one) {
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                int d[4] = {BIAS_BITS, BIAS_BITS, BIAS_BITS, BIAS_BITS};
#pragma unroll
                for (int blk = 0; blk < DB; blk++)
                    mma16832_acc(d, qa[blk], vload2(0, ks + (nt * 8 + g) * KPITCH + blk * 8 + 2 * t));
                const float2 fk = vload2(0, kf + nt * 8 + 2 * t);
                const float nx = -BIAS * fk.x, ny = -BIAS * fk.y;
                /* dot x fk exactly; then one rounding with the Q scale x score scale, as the
                 * per-block path's exact sum times score_scale, here or (FOLD) in the exp's fma */
                s[nt][0] = fma(as_float(d[0]), fk.x, nx) * (FOLD ? 1.0f : qs[0]);
                s[nt][1] = fma(as_float(d[1]), fk.y, ny) * (FOLD ? 1.0f : qs[0]);
                s[nt][2] = fma(as_float(d[2]), fk.x, nx) * (FOLD ? 1.0f : qs[1]);
                s[nt][3] = fma(as_float(d[3]), fk.y, ny) * (FOLD ? 1.0f : qs[1]);
            }
        } else
#endif
        {
            /* ---- S = Q K^T: one mma per (8 keys, 32 channels), blocks added in order */
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
                for (int blk = 0; blk < DB; blk++) {
                    float c[4];
                    mma16832(c, qa[blk], vload2(0, ks + (nt * 8 + g) * KPITCH + blk * 8 + 2 * t));
                    const float2 fk = vload2(0, kf + blk * MXA_BC + nt * 8 + 2 * t);
                    /* fma(r, f, -BIAS f) = dot f exactly: r f and BIAS f are exact (f a power of two) */
                    s[nt][0] = fma(fma(c[0], fq[blk][0], nbq[blk][0]), fk.x, s[nt][0]);
                    s[nt][1] = fma(fma(c[1], fq[blk][0], nbq[blk][0]), fk.y, s[nt][1]);
                    s[nt][2] = fma(fma(c[2], fq[blk][1], nbq[blk][1]), fk.x, s[nt][2]);
                    s[nt][3] = fma(fma(c[3], fq[blk][1], nbq[blk][1]), fk.y, s[nt][3]);
                }
            }
            /* scale (log2 units unless MXA_EXACT_EXP) before the exp, not inside its
             * fma: the row maximum must give exp(0) = 1 exactly (0.99999994 would
             * lower its block's OCP exponent) */
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int i = 0; i < 4; i++) s[nt][i] *= score_scale;
        }
        /* ---- bias, mask, row maxima; qf: the factor still to apply to s (FOLD) */
#if MXA_QK_CHAIN
        const float qf[2] = {FOLD && one ? qs[0] : 1.0f, FOLD && one ? qs[1] : 1.0f};
#else
        const float qf[2] = {1.0f, 1.0f};
#endif
        float mx[2] = {-INFINITY, -INFINITY};
        /* without a bias or mask: only where a tile crosses the end of the keys or the causal diagonal */
#if defined(MXA_BIAS) || defined(MXA_MASK)
        if (1) {
#else
        if (j0 + MXA_BC > nkb || (causal && j0 + MXA_BC - 1 > row0 + shift)) {
#endif
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int key = j0 + nt * 8 + 2 * t + (i & 1), row = i < 2 ? ra : rb;
                    if (key >= nkb || (causal && key > row + shift)) s[nt][i] = -INFINITY;
                    else if (row < nq) s[nt][i] = mxa_side_apply(s[nt][i], side, row, key, nk, BIAS_FACTOR);
                }
        }
        /* ---- row maxima per 32-key block, of S: ex2 is monotonic, so a block's largest
         * P~ is the ex2 of its largest score (the same operands as that element's P~) */
        float bs[NKB][2];
#pragma unroll
        for (int kb = 0; kb < NKB; kb++) {
            bs[kb][0] = bs[kb][1] = -INFINITY;
#pragma unroll
            for (int n4 = 0; n4 < 4; n4++)
#pragma unroll
                for (int i = 0; i < 4; i++) bs[kb][i >> 1] = fmax(bs[kb][i >> 1], s[kb * 4 + n4][i]);
#pragma unroll
            for (int r = 0; r < 2; r++) {
                bs[kb][r] = quad_max(bs[kb][r]) * qf[r]; /* qf > 0 keeps the order */
                mx[r] = fmax(mx[r], bs[kb][r]);
            }
        }
        float mnew[2], msub[2], alpha[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mnew[r] = fmax(m[r], mx[r]);
            msub[r] = mnew[r] == -INFINITY ? 0.0f : mnew[r]; /* all masked so far: exp(-inf - 0) = 0 */
            alpha[r] = mnew[r] == -INFINITY ? 1.0f : EXPS(m[r] - mnew[r]);
        }
        /* ---- P~ = exp(S - m') and each block's exponent (NO_BLOCK: all zero) */
#if !MXA_PNQ
        float sum_t[2] = {0.0f, 0.0f};
#endif
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float p = EXPS(fma(s[nt][i], qf[i >> 1], -msub[i >> 1]));
                s[nt][i] = p;
#if !MXA_PNQ
                sum_t[i >> 1] += p;
#endif
            }
        int pe[NKB][2], hi[2] = {NO_BLOCK, NO_BLOCK}, lo[2] = {-NO_BLOCK, -NO_BLOCK};
        uint exb[NKB][2];
        float sat[NKB][2];
#pragma unroll
        for (int kb = 0; kb < NKB; kb++)
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const float pm = EXPS(bs[kb][r] - msub[r]);
                exb[kb][r] = mxa_p_exponent_bits(as_uint(pm), p_carry);
                const int e = (int)(exb[kb][r] >> 23) - 127;
                sat[kb][r] = as_float(exb[kb][r] + 0x01400000u); /* 6 x 2^e */
                pe[kb][r] = pm == 0.0f ? NO_BLOCK : e;
                if (pm != 0.0f) {
                    hi[r] = max(hi[r], e);
                    lo[r] = min(lo[r], e);
                }
            }
        /* One int32 chain for the tile's blocks where every row's nonzero blocks lie within
         * 3 binades (codes on the row's unit 2^(hi - 4): |code| <= 96) and no V block of the
         * tile is stored with a factor (prep.cl); otherwise each block on its own unit. */
        int vwide = 0;
#pragma unroll
        for (int kb = 0; kb < NKB; kb++) vwide |= vflag[j0 / 32 + kb] != 0u;
        const int chain = !vwide && warp_all((hi[0] == NO_BLOCK || (hi[0] - lo[0] <= 3 && hi[0] >= -60)) &&
                                             (hi[1] == NO_BLOCK || (hi[1] - lo[1] <= 3 && hi[1] >= -60)));
        /* ---- P^ = MXFP4(P~) per block, as int8 codes of the A fragments of P V:
         * clamping at 6 x 2^e saturates, and adding then subtracting c = 2^(max(binade, e) + 22)
         * rounds to the E2M1 step in that binade, ties to even; code = P^ 2^(1 - unit), an
         * integer <= 96, lands in the low byte of fma(P^, 2^(1 - unit), 1.5 x 2^23). The unit
         * is at least -126, so 2^(1 - unit) is an fp32; only a block whose own exponent is -127
         * (its largest P~ subnormal, 2^-126 below the row's 1) has its codes on twice its unit
         * then, rounding its odd codes by 2^-128 (below the flush-to-zero term of conform's
         * bound) */
        uint pa[NKB][4];
        float fp[NKB][2];
#pragma unroll
        for (int kb = 0; kb < NKB; kb++) {
            float kc[2];
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const int unit = max(chain ? (hi[r] == NO_BLOCK ? 0 : hi[r] - 3) : (pe[kb][r] == NO_BLOCK ? 0 : pe[kb][r]), -126);
                kc[r] = as_float(mxa_pow2_bits(1 - unit));
                fp[kb][r] = mxa_half_pow2(unit);
            }
            uint code[4][4]; /* [n4][i], each in its low byte */
#pragma unroll
            for (int n4 = 0; n4 < 4; n4++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int r = i >> 1;
                    const float pm = fmin(s[kb * 4 + n4][i], sat[kb][r]);
                    const float c = as_float(max(as_uint(pm), exb[kb][r]) & 0x7f800000u);
                    const float x = fma(c, 4194304.0f, pm);
                    const float q = fma(c, -4194304.0f, x);
                    code[n4][i] = as_uint(fma(q, kc[r], BIAS));
                }
            /* reg 0/2: row g, reg 1/3: row g + 8; n-tiles 0,1 then 2,3 of the block */
            pa[kb][0] = prmt(prmt(code[0][0], code[0][1], 0x0040u), prmt(code[1][0], code[1][1], 0x0040u), 0x5410u);
            pa[kb][1] = prmt(prmt(code[0][2], code[0][3], 0x0040u), prmt(code[1][2], code[1][3], 0x0040u), 0x5410u);
            pa[kb][2] = prmt(prmt(code[2][0], code[2][1], 0x0040u), prmt(code[3][0], code[3][1], 0x0040u), 0x5410u);
            pa[kb][3] = prmt(prmt(code[2][2], code[2][3], 0x0040u), prmt(code[3][2], code[3][3], 0x0040u), 0x5410u);
        }
#if MXA_PNQ
        /* the row sums of P^ from mma against ones: whole rows, the same in a quad's lanes */
        float sum_h[2] = {0.0f, 0.0f};
        if (chain) {
            int d[4] = {BIAS_BITS, BIAS_BITS, BIAS_BITS, BIAS_BITS};
#pragma unroll
            for (int kb = 0; kb < NKB; kb++) mma16832_acc(d, pa[kb], (uint2)(0x01010101u, 0x01010101u));
            sum_h[0] = (as_float(d[0]) - BIAS) * fp[0][0];
            sum_h[1] = (as_float(d[2]) - BIAS) * fp[0][1];
        } else {
#pragma unroll
            for (int kb = 0; kb < NKB; kb++) {
                float ones[4];
                mma16832(ones, pa[kb], (uint2)(0x01010101u, 0x01010101u));
                sum_h[0] = fma(ones[0] - BIAS, fp[kb][0], sum_h[0]);
                sum_h[1] = fma(ones[2] - BIAS, fp[kb][1], sum_h[1]);
            }
        }
#endif
#pragma unroll
        for (int r = 0; r < 2; r++) {
            if (mnew[r] == -INFINITY) continue; /* nothing visible yet: state unchanged (P is 0) */
            /* direct: per-lane partial row sums, added over the quad at the end (same alpha for all) */
#if MXA_PNQ
            l[r] = alpha[r] * l[r] + sum_h[r];
#else
            l[r] = alpha[r] * l[r] + sum_t[r];
#endif
            m[r] = mnew[r];
        }
        /* ---- O = alpha O + P^ V^ (O in units of each column's V unit, applied at the end) */
        if (alpha[0] != 1.0f || alpha[1] != 1.0f) { /* once the maxima settle, most tiles skip this */
#pragma unroll
            for (int ct = 0; ct < CT; ct++) {
                acc[ct][0] *= alpha[0];
                acc[ct][1] *= alpha[0];
                acc[ct][2] *= alpha[1];
                acc[ct][3] *= alpha[1];
            }
        }
        if (chain) { /* one int32 sum over the tile's keys per element: |sum| < 2^22 */
#pragma unroll
            for (int ct = 0; ct < CT; ct++) {
                int d[4] = {BIAS_BITS, BIAS_BITS, BIAS_BITS, BIAS_BITS};
#pragma unroll
                for (int kb = 0; kb < NKB; kb++) mma16832_acc(d, pa[kb], vload2(0, vs + (ct * 8 + g) * VPITCH + kb * 8 + 2 * t));
                acc[ct][0] = fma(as_float(d[0]) - BIAS, fp[0][0], acc[ct][0]);
                acc[ct][1] = fma(as_float(d[1]) - BIAS, fp[0][0], acc[ct][1]);
                acc[ct][2] = fma(as_float(d[2]) - BIAS, fp[0][1], acc[ct][2]);
                acc[ct][3] = fma(as_float(d[3]) - BIAS, fp[0][1], acc[ct][3]);
            }
        } else { /* each block on its own P unit, times its V factors */
#pragma unroll
            for (int kb = 0; kb < NKB; kb++)
#pragma unroll
                for (int ct = 0; ct < CT; ct++) {
                    float c[4];
                    mma16832(c, pa[kb], vload2(0, vs + (ct * 8 + g) * VPITCH + kb * 8 + 2 * t));
                    const float2 fv = vload2(0, vf + kb * MXA_D + ct * 8 + 2 * t);
                    const float nb0 = -BIAS * fp[kb][0], nb1 = -BIAS * fp[kb][1];
                    acc[ct][0] = fma(fma(c[0], fp[kb][0], nb0), fv.x, acc[ct][0]);
                    acc[ct][1] = fma(fma(c[1], fp[kb][0], nb0), fv.y, acc[ct][1]);
                    acc[ct][2] = fma(fma(c[2], fp[kb][1], nb1), fv.x, acc[ct][2]);
                    acc[ct][3] = fma(fma(c[3], fp[kb][1], nb1), fv.y, acc[ct][3]);
                }
        }
    }
    /* ---- O = O~ / l; rows that saw no key give 0 and LSE = -inf */
#if MXA_PNQ
    const float lt[2] = {l[0], l[1]};
#else
    const float lt[2] = {quad_sum(l[0]), quad_sum(l[1])};
#endif
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = r ? rb : ra;
        if (row >= nq) continue;
        const size_t dst = o_off + ((size_t)bh * nq + row) * MXA_D + 2 * t;
#pragma unroll
        for (int ct = 0; ct < CT; ct++) {
            /* the column's unit 2^(E - 4) (0 for a column with no nonzero block) */
            const uint c0 = vcol[ct * 8 + 2 * t], c1 = vcol[ct * 8 + 2 * t + 1];
            const float u0 = c0 ? mxa_half_pow2((int)c0 - 131) : 0.0f, u1 = c1 ? mxa_half_pow2((int)c1 - 131) : 0.0f;
            mxa_store_out(o, dst + ct * 8, lt[r] != 0.0f ? acc[ct][2 * r] * u0 / lt[r] : 0.0f);
            mxa_store_out(o, dst + ct * 8 + 1, lt[r] != 0.0f ? acc[ct][2 * r + 1] * u1 / lt[r] : 0.0f);
        }
        if (has_lse && t == 0) lse[lse_off + (size_t)bh * nq + row] = lt[r] != 0.0f ? M_TO_NATURAL(m[r]) + log(lt[r]) : -INFINITY;
    }
}
