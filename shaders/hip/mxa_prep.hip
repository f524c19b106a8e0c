/*
 * Rotation and quantization (SPEC §2 steps 1-2, and mxa_quantize).
 *   mxa_quantize_rows: one thread per 32-element block of a row.
 *   mxa_prep_qk:       one workgroup per row of Q or K: Walsh-Hadamard in LDS
 *                      (the reference's butterfly order, so identical fp32
 *                      results), then MXFP4 blocks along D.
 *   mxa_prep_v:        one thread per (head, column, token block): V^T blocks
 *                      along the token axis, keys beyond nk (or the batch's key
 *                      length) are zero padding.
 * Compiled once per device: no -D options.
 */
#include "mxa_hip_prelude.h"
#include "mxa_hip_args.h"
#include "mxa_hip_format.h"

/* Packs 32 codes and stores them with their scale. */
MXA_DEV void mxa_store_block(const mxa_u8 *codes, int scale, mxa_u8 *dst_codes, mxa_u8 *dst_scale)
{
    for (int i = 0; i < 16; i++) dst_codes[i] = (mxa_u8)(codes[2 * i] | (codes[2 * i + 1] << 4));
    *dst_scale = (mxa_u8)scale;
}

MXA_KERNEL void mxa_quantize_rows(mxa_hip_quant_args a)
{
    const long long id = MXA_BID_X() * MXA_HIP_QUANT_THREADS + MXA_TID();
    if (id >= a.rows * a.nblocks) return;
    const long long row = id / a.nblocks;
    const int blk = (int)(id % a.nblocks);
    const float *src = (const float *)a.src + row * a.cols + blk * 32;
    const int n = a.cols - blk * 32 < 32 ? a.cols - blk * 32 : 32;
    float x[32];
    mxa_u8 codes[32];
    for (int i = 0; i < 32; i++) x[i] = i < n ? src[i] : 0.0f;
    const int scale = mxa_quantize32(x, a.rule_ceil, a.q, codes);
    mxa_store_block(codes, scale, (mxa_u8 *)a.codes + id * 16, (mxa_u8 *)a.scales + id);
}

MXA_KERNEL void mxa_prep_qk(mxa_hip_prep_args a)
{
    MXA_SHARED float row[256];
    const long long r = MXA_BID_X();
    const int t = MXA_TID(), d = a.d;
    const float *src = (const float *)a.src + r * d;
    for (int c = t; c < d; c += MXA_HIP_PREP_THREADS) row[c] = src[c];
    MXA_SYNC();
    if (a.hadamard) {
        /* Stage h pairs (j, j + h) for every j with bit h clear; pairs are
         * independent, so spreading them over threads keeps each result. */
        for (int h = 1; h < d; h *= 2) {
            for (int j = t; j < d; j += MXA_HIP_PREP_THREADS) {
                if (j & h) continue;
                const float x = row[j], y = row[j + h];
                row[j] = x + y;
                row[j + h] = x - y;
            }
            MXA_SYNC();
        }
        for (int c = t; c < d; c += MXA_HIP_PREP_THREADS) row[c] *= a.hnorm;
        MXA_SYNC();
    }
    if (!a.quantize) {
        for (int c = t; c < d; c += MXA_HIP_PREP_THREADS) ((float *)a.f32)[r * d + c] = row[c];
        return;
    }
    const int nblocks = d / 32;
    for (int blk = t; blk < nblocks; blk += MXA_HIP_PREP_THREADS) {
        mxa_u8 codes[32];
        const int scale = mxa_quantize32(row + blk * 32, a.rule_ceil, a.q, codes);
        const long long at = r * nblocks + blk;
        mxa_store_block(codes, scale, (mxa_u8 *)a.codes + at * 16, (mxa_u8 *)a.scales + at);
    }
}

MXA_KERNEL void mxa_prep_v(mxa_hip_prep_args a)
{
    const long long id = MXA_BID_X() * MXA_HIP_PREP_THREADS + MXA_TID();
    const long long per_head = (long long)a.d * a.kblocks;
    if (id >= a.rows * per_head) return;
    const long long head = id / per_head;
    const int c = (int)((id % per_head) / a.kblocks), blk = (int)(id % a.kblocks);
    const float *src = (const float *)a.src + head * a.nk * a.d;
    /* A batch with a key length has only that many tokens: the block holding its
     * last key is zero-padded after it, whatever the padding tokens hold. */
    const int nk = a.key_lengths ? ((const int *)a.key_lengths)[head / a.hkv] : a.nk;
    float x[32];
    for (int i = 0; i < 32; i++) {
        const int token = blk * 32 + i;
        x[i] = token < nk ? src[(long long)token * a.d + c] : 0.0f;
    }
    if (!a.quantize) {
        float *dst = (float *)a.f32 + id * 32;
        for (int i = 0; i < 32; i++) dst[i] = x[i];
        return;
    }
    mxa_u8 codes[32];
    const int scale = mxa_quantize32(x, a.rule_ceil, a.q, codes);
    mxa_store_block(codes, scale, (mxa_u8 *)a.codes + id * 16, (mxa_u8 *)a.scales + id);
}
