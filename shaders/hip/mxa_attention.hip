/*
 * MXAttention forward (SPEC §2 steps 3-5) over the prepared operands of
 * mxa_prep.hip. Compile-time options (the host passes them to hiprtc):
 *   -DMXA_D=<32..256>     head size
 *   -DMXA_BC=<n>          key-tile size (multiple of 32)
 *   -DMXA_VARIANT=<id>    MXA_HIP_VARIANT_SCALAR | _MFMA_I8 | _MFMA_FP4
 *   -DMXA_MFMA_K16=1      int8 MFMA with K=16 (gfx94x/gfx950; else K=8, gfx908/gfx90a)
 *   -DMXA_EXTRAS=1        reads the bias, mask and key lengths (docs/attention-inputs.md);
 *                         the 0 build, the usual call, has none of their loads
 *   -DMXA_OUT=<id>        output type MXA_HIP_OUT_F32 (default) | _F16 | _BF16 (a run-time
 *                         choice made the MFMA epilogue spill: one program per type)
 * Everything else (recipe switches, shapes, causal alignment) is a run-time argument.
 *
 * The scalar variant: one workgroup per query row, following
 * runtime/reference.c operation by operation (the same fp32 operations in the
 * same order), so its only difference from the reference is the device's
 * expf/logf. The MFMA variants live in mxa_attn_mfma.h.
 */
#include "mxa_hip_prelude.h"
#include "mxa_hip_args.h"
#include "mxa_hip_format.h"
#include "mxa_hip_half.h"

#ifndef MXA_EXTRAS
#define MXA_EXTRAS 0
#endif
#ifndef MXA_OUT
#define MXA_OUT MXA_HIP_OUT_F32
#endif
#ifndef MXA_D
#error "MXA_D is required"
#endif
#ifndef MXA_BC
#error "MXA_BC is required"
#endif
#ifndef MXA_VARIANT
#define MXA_VARIANT MXA_HIP_VARIANT_SCALAR
#endif
#if MXA_D % 32 != 0 || MXA_D > 256 || MXA_BC % 32 != 0 || MXA_BC <= 0
#error "bad MXA_D or MXA_BC"
#endif

#define MXA_DB (MXA_D / 32) /* blocks along D */

/* Element `at` of the output, as MXA_OUT. */
MXA_DEV void mxa_store_out(unsigned long long out, long long at, float x)
{
#if MXA_OUT == MXA_HIP_OUT_F32
    ((float *)out)[at] = x;
#elif MXA_OUT == MXA_HIP_OUT_F16
    ((mxa_u16 *)out)[at] = mxa_f16_bits(x);
#else
    ((mxa_u16 *)out)[at] = mxa_bf16_bits(x);
#endif
}

/* Keys batch `bb` has: its key length, or all nk. */
MXA_DEV int mxa_batch_keys(const mxa_hip_attn_args &a, int bb)
{
#if MXA_EXTRAS
    if (a.key_lengths) return ((const int *)a.key_lengths)[bb];
#else
    (void)bb;
#endif
    return a.nk;
}

/* The last key query row i may see of the nk its batch has (it sees none below 0). */
MXA_DEV long long mxa_last_visible(const mxa_hip_attn_args &a, long long i, int nk)
{
    if (a.flags & MXA_HIP_CAUSAL) return i + nk - a.nq;
    if (a.flags & MXA_HIP_CAUSAL_TOP_LEFT) return i;
    return nk - 1;
}

#if MXA_EXTRAS
/* Row i's bias and mask (nk entries each, or NULL) for batch bb, head hh. */
MXA_DEV const float *mxa_bias_row(const mxa_hip_attn_args &a, int bb, int hh, long long i)
{
    return a.bias ? (const float *)a.bias + bb * a.bias_bstride + hh * a.bias_hstride + i * a.nk : 0;
}
MXA_DEV const mxa_u8 *mxa_mask_row(const mxa_hip_attn_args &a, int bb, int hh, long long i)
{
    return a.mask ? (const mxa_u8 *)a.mask + bb * a.mask_bstride + hh * a.mask_hstride + i * a.nk : 0;
}
#endif

#if MXA_VARIANT == MXA_HIP_VARIANT_SCALAR

#define MXA_T MXA_HIP_SCALAR_THREADS
#define MXA_CPT ((MXA_D + MXA_T - 1) / MXA_T) /* output columns per thread */

/* Scores: block `blk` of query row `qr` against key row `kr` (reference block_dot). */
MXA_DEV float mxa_qk_block(const mxa_hip_attn_args &a, long long qr, long long kr, int blk)
{
    if (a.flags & MXA_HIP_Q_QK) {
        const mxa_u8 *qc = (const mxa_u8 *)a.q_codes + (qr * MXA_DB + blk) * 16;
        const mxa_u8 *kc = (const mxa_u8 *)a.k_codes + (kr * MXA_DB + blk) * 16;
        int sum = 0;
        for (int i = 0; i < 32; i++) sum += mxa_twice(mxa_nibble(qc, i)) * mxa_twice(mxa_nibble(kc, i));
        return mxa_scale_int(sum, ((const mxa_u8 *)a.q_scales)[qr * MXA_DB + blk],
                             ((const mxa_u8 *)a.k_scales)[kr * MXA_DB + blk]);
    }
    const float *x = (const float *)a.q_f32 + qr * MXA_D + blk * 32;
    const float *y = (const float *)a.k_f32 + kr * MXA_D + blk * 32;
    float sum = 0.0f;
    for (int i = 0; i < 32; i++) sum += x[i] * y[i];
    return sum;
}

/* P V: tile block `blk` of P (in LDS) against V^T row `vr`, token block `kblk`. */
MXA_DEV float mxa_pv_block(const mxa_hip_attn_args &a, const float *pval, const mxa_i8 *ptw,
                           const int *pscale, int blk, long long vr, int kblk)
{
    const long long at = vr * a.kblocks + kblk;
    if ((a.flags & MXA_HIP_Q_P) && (a.flags & MXA_HIP_Q_V)) {
        const mxa_u8 *vc = (const mxa_u8 *)a.v_codes + at * 16;
        int sum = 0;
        for (int i = 0; i < 32; i++) sum += (int)ptw[blk * 32 + i] * mxa_twice(mxa_nibble(vc, i));
        return mxa_scale_int(sum, pscale[blk], ((const mxa_u8 *)a.v_scales)[at]);
    }
    float sum = 0.0f;
    if (a.flags & MXA_HIP_Q_V) {
        const mxa_u8 *vc = (const mxa_u8 *)a.v_codes + at * 16;
        const int vs = ((const mxa_u8 *)a.v_scales)[at];
        for (int i = 0; i < 32; i++) sum += pval[blk * 32 + i] * mxa_decode(mxa_nibble(vc, i), vs);
    } else {
        const float *v = (const float *)a.v_f32 + at * 32;
        for (int i = 0; i < 32; i++) sum += pval[blk * 32 + i] * v[i];
    }
    return sum;
}

MXA_KERNEL void mxa_attention(mxa_hip_attn_args a)
{
    MXA_SHARED float s[MXA_BC];    /* scores, then P~ in place */
    MXA_SHARED float pval[MXA_BC]; /* P^ decoded (or P~ when P is not quantized) */
    MXA_SHARED mxa_i8 ptw[MXA_BC]; /* P^ as 2 x E2M1 integers */
    MXA_SHARED int pscale[MXA_BC / 32];
    MXA_SHARED float sh_alpha, sh_mnew, sh_l;

    const int t = MXA_TID();
    const long long i = MXA_BID_X();
    const int hh = MXA_BID_Y(), bb = MXA_BID_Z();
    const int kvh = hh / (a.h / a.hkv);
    const long long qr = ((long long)bb * a.h + hh) * a.nq + i;
    const long long kr0 = ((long long)bb * a.hkv + kvh) * a.nk;
    const long long vr0 = ((long long)bb * a.hkv + kvh) * MXA_D;
    const int nk = mxa_batch_keys(a, bb); /* kr0 and the bias rows keep the stride a.nk */
    const long long last_visible = mxa_last_visible(a, i, nk);
#if MXA_EXTRAS
    const float *bias = mxa_bias_row(a, bb, hh, i);
    const mxa_u8 *mask = mxa_mask_row(a, bb, hh, i);
#endif
    const int qp = (a.flags & MXA_HIP_Q_P) != 0;
    const int use_hat = (a.flags & MXA_HIP_PNQ) || !qp;

    float acc[MXA_CPT];
    for (int k = 0; k < MXA_CPT; k++) acc[k] = 0.0f;
    float m = -MXA_INF;
    if (t == 0) sh_l = 0.0f;

    for (int j0 = 0; j0 < nk; j0 += MXA_BC) {
        const int len = nk - j0 < MXA_BC ? nk - j0 : MXA_BC;
        const int nblk = (len + 31) / 32;
        for (int j = t; j < len; j += MXA_T) {
#if MXA_EXTRAS
            const int hidden = mask && !mask[j0 + j];
#else
            const int hidden = 0;
#endif
            if (j0 + j > last_visible || hidden) {
                s[j] = -MXA_INF;
                continue;
            }
            float dot = 0.0f;
            for (int blk = 0; blk < MXA_DB; blk++) dot += mxa_qk_block(a, qr, kr0 + j0 + j, blk);
            s[j] = dot * a.scale;
#if MXA_EXTRAS
            if (bias) s[j] += bias[j0 + j]; /* one fp32 addition, as the reference */
#endif
        }
        MXA_SYNC();
        if (t == 0) {
            float tile_max = -MXA_INF;
            for (int j = 0; j < len; j++)
                if (s[j] > tile_max) tile_max = s[j];
            const float m_new = tile_max > m ? tile_max : m;
            sh_mnew = m_new;
            sh_alpha = m_new == -MXA_INF ? 1.0f : MXA_EXPF(m - m_new);
        }
        MXA_SYNC();
        const float m_new = sh_mnew, alpha = sh_alpha;
        if (m_new == -MXA_INF) continue; /* nothing visible yet: the reference skips the tile */
        for (int j = t; j < nblk * 32; j += MXA_T)
            s[j] = (j < len && s[j] != -MXA_INF) ? MXA_EXPF(s[j] - m_new) : 0.0f;
        MXA_SYNC();
        for (int blk = t; blk < nblk; blk += MXA_T) {
            if (qp) {
                mxa_u8 codes[32];
                const int sc = mxa_quantize32(s + blk * 32, a.rule_ceil, a.q, codes);
                pscale[blk] = sc;
                for (int e = 0; e < 32; e++) {
                    ptw[blk * 32 + e] = (mxa_i8)mxa_twice(codes[e]);
                    pval[blk * 32 + e] = mxa_decode(codes[e], sc);
                }
            } else {
                for (int e = 0; e < 32; e++) pval[blk * 32 + e] = s[blk * 32 + e];
            }
        }
        MXA_SYNC();
        if (t == 0) {
            float sum_tilde = 0.0f, sum_hat = 0.0f;
            for (int j = 0; j < len; j++) sum_tilde += s[j];
            for (int j = 0; j < len; j++) sum_hat += pval[j];
            sh_l = alpha * sh_l + (use_hat ? sum_hat : sum_tilde);
        }
        for (int k = 0; k < MXA_CPT; k++) {
            const int c = t + k * MXA_T;
            if (c >= MXA_D) break;
            float pv = 0.0f;
            for (int blk = 0; blk < nblk; blk++)
                pv += mxa_pv_block(a, pval, ptw, pscale, blk, vr0 + c, j0 / 32 + blk);
            acc[k] = alpha * acc[k] + pv;
        }
        m = m_new;
        MXA_SYNC();
    }
    MXA_SYNC();
    const float l = sh_l;
    const int empty = l == 0.0f && m == -MXA_INF;
    for (int k = 0; k < MXA_CPT; k++) {
        const int c = t + k * MXA_T;
        if (c < MXA_D) mxa_store_out(a.o, qr * MXA_D + c, empty ? 0.0f : acc[k] / l);
    }
    if (t == 0) ((float *)a.lse)[qr] = empty ? -MXA_INF : m + MXA_LOGF(l);
}

#else
#include "mxa_attn_mfma.h"
#endif
