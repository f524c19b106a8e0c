/*
 * Quantization kernels: the mxa_quantize operation, and the preparation of
 * Q, K and V for the attention kernels (rotation, MXFP4, padding, layout).
 * Prepared values are the exact decoded MXFP4 numbers (code value x 2^e) in
 * fp32, or for the tensor-core variant the int8 "twice" codes (2 x E2M1,
 * integers in [-12, 12]) and one exponent byte per block.
 */

/* mxa_quantize: one work-item per (block, row). x: rows x cols, contiguous. */
__kernel void mxa_quantize_rows(__global const float *x, ulong x_off, int rows, int cols, int nblocks,
                                int ceil_rule, uint thr, int pow2_dec, __global uchar *codes,
                                __global uchar *scales)
{
    const int blk = get_global_id(0), row = get_global_id(1);
    if (blk >= nblocks || row >= rows) return;
    __global const float *src = x + x_off + (size_t)row * cols + blk * 32;
    const int n = min(32, cols - blk * 32);
    uint maxbits = 0u;
    int finite = 1;
    for (int i = 0; i < n; i++) {
        const uint a = as_uint(src[i]) & 0x7fffffffu;
        if (a >= 0x7f800000u) finite = 0;
        maxbits = max(maxbits, a);
    }
    __global uchar *out = codes + ((size_t)row * nblocks + blk) * 16;
    if (!finite) {
        for (int i = 0; i < 16; i++) out[i] = 0;
        scales[(size_t)row * nblocks + blk] = (uchar)MXA_E8M0_NAN;
        return;
    }
    const int e = mxa_exponent(maxbits, ceil_rule, thr, pow2_dec);
    scales[(size_t)row * nblocks + blk] = (uchar)(e + 127);
    for (int i = 0; i < 16; i++) {
        uint c[2];
        for (int h = 0; h < 2; h++) {
            const int k = 2 * i + h;
            const uint bits = k < n ? as_uint(src[k]) : 0u;
            c[h] = (bits >> 31) << 3 | mxa_e2m1_code(bits & 0x7fffffffu, e);
        }
        out[i] = (uchar)(c[0] | (c[1] << 4));
    }
}

/* Element i of row `row` of head `bh` (0 past n), rotated when `hadamard`:
 * the reference's butterflies h = 1, 2, ..., d/2 of (a + b, a - b), then the fp32
 * factor `norm`. Called by every work-item of the row's work-group (barriers). */
float mxa_load_rotated(__global const float *x, ulong x_off, int n, int row, int bh, int d, int i,
                       float norm, int hadamard, __local float *xs)
{
    float v = 0.0f;
    if (row < n) v = x[x_off + ((size_t)bh * n + row) * d + i];
    if (hadamard) {
        xs[i] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int h = 1; h < d; h *= 2) {
            const float a = xs[i & ~h], b = xs[i | h];
            barrier(CLK_LOCAL_MEM_FENCE);
            v = (i & h) ? a - b : a + b;
            xs[i] = v;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        v = v * norm;
    }
    return v;
}

/* MXFP4 of element i of a row held one element per work-item, v its value
 * (called by every work-item of the row's work-group: barriers). Leaves the
 * largest |x| bits of each 32-element block in bmax, its block's shared
 * exponent in *e, and returns the E2M1 code of |v| under *e. bmax >= 0x7f800000:
 * the block is not finite, and *e and the code mean nothing. One helper, so the
 * fp32 and the int8 Q/K prep quantize alike. */
uint mxa_quantize_in_row(float v, int i, int ceil_rule, uint thr, int pow2_dec, __local float *xs,
                         __local uint *bmax, int *e)
{
    const uint a = as_uint(v) & 0x7fffffffu;
    xs[i] = as_float(a);
    barrier(CLK_LOCAL_MEM_FENCE);
    if ((i & 31) == 0) {
        uint m = 0u;
        for (int k = 0; k < 32; k++) m = max(m, as_uint(xs[i + k]));
        bmax[i >> 5] = m;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    *e = mxa_exponent(bmax[i >> 5], ceil_rule, thr, pow2_dec);
    return mxa_e2m1_code(a, *e);
}

/*
 * Q or K rows: optional Walsh-Hadamard rotation (SPEC section 2 step 1, in
 * the reference's order: stages h = 1, 2, ..., D/2 of (a + b, a - b), then the
 * fp32 factor `norm`), then optional MXFP4 along D.
 * Work-group = one row, D work-items; global (D * n_pad, B*H). Rows >= n are
 * zero padding. transpose = 1 writes [bh][D][n_pad] instead of [bh][n_pad][D].
 */
__kernel void mxa_prep_qk(__global const float *x, ulong x_off, int n, int n_pad, float norm, int hadamard,
                          int quant, int ceil_rule, uint thr, int pow2_dec, int transpose,
                          __global float *out)
{
    __local float xs[256];
    __local uint bmax[8];
    const int i = get_local_id(0), d = get_local_size(0);
    const int row = get_group_id(0), bh = get_group_id(1);
    float v = mxa_load_rotated(x, x_off, n, row, bh, d, i, norm, hadamard, xs);
    if (quant) {
        int e;
        const uint code = mxa_quantize_in_row(v, i, ceil_rule, thr, pow2_dec, xs, bmax, &e);
        v = bmax[i >> 5] >= 0x7f800000u ? NAN : mxa_decode(code, as_uint(v) >> 31, e);
    }
    if (transpose) out[((size_t)bh * d + i) * n_pad + row] = v;
    else out[((size_t)bh * n_pad + row) * d + i] = v;
}

/*
 * V: optional MXFP4 along the token axis (blocks of 32 keys per channel).
 * One work-item per (channel, key block); global (D, n_pad / 32, B*Hkv).
 * Output [bh][n_pad][D], keys >= n zero.
 */
__kernel void mxa_prep_v(__global const float *x, ulong x_off, int n, int n_pad, int d, int quant,
                         int ceil_rule, uint thr, int pow2_dec, __global float *out)
{
    const int c = get_global_id(0), blk = get_global_id(1), bh = get_global_id(2);
    if (c >= d) return;
    __global const float *src = x + x_off + (size_t)bh * n * d + c;
    __global float *dst = out + (size_t)bh * n_pad * d + c;
    const int j0 = blk * 32, len = clamp(n - j0, 0, 32);
    if (!quant) {
        for (int k = 0; k < 32; k++) dst[(size_t)(j0 + k) * d] = k < len ? src[(size_t)(j0 + k) * d] : 0.0f;
        return;
    }
    uint m = 0u;
    for (int k = 0; k < len; k++) m = max(m, as_uint(src[(size_t)(j0 + k) * d]) & 0x7fffffffu);
    const int e = m >= 0x7f800000u ? 0 : mxa_exponent(m, ceil_rule, thr, pow2_dec);
    for (int k = 0; k < 32; k++) {
        float v = 0.0f;
        if (k < len) {
            const uint bits = as_uint(src[(size_t)(j0 + k) * d]);
            v = m >= 0x7f800000u ? NAN : mxa_decode(mxa_e2m1_code(bits & 0x7fffffffu, e), bits >> 31, e);
        }
        dst[(size_t)(j0 + k) * d] = v;
    }
}

/* ---- int8 preparation for the tensor-core variant (attention_mma.cl) ---- */

/* 2^(e-1) for a block exponent e in [-127, 127]: the factor that turns a
 * "twice" code into its value (split when 2^(e-1) would be subnormal). */
float mxa_half_pow2(int e)
{
    return e >= -125 ? mxa_pow2(e - 1) : mxa_pow2(-126) * mxa_pow2(e + 125);
}

/* Position of byte b of a 32-byte block in the tensor-core layout: the 4-byte
 * words go in the order 0 4 1 5 2 6 3 7, so that the two words one lane feeds
 * an mma (w and w + 4) are adjacent. */
int mxa_word_pos(int b)
{
    const int w = b >> 2;
    return (((w & 3) * 2 + (w >> 2)) << 2) | (b & 3);
}

/* Q or K rows as int8 "twice" codes [bh][n_pad][D] (words of each block in
 * mxa_word_pos order) and one scale 2^(e-1) per block: [bh][n_pad][D/32], or
 * [bh][D/32][n_pad] when scales_t. Same rotation and quantization as mxa_prep_qk.
 * A row whose nonzero blocks have exponents within 3 of each other gets one
 * scale: codes shifted left by e - min e (|12 << 3| = 96 fits int8), every
 * block scale 2^(min e - 1); the same values, and the attention kernel sees
 * equal scales and sums all blocks in one int32 dot product. */
__kernel void mxa_prep_qk_i8(__global const float *x, ulong x_off, int n, int n_pad, float norm, int hadamard,
                             int ceil_rule, uint thr, int pow2_dec, int scales_t, __global char *out,
                             __global float *exps)
{
    __local float xs[256];
    __local uint bmax[8];
    const int i = get_local_id(0), d = get_local_size(0);
    const int row = get_group_id(0), bh = get_group_id(1);
    const float v = mxa_load_rotated(x, x_off, n, row, bh, d, i, norm, hadamard, xs);
    int e;
    int tw = mxa_e2m1_twice(mxa_quantize_in_row(v, i, ceil_rule, thr, pow2_dec, xs, bmax, &e));
    int lo = 127, hi = -127; /* exponent range of the nonzero blocks (zero blocks take any) */
    for (int b = 0; b < d / 32; b++)
        if (bmax[b]) {
            const int eb = mxa_exponent(bmax[b], ceil_rule, thr, pow2_dec);
            lo = min(lo, eb);
            hi = max(hi, eb);
        }
    if (lo > hi) lo = hi = 0; /* all zero: the exponent of a zero block */
    const int one_scale = hi - lo <= 3;
    if (one_scale && tw) tw <<= e - lo; /* tw != 0: a nonzero block, lo <= e <= lo + 3 */
    const size_t r = (size_t)bh * n_pad + row;
    out[r * d + (i & ~31) + mxa_word_pos(i & 31)] = (char)((as_uint(v) >> 31) ? -tw : tw);
    if ((i & 31) == 0) {
        const size_t at = scales_t ? ((size_t)bh * (d / 32) + (i >> 5)) * n_pad + row : r * (d / 32) + (i >> 5);
        exps[at] = mxa_half_pow2(one_scale ? lo : e);
    }
}

/* Byte p of a 32-key block of V holds key mxa_v_key(p): the order in which
 * the mma A fragment of P (built from the C fragment of S) meets the keys. */
int mxa_v_key(int p)
{
    const int w = p >> 2, i = p & 3, t = w & 3;
    return (w >= 4 ? 16 : 0) + (i < 2 ? 2 * t + i : 8 + 2 * t + (i - 2));
}

/* V as int8 codes transposed [bh][D][n_pad] (keys permuted inside each block
 * by mxa_v_key, words by mxa_word_pos) and scales 2^(e-1) [bh][n_pad/32][D]. One work-item per
 * (channel, key block); global (D, n_pad / 32, B*Hkv). */
__kernel void mxa_prep_v_i8(__global const float *x, ulong x_off, int n, int n_pad, int d, int ceil_rule,
                            uint thr, int pow2_dec, __global uint *out, __global float *exps)
{
    const int c = get_global_id(0), blk = get_global_id(1), bh = get_global_id(2);
    if (c >= d) return;
    __global const float *src = x + x_off + (size_t)bh * n * d + c;
    const int j0 = blk * 32, len = clamp(n - j0, 0, 32);
    uint m = 0u;
    for (int k = 0; k < len; k++) m = max(m, as_uint(src[(size_t)(j0 + k) * d]) & 0x7fffffffu);
    const int e = mxa_exponent(m, ceil_rule, thr, pow2_dec);
    __global uint *dst = out + ((size_t)bh * d + c) * (n_pad / 4) + j0 / 4;
    for (int w = 0; w < 8; w++) {
        uint word = 0u;
        for (int i = 0; i < 4; i++) {
            const int k = mxa_v_key(4 * w + i);
            int tw = 0;
            if (k < len) {
                const uint bits = as_uint(src[(size_t)(j0 + k) * d]);
                tw = mxa_e2m1_twice(mxa_e2m1_code(bits & 0x7fffffffu, e));
                if (bits >> 31) tw = -tw;
            }
            word |= ((uint)tw & 0xffu) << (8 * i);
        }
        dst[mxa_word_pos(4 * w) >> 2] = word;
    }
    exps[((size_t)bh * (n_pad / 32) + blk) * d + c] = mxa_half_pow2(e);
}
