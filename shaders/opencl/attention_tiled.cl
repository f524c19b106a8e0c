/*
 * MXAttention forward, portable variant (OpenCL C 1.2, no fp16, no extensions).
 *
 * One work-group of 128 work-items owns BR query rows of one head and walks
 * the keys in tiles of BC (SPEC section 2 step 4, the reference's order).
 * Q, K and V arrive prepared (prep.cl): exact decoded MXFP4 values, Q as
 * [bh][nq_pad][D], K transposed [bh][D][nk_pad], V [bh][nk_pad][D].
 *
 * Exact FP4 products: decoded MXFP4 values are (2 x E2M1) x 2^(e-1) with
 * 2 x E2M1 an integer in [-12, 12], so within one 32-element block every
 * product and partial sum is an integer below 2^13 times one power of two:
 * the fp32 sum of a block is exact (the integer dot product times
 * 2^(ea+eb-2), as the reference computes it). Each block is summed in its own
 * accumulator and then added, like the reference, so the scores match it bit
 * for bit; only exp() and the order of the final additions differ.
 *
 * MXFP8 P V (pv_fp8): P^ in MXFP8 per 32 keys (V^ arrives decoded the same way from
 * prep.cl); E4M3 products are exact in fp32, their block sums round as the reference
 * rounds its exact integer sum once (SPEC-like README section "MXFP8").
 *
 * Compile-time: MXA_D, MXA_BC (key tile), MXA_BR (rows: 32 or 16),
 * MXA_KC / MXA_VC (K rows / V keys staged in local memory at a time), and
 * attention_common.cl's MXA_OUT, MXA_BIAS, MXA_MASK.
 */
#define WG 128
#define TR (MXA_BR / 4)  /* thread rows: each work-item owns 4 query rows */
#define TC (WG / TR)      /* thread columns */
#define SC (MXA_BC / TC)  /* keys per work-item in the score tile */
#define OC (MXA_D / TC)   /* output channels per work-item */
#define NB (MXA_BC / 32)  /* MXFP4 blocks per key tile */
#define SPITCH (MXA_BC + 1)
#define CHUNK_K (MXA_KC * MXA_BC)
#define CHUNK_V (MXA_VC * MXA_D)
#define CHUNK (CHUNK_K > CHUNK_V ? CHUNK_K : CHUNK_V)

/* Keys and channels of a work-item: in groups of 4 adjacent ones (one float4
 * local load, no bank conflicts) when it owns a multiple of 4, else strided. */
#if SC % 4 == 0
#define KEY(j) (((j) >> 2) * (TC * 4) + tx * 4 + ((j) & 3))
#else
#define KEY(j) (tx + TC * (j))
#endif
#if OC % 4 == 0
#define COL(c) (((c) >> 2) * (TC * 4) + tx * 4 + ((c) & 3))
#else
#define COL(c) (tx + TC * (c))
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void mxa_attention_tiled(__global const float *qp, __global const float *kt, __global const float *vp,
                         __global MXA_OUT_T *o, ulong o_off, __global float *lse, int has_lse, int h, int hkv,
                         int nq, int nk, int nq_pad, int nk_pad, float scale, int causal, MXA_EXTRA_PARAMS,
                         int quant_p, int pnq, int ceil_rule, uint thr, int pow2_dec, int pv_fp8)
{
    __local float4 qs4[MXA_D * MXA_BR / 4]; /* Q tile, transposed: [d][row] */
    __local float4 cs4[CHUNK / 4];          /* K rows [kc][key] or V keys [vk][d] */
    __local float ps[MXA_BR * SPITCH];      /* scores, then P, [row][key] */
    __local float m_s[MXA_BR], l_s[MXA_BR], a_s[MXA_BR];
    __local float bmax[MXA_BR * NB], bsum_h[MXA_BR * NB], bsum_t[MXA_BR * NB];
    __local float *qs = (__local float *)qs4;
    __local float *cs = (__local float *)cs4;

    const int tid = get_local_id(0), ty = tid / TC, tx = tid % TC;
    const int row0 = get_group_id(0) * MXA_BR, bh = get_group_id(1);
    const int kvh = (bh / h) * hkv + (bh % h) / (h / hkv);
    qp += ((size_t)bh * nq_pad + row0) * MXA_D;
    kt += (size_t)kvh * MXA_D * nk_pad;
    vp += (size_t)kvh * nk_pad * MXA_D;

    for (int idx = tid; idx < MXA_BR * MXA_D; idx += WG) qs[(idx % MXA_D) * MXA_BR + idx / MXA_D] = qp[idx];
    if (tid < MXA_BR) {
        m_s[tid] = -INFINITY;
        l_s[tid] = 0.0f;
    }
    float acc[4][OC];
    #pragma unroll
    for (int i = 0; i < 4; i++)
        #pragma unroll
        for (int c = 0; c < OC; c++) acc[i][c] = 0.0f;

    /* the keys this batch has, and with causal the last one any row of this group sees */
    const int nkb = mxa_keys_of(klen, has_klen, bh / h, nk), shift = mxa_causal_shift(causal, nkb, nq);
    const mxa_side_rows side = mxa_side_head(bias, bias_off, bias_bs, bias_hs, mask, mask_off, mask_bs, mask_hs, bh, h);
    const int last_row = min(row0 + MXA_BR, nq) - 1;
    const int kend = causal ? clamp(last_row + shift + 1, 0, nkb) : nkb;
    const int ntiles = (kend + MXA_BC - 1) / MXA_BC;

    for (int t = 0; t < ntiles; t++) {
        const int j0 = t * MXA_BC;
        /* ---- S = Q K^T, one exact block of 32 channels at a time */
        float s[4][SC];
        #pragma unroll
        for (int i = 0; i < 4; i++)
            #pragma unroll
            for (int j = 0; j < SC; j++) s[i][j] = 0.0f;
        #pragma unroll
        for (int blk = 0; blk < MXA_D / 32; blk++) {
            float pb[4][SC];
            #pragma unroll
            for (int i = 0; i < 4; i++)
                #pragma unroll
                for (int j = 0; j < SC; j++) pb[i][j] = 0.0f;
            #pragma unroll
            for (int c0 = 0; c0 < 32; c0 += MXA_KC) {
                barrier(CLK_LOCAL_MEM_FENCE);
                for (int idx = tid; idx < CHUNK_K / 4; idx += WG) {
                    const int kc = idx / (MXA_BC / 4), k4 = idx % (MXA_BC / 4);
                    cs4[idx] = vload4(0, kt + (size_t)(blk * 32 + c0 + kc) * nk_pad + j0 + k4 * 4);
                }
                barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
                for (int kc = 0; kc < MXA_KC; kc++) {
                    const float4 q4 = qs4[(blk * 32 + c0 + kc) * (MXA_BR / 4) + ty];
                    const float qv[4] = {q4.x, q4.y, q4.z, q4.w};
                    float kv[SC];
#if SC % 4 == 0
                    #pragma unroll
                    for (int j4 = 0; j4 < SC / 4; j4++) {
                        const float4 k4 = cs4[kc * (MXA_BC / 4) + j4 * TC + tx];
                        kv[4 * j4] = k4.x;
                        kv[4 * j4 + 1] = k4.y;
                        kv[4 * j4 + 2] = k4.z;
                        kv[4 * j4 + 3] = k4.w;
                    }
#else
                    #pragma unroll
                    for (int j = 0; j < SC; j++) kv[j] = cs[kc * MXA_BC + KEY(j)];
#endif
                    #pragma unroll
                    for (int i = 0; i < 4; i++)
                        #pragma unroll
                        for (int j = 0; j < SC; j++) pb[i][j] = mad(qv[i], kv[j], pb[i][j]);
                }
            }
            #pragma unroll
            for (int i = 0; i < 4; i++)
                #pragma unroll
                for (int j = 0; j < SC; j++) s[i][j] += pb[i][j];
        }
        /* ---- scale, bias and mask (hidden keys: P~ = 0 exactly, never a maximum) */
        #pragma unroll
        for (int i = 0; i < 4; i++)
            #pragma unroll
            for (int j = 0; j < SC; j++) {
                const int r = ty * 4 + i, key = KEY(j), kj = j0 + key;
                float x = s[i][j] * scale;
                if (kj >= nkb || (causal && kj > row0 + r + shift)) x = -INFINITY;
                else if (row0 + r < nq) x = mxa_side_apply(x, side, row0 + r, kj, nk, 1.0f);
                ps[r * SPITCH + key] = x;
            }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* ---- online softmax: block maxima, then P~ = exp(S - m') and P^ = MXFP4(P~) */
        for (int p = tid; p < MXA_BR * NB; p += WG) {
            __local const float *sr = ps + (p / NB) * SPITCH + (p % NB) * 32;
            float mx = -INFINITY;
            #pragma unroll
            for (int k = 0; k < 32; k++) mx = fmax(mx, sr[k]);
            bmax[p] = mx;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int p = tid; p < MXA_BR * NB; p += WG) {
            const int r = p / NB;
            float mnew = m_s[r];
            #pragma unroll
            for (int q = 0; q < NB; q++) mnew = fmax(mnew, bmax[r * NB + q]);
            __local float *sr = ps + r * SPITCH + (p % NB) * 32;
            float st = 0.0f;
            uint pm = 0u;
            #pragma unroll
            for (int k = 0; k < 32; k++) {
                const float x = sr[k];
                const float e = x == -INFINITY ? 0.0f : exp(x - mnew);
                sr[k] = e;
                st += e;
                pm = max(pm, as_uint(e));
            }
            float sh = st;
            if (quant_p) {
                const int e = pv_fp8 ? mxa_fp8_exponent(pm) : mxa_exponent(pm, ceil_rule, thr, pow2_dec);
                sh = 0.0f;
                #pragma unroll
                for (int k = 0; k < 32; k++) {
                    const float v = pv_fp8 ? mxa_fp8_decode(mxa_e4m3_code(as_uint(sr[k]), e), 0u, e)
                                           : mxa_decode(mxa_e2m1_code(as_uint(sr[k]), e), 0u, e);
                    sr[k] = v;
                    sh += v;
                }
            }
            bsum_t[p] = st;
            bsum_h[p] = sh;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (tid < MXA_BR) {
            const float mold = m_s[tid];
            float mnew = mold, alpha = 1.0f;
            #pragma unroll
            for (int q = 0; q < NB; q++) mnew = fmax(mnew, bmax[tid * NB + q]);
            if (mnew != -INFINITY) { /* else nothing is visible yet: state unchanged */
                float sh = 0.0f, st = 0.0f;
                #pragma unroll
                for (int q = 0; q < NB; q++) {
                    sh += bsum_h[tid * NB + q];
                    st += bsum_t[tid * NB + q];
                }
                alpha = exp(mold - mnew);
                /* PNQ: l sums the quantized P^; direct placement the unquantized P~ */
                l_s[tid] = alpha * l_s[tid] + ((pnq || !quant_p) ? sh : st);
                m_s[tid] = mnew;
            }
            a_s[tid] = alpha;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* ---- O = alpha O + P^ V^, one exact block of 32 keys at a time */
        #pragma unroll
        for (int i = 0; i < 4; i++) {
            const float a = a_s[ty * 4 + i];
            #pragma unroll
            for (int c = 0; c < OC; c++) acc[i][c] *= a;
        }
        #pragma unroll
        for (int kb = 0; kb < NB; kb++) {
            float ob[4][OC];
            #pragma unroll
            for (int i = 0; i < 4; i++)
                #pragma unroll
                for (int c = 0; c < OC; c++) ob[i][c] = 0.0f;
            #pragma unroll
            for (int v0 = 0; v0 < 32; v0 += MXA_VC) {
                barrier(CLK_LOCAL_MEM_FENCE);
                __global const float4 *src = (__global const float4 *)(vp + (size_t)(j0 + kb * 32 + v0) * MXA_D);
                for (int idx = tid; idx < CHUNK_V / 4; idx += WG) cs4[idx] = src[idx];
                barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
                for (int vk = 0; vk < MXA_VC; vk++) {
                    float pv[4], vv[OC];
                    #pragma unroll
                    for (int i = 0; i < 4; i++) pv[i] = ps[(ty * 4 + i) * SPITCH + kb * 32 + v0 + vk];
#if OC % 4 == 0
                    #pragma unroll
                    for (int c4 = 0; c4 < OC / 4; c4++) {
                        const float4 v4 = cs4[vk * (MXA_D / 4) + c4 * TC + tx];
                        vv[4 * c4] = v4.x;
                        vv[4 * c4 + 1] = v4.y;
                        vv[4 * c4 + 2] = v4.z;
                        vv[4 * c4 + 3] = v4.w;
                    }
#else
                    #pragma unroll
                    for (int c = 0; c < OC; c++) vv[c] = cs[vk * MXA_D + COL(c)];
#endif
                    #pragma unroll
                    for (int i = 0; i < 4; i++)
                        #pragma unroll
                        for (int c = 0; c < OC; c++) ob[i][c] = mad(pv[i], vv[c], ob[i][c]);
                }
            }
            #pragma unroll
            for (int i = 0; i < 4; i++)
                #pragma unroll
                for (int c = 0; c < OC; c++) acc[i][c] += ob[i][c];
        }
    }
    /* ---- O = O~ / l; a row that saw no key gives 0 and LSE = -inf */
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int i = 0; i < 4; i++) {
        const int r = ty * 4 + i, qi = row0 + r;
        if (qi >= nq) continue;
        const float l = l_s[r];
        const size_t dst = o_off + ((size_t)bh * nq + qi) * MXA_D;
        #pragma unroll
        for (int c = 0; c < OC; c++) mxa_store_out(o, dst + COL(c), l != 0.0f ? acc[i][c] / l : 0.0f);
    }
    if (has_lse && tid < MXA_BR && row0 + tid < nq) {
        const float l = l_s[tid];
        lse[lse_off + (size_t)bh * nq + row0 + tid] = l != 0.0f ? m_s[tid] + log(l) : -INFINITY;
    }
}
