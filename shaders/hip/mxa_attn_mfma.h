/*
 * The matrix-core variants of mxa_attention (included by mxa_attention.hip).
 * One wavefront per workgroup owns 32 query rows of one (batch, head):
 *   S:   per 32-key block, a 32x32 tile from the matrix unit;
 *   softmax: lanes 0-31 each run one row's online softmax serially over the
 *        tile (max, exp, P^ = MXFP4(P~) per 32 keys, row sums), as the reference;
 *   P V: per 32 output columns, a 32x32 tile, then O~ = alpha O~ + P^ V^.
 * MFMA_I8 (gfx908/gfx90a/gfx94x): each 32-element block product is an exact
 *   int32 tile (E2M1 x 2 are integers), scaled by 2^(sa + sb - 2) and summed in
 *   fp32 in block order: the reference's operations exactly.
 * MFMA_FP4 (gfx950): the scaled MXFP4 instruction consumes the packed codes and
 *   E8M0 scales as stored, two blocks per instruction; the hardware sums the
 *   block products, so only fp32 summation order differs from the reference.
 * Both need Q/K, V and P all quantized (the host picks the scalar variant otherwise).
 */
#include "mxa_hip_mfma.h"

#if MXA_BC > 256
#error "the MFMA variants keep a 32 x MXA_BC score tile in LDS: MXA_BC <= 256"
#endif

#define MXA_NKB (MXA_BC / 32)

#if MXA_VARIANT == MXA_HIP_VARIANT_MFMA_I8
#define MXA_LANE_ELEMS (MXA_I8_K / 2) /* int8 per lane per instruction */
#define MXA_CHUNKS (32 / MXA_I8_K)    /* instructions per 32-element block */

/* The lane's int8 operand: twice-E2M1 of elements e .. e + MXA_LANE_ELEMS of a packed block. */
MXA_DEV mxa_i8op mxa_twice_op(const mxa_u8 *packed, int e)
{
    mxa_i8op r = 0;
    for (int n = 0; n < MXA_LANE_ELEMS; n++) {
        const mxa_u8 byte = (mxa_u8)(mxa_i8)mxa_twice(mxa_nibble(packed, e + n));
        r |= (mxa_i8op)byte << (8 * n);
    }
    return r;
}
#else
#define MXA_PAIRS ((MXA_DB + 1) / 2) /* scaled instructions along D (K = 64) */

/* 16 bytes (one packed MX block) as the low half of an 8-dword operand. */
MXA_DEV mxa_v8i mxa_fp4_op(const mxa_u8 *packed)
{
    mxa_v8i r = {};
    mxa_u32 w[4];
    __builtin_memcpy(w, packed, 16);
    for (int n = 0; n < 4; n++) r[n] = (int)w[n];
    return r;
}
#endif

MXA_KERNEL void mxa_attention(mxa_hip_attn_args a)
{
    MXA_SHARED float s[32][MXA_BC]; /* scores, then P~ in place */
    MXA_SHARED int psc[32][MXA_NKB]; /* P^ scale bytes */
#if MXA_VARIANT == MXA_HIP_VARIANT_MFMA_I8
    MXA_SHARED int qsc[32][MXA_DB];     /* Q^ scale bytes */
    MXA_SHARED mxa_i8 ptw[32][MXA_BC];  /* P^ as 2 x E2M1 integers */
#else
    MXA_SHARED mxa_u8 pcodes[32][MXA_BC / 2]; /* P^ packed */
#endif
    MXA_SHARED float alpha_sh[32], l_sh[32], m_sh[32];

    const int lane = MXA_TID(), l32 = lane & 31, half = lane >> 5;
    const long long i0 = MXA_BID_X() * 32;
    const int hh = MXA_BID_Y(), bb = MXA_BID_Z();
    const int kvh = hh / (a.h / a.hkv);
    const long long qr0 = ((long long)bb * a.h + hh) * a.nq;
    const long long kr0 = ((long long)bb * a.hkv + kvh) * a.nk;
    const long long vr0 = ((long long)bb * a.hkv + kvh) * MXA_D;
    const int nk = mxa_batch_keys(a, bb); /* kr0 and the bias rows keep the stride a.nk */
    const int use_hat = (a.flags & MXA_HIP_PNQ) != 0; /* P is always quantized here */
    const mxa_u8 *qcodes = (const mxa_u8 *)a.q_codes, *qscales = (const mxa_u8 *)a.q_scales;
    const mxa_u8 *kcodes = (const mxa_u8 *)a.k_codes, *kscales = (const mxa_u8 *)a.k_scales;
    const mxa_u8 *vcodes = (const mxa_u8 *)a.v_codes, *vscales = (const mxa_u8 *)a.v_scales;

    /* Q^ operands stay in registers for the whole key loop. */
    const long long qrow = i0 + l32;
    const int qvalid = qrow < a.nq;
#if MXA_VARIANT == MXA_HIP_VARIANT_MFMA_I8
    mxa_i8op qa[MXA_DB][MXA_CHUNKS];
    for (int blk = 0; blk < MXA_DB; blk++)
        for (int kk = 0; kk < MXA_CHUNKS; kk++)
            qa[blk][kk] = qvalid ? mxa_twice_op(qcodes + ((qr0 + qrow) * MXA_DB + blk) * 16,
                                                kk * MXA_I8_K + half * MXA_LANE_ELEMS)
                                 : 0;
    if (lane < 32)
        for (int blk = 0; blk < MXA_DB; blk++)
            qsc[lane][blk] = qvalid ? qscales[(qr0 + qrow) * MXA_DB + blk] : 127;
#else
    mxa_v8i qa[MXA_PAIRS];
    int qsa[MXA_PAIRS];
    for (int p = 0; p < MXA_PAIRS; p++) {
        const int blk = 2 * p + half;
        const int ok = qvalid && blk < MXA_DB;
        qa[p] = ok ? mxa_fp4_op(qcodes + ((qr0 + qrow) * MXA_DB + blk) * 16) : (mxa_v8i){};
        qsa[p] = ok ? qscales[(qr0 + qrow) * MXA_DB + blk] : 127;
    }
#endif
    if (lane < 32) {
        m_sh[lane] = -MXA_INF;
        l_sh[lane] = 0.0f;
    }
    float acc[MXA_DB][16];
    for (int dc = 0; dc < MXA_DB; dc++)
        for (int e = 0; e < 16; e++) acc[dc][e] = 0.0f;

    /* Keys past the last row's last visible key change nothing (alpha = 1, P = 0). */
    const long long last_row = (i0 + 31 < a.nq ? i0 + 31 : a.nq - 1);
    long long kend = mxa_last_visible(a, last_row, nk) + 1;
    if (kend > nk) kend = nk;
    MXA_SYNC();

    for (int j0 = 0; j0 < kend; j0 += MXA_BC) {
        const int len = nk - j0 < MXA_BC ? nk - j0 : MXA_BC;
        const int nblk = (len + 31) / 32;
        /* ---- S = Q^ K^T * scale, masked */
        for (int kb = 0; kb < nblk; kb++) {
            const long long key = j0 + kb * 32 + l32;
            const int kvalid = key < nk;
            const long long krow = kr0 + key;
            float sf[16];
#if MXA_VARIANT == MXA_HIP_VARIANT_MFMA_I8
            for (int e = 0; e < 16; e++) sf[e] = 0.0f;
            for (int blk = 0; blk < MXA_DB; blk++) {
                mxa_v16i it = {};
                const int ks = kvalid ? kscales[krow * MXA_DB + blk] : 127;
                for (int kk = 0; kk < MXA_CHUNKS; kk++) {
                    const mxa_i8op b = kvalid ? mxa_twice_op(kcodes + (krow * MXA_DB + blk) * 16,
                                                             kk * MXA_I8_K + half * MXA_LANE_ELEMS)
                                              : 0;
                    it = mxa_mfma_i8(qa[blk][kk], b, it);
                }
                for (int e = 0; e < 16; e++) sf[e] += mxa_scale_int(it[e], qsc[mxa_mfma_row(e, lane)][blk], ks);
            }
#else
            mxa_v16f t = {};
            for (int p = 0; p < MXA_PAIRS; p++) {
                const int blk = 2 * p + half;
                const int ok = kvalid && blk < MXA_DB;
                const mxa_v8i b = ok ? mxa_fp4_op(kcodes + (krow * MXA_DB + blk) * 16) : (mxa_v8i){};
                t = mxa_mfma_fp4(qa[p], b, t, qsa[p], ok ? kscales[krow * MXA_DB + blk] : 127);
            }
            for (int e = 0; e < 16; e++) sf[e] = t[e];
#endif
            for (int e = 0; e < 16; e++) {
                const int r = mxa_mfma_row(e, lane);
                const long long qi = i0 + r;
                int hidden = !kvalid || qi >= a.nq || key > mxa_last_visible(a, qi, nk);
#if MXA_EXTRAS
                const mxa_u8 *mask = hidden ? 0 : mxa_mask_row(a, bb, hh, qi);
                hidden = hidden || (mask && !mask[key]);
                const float *bias = hidden ? 0 : mxa_bias_row(a, bb, hh, qi);
                s[r][kb * 32 + l32] = hidden ? -MXA_INF : bias ? sf[e] * a.scale + bias[key] : sf[e] * a.scale;
#else
                s[r][kb * 32 + l32] = hidden ? -MXA_INF : sf[e] * a.scale;
#endif
            }
        }
        MXA_SYNC();
        /* ---- online softmax, one row per lane (SPEC §2 step 4) */
        if (lane < 32) {
            float *sr = s[lane];
            float tile_max = -MXA_INF;
            for (int j = 0; j < len; j++)
                if (sr[j] > tile_max) tile_max = sr[j];
            const float m = m_sh[lane];
            const float m_new = tile_max > m ? tile_max : m;
            if (m_new == -MXA_INF) {
                /* Nothing visible yet: alpha = 1 and P^ = 0 leave O~ exactly as it is. */
                alpha_sh[lane] = 1.0f;
                for (int blk = 0; blk < nblk; blk++) {
                    psc[lane][blk] = 127;
                    for (int e = 0; e < 32; e++) {
#if MXA_VARIANT == MXA_HIP_VARIANT_MFMA_I8
                        ptw[lane][blk * 32 + e] = 0;
#else
                        if (!(e & 1)) pcodes[lane][blk * 16 + e / 2] = 0;
#endif
                    }
                }
            } else {
                const float alpha = MXA_EXPF(m - m_new);
                float sum_tilde = 0.0f, sum_hat = 0.0f;
                for (int j = 0; j < nblk * 32; j++) {
                    sr[j] = (j < len && sr[j] != -MXA_INF) ? MXA_EXPF(sr[j] - m_new) : 0.0f;
                    if (j < len) sum_tilde += sr[j];
                }
                for (int blk = 0; blk < nblk; blk++) {
                    mxa_u8 codes[32];
                    const int sc = mxa_quantize32(sr + blk * 32, a.rule_ceil, a.q, codes);
                    psc[lane][blk] = sc;
                    for (int e = 0; e < 32; e++) {
                        if (blk * 32 + e < len) sum_hat += mxa_decode(codes[e], sc);
#if MXA_VARIANT == MXA_HIP_VARIANT_MFMA_I8
                        ptw[lane][blk * 32 + e] = (mxa_i8)mxa_twice(codes[e]);
#else
                        if (!(e & 1)) pcodes[lane][blk * 16 + e / 2] = (mxa_u8)(codes[e] | (codes[e + 1] << 4));
#endif
                    }
                }
                alpha_sh[lane] = alpha;
                l_sh[lane] = alpha * l_sh[lane] + (use_hat ? sum_hat : sum_tilde);
                m_sh[lane] = m_new;
            }
        }
        MXA_SYNC();
        /* ---- O~ = alpha O~ + P^ V^ */
        for (int dc = 0; dc < MXA_DB; dc++) {
            const long long vrow = vr0 + dc * 32 + l32;
            float pv[16];
#if MXA_VARIANT == MXA_HIP_VARIANT_MFMA_I8
            for (int e = 0; e < 16; e++) pv[e] = 0.0f;
            for (int kb = 0; kb < nblk; kb++) {
                const long long vat = vrow * a.kblocks + j0 / 32 + kb;
                const int vs = vscales[vat];
                mxa_v16i it = {};
                for (int kk = 0; kk < MXA_CHUNKS; kk++) {
                    const int e0 = kk * MXA_I8_K + half * MXA_LANE_ELEMS;
                    mxa_i8op pa;
                    __builtin_memcpy(&pa, &ptw[l32][kb * 32 + e0], sizeof pa);
                    it = mxa_mfma_i8(pa, mxa_twice_op(vcodes + vat * 16, e0), it);
                }
                for (int e = 0; e < 16; e++) pv[e] += mxa_scale_int(it[e], psc[mxa_mfma_row(e, lane)][kb], vs);
            }
#else
            mxa_v16f t = {};
            for (int p = 0; p < (nblk + 1) / 2; p++) {
                const int kb = 2 * p + half;
                const int ok = kb < nblk;
                const long long vat = vrow * a.kblocks + j0 / 32 + kb;
                const mxa_v8i pa = ok ? mxa_fp4_op(&pcodes[l32][kb * 16]) : (mxa_v8i){};
                const mxa_v8i vb = ok ? mxa_fp4_op(vcodes + vat * 16) : (mxa_v8i){};
                t = mxa_mfma_fp4(pa, vb, t, ok ? psc[l32][kb] : 127, ok ? vscales[vat] : 127);
            }
            for (int e = 0; e < 16; e++) pv[e] = t[e];
#endif
            for (int e = 0; e < 16; e++) acc[dc][e] = alpha_sh[mxa_mfma_row(e, lane)] * acc[dc][e] + pv[e];
        }
        MXA_SYNC();
    }

    /* ---- O = O~ / l, LSE = m + ln l (SPEC §2 step 5) */
    for (int e = 0; e < 16; e++) {
        const int r = mxa_mfma_row(e, lane);
        const long long qi = i0 + r;
        if (qi >= a.nq) continue;
        const float l = l_sh[r], m = m_sh[r];
        const int empty = l == 0.0f && m == -MXA_INF;
        const long long at = (qr0 + qi) * MXA_D + l32;
        for (int dc = 0; dc < MXA_DB; dc++) mxa_store_out(a.o, at + dc * 32, empty ? 0.0f : acc[dc][e] / l);
    }
    if (lane < 32 && qvalid) {
        const float l = l_sh[lane], m = m_sh[lane];
        ((float *)a.lse)[qr0 + qrow] = (l == 0.0f && m == -MXA_INF) ? -MXA_INF : m + MXA_LOGF(l);
    }
}
