/*
 * Quantization kernels: the mxa_quantize operation, and the preparation of
 * Q, K and V for the attention kernels (rotation, MXFP4, padding, layout).
 * Prepared values are the exact decoded MXFP4 numbers (code value x 2^e) in
 * fp32, or for the tensor-core variant the int8 "twice" codes (2 x E2M1,
 * integers in [-12, 12]) and one exponent byte per block.
 */

/* Element i of a preparation kernel's input: float32 (in16 0), or the exact float32 value of a
 * float16 (1) or bfloat16 (2) element, widened by moving bits (a float16 subnormal through an
 * exact product), so a 16-bit tensor prepares to the bits of the float32 tensor of its values. */
float mxa_in(__global const float *x, size_t i, int in16)
{
    if (!in16) return x[i];
    const uint h = ((__global const ushort *)x)[i];
    if (in16 == 2) return as_float(h << 16);
    const uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0u) return sign ? -((float)m * 5.9604644775390625e-8f) : (float)m * 5.9604644775390625e-8f;
    return as_float(sign | (e == 31u ? 0x7f800000u : (e + 112u) << 23) | m << 13);
}

/* The largest magnitude's bits of n values into *maxbits; 0 if one is NaN or Inf. */
int mxa_block_maxbits(__global const float *src, int n, uint *maxbits)
{
    uint m = 0u;
    int finite = 1;
    for (int i = 0; i < n; i++) {
        const uint a = as_uint(src[i]) & 0x7fffffffu;
        if (a >= 0x7f800000u) finite = 0;
        m = max(m, a);
    }
    *maxbits = m;
    return finite;
}

/* mxa_quantize: one work-item per (block, row). x: rows x cols, contiguous. */
__kernel void mxa_quantize_rows(__global const float *x, ulong x_off, int rows, int cols, int nblocks,
                                int ceil_rule, uint thr, int pow2_dec, __global uchar *codes,
                                __global uchar *scales)
{
    const int blk = get_global_id(0), row = get_global_id(1);
    if (blk >= nblocks || row >= rows) return;
    __global const float *src = x + x_off + (size_t)row * cols + blk * 32;
    const int n = min(32, cols - blk * 32);
    uint maxbits;
    const int finite = mxa_block_maxbits(src, n, &maxbits);
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

/* mxa_quantize_mxfp8: one work-item per (block, row); 32 code bytes per block. */
__kernel void mxa_quantize_rows_fp8(__global const float *x, ulong x_off, int rows, int cols, int nblocks,
                                    __global uchar *codes, __global uchar *scales)
{
    const int blk = get_global_id(0), row = get_global_id(1);
    if (blk >= nblocks || row >= rows) return;
    __global const float *src = x + x_off + (size_t)row * cols + blk * 32;
    const int n = min(32, cols - blk * 32);
    uint maxbits;
    const int finite = mxa_block_maxbits(src, n, &maxbits);
    __global uchar *out = codes + ((size_t)row * nblocks + blk) * 32;
    if (!finite) {
        for (int i = 0; i < 32; i++) out[i] = 0;
        scales[(size_t)row * nblocks + blk] = (uchar)MXA_E8M0_NAN;
        return;
    }
    const int e = mxa_fp8_exponent(maxbits);
    scales[(size_t)row * nblocks + blk] = (uchar)(e + 127);
    for (int i = 0; i < 32; i++) {
        const uint bits = i < n ? as_uint(src[i]) : 0u;
        out[i] = (uchar)((bits >> 31) << 7 | mxa_e4m3_code(bits & 0x7fffffffu, e));
    }
}

/*
 * Q/K prep geometry: 32 work-items per row (local id 0 = t), several rows per
 * work-group (local id 1; MXA_QK_ROWS at most, rows * D <= 1024); work-item t
 * holds elements t + 32k, k < D/32 <= MXA_QK_K, so that loads and stores are
 * coalesced and element k of the 32 work-items is block k of the row.
 */
#define MXA_QK_K 8
#define MXA_QK_ROWS 8
/* Blocks per row: MXA_PREP_D, where the program is built for one D, makes it a constant, so
 * the loops over a work-item's elements unroll and v[] stays in registers. */
#ifdef MXA_PREP_D
#define MXA_QK_BLOCKS(d) ((void)(d), MXA_PREP_D >> 5)
#else
#define MXA_QK_BLOCKS(d) ((d) >> 5)
#endif

/* MXA_PTX_SHFL (NVIDIA, whose compiler takes inline PTX; the cl-mma-ptx family builds the
 * prep program with it): a row's 32 work-items are one warp, so the Hadamard stages h < 32
 * and the block maxima exchange values with shfl.sync instead of local memory and barriers.
 * The same partners, so the same bits. */
#ifdef MXA_PTX_SHFL
#ifndef MXA_ASM
#define MXA_ASM asm
#endif
uint mxa_shfl_xor(uint v, int mask)
{
    uint r;
    MXA_ASM volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(mask));
    return r;
}
void mxa_warp_sync(void) { MXA_ASM volatile("bar.warp.sync 0xffffffff;" ::: "memory"); }
#endif

/* v[k] = element t + 32k of row `row` of head `bh` (0 past n), rotated when
 * `hadamard`: the reference's butterflies h = 1, 2, ..., d/2 of (a + b, a - b),
 * then the fp32 factor `norm`. Each stage is element-wise, so the result is that
 * of the sequential transform bit for bit: stages h < 32 pair work-items t and
 * t ^ h (through local memory, two buffers: one barrier per stage), stages
 * h >= 32 pair elements k and k ^ (h / 32) of one work-item. xs: 2 x rows x d
 * floats; leaves buffer 1 free. Called by every work-item of the work-group. */
void mxa_load_rotated(__global const float *x, ulong x_off, int in16, int n, int row, int bh, int d, float norm,
                      int hadamard, __local float *xs, float v[MXA_QK_K])
{
    const int t = get_local_id(0), r = get_local_id(1), nr = get_local_size(1), nk = MXA_QK_BLOCKS(d);
    for (int k = 0; k < MXA_QK_K; k++) v[k] = 0.0f;
    if (row < n) {
        const size_t src = x_off + ((size_t)bh * n + row) * d + t;
        for (int k = 0; k < MXA_QK_K; k++)
            if (k < nk) v[k] = mxa_in(x, src + 32 * k, in16);
    }
    if (!hadamard) return;
#ifdef MXA_PTX_SHFL
    (void)r, (void)nr, (void)xs;
    for (int h = 1; h < 32; h *= 2)
        for (int k = 0; k < MXA_QK_K; k++)
            if (k < nk) {
                const float p = as_float(mxa_shfl_xor(as_uint(v[k]), h));
                v[k] = (t & h) ? p - v[k] : v[k] + p;
            }
#else
    for (int h = 1, s = 0; h < 32; h *= 2, s ^= 1) {
        __local float *b = xs + (s * nr + r) * d;
        for (int k = 0; k < MXA_QK_K; k++)
            if (k < nk) b[32 * k + t] = v[k];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < MXA_QK_K; k++)
            if (k < nk) {
                const float p = b[32 * k + (t ^ h)];
                v[k] = (t & h) ? p - v[k] : v[k] + p;
            }
    }
#endif
    for (int hk = 1; hk < MXA_QK_K; hk *= 2)
        if (hk < nk) {
            float w[MXA_QK_K];
            for (int k = 0; k < MXA_QK_K; k++) w[k] = (k & hk) ? v[k ^ hk] - v[k] : v[k] + v[k ^ hk];
            for (int k = 0; k < MXA_QK_K; k++) v[k] = w[k];
        }
    for (int k = 0; k < MXA_QK_K; k++) v[k] = v[k] * norm;
}

/* MXFP4 of a row held as mxa_load_rotated leaves it (called by every
 * work-item of the work-group: barriers). Leaves the largest |x| bits of block
 * b of the row in bmax[r * MXA_QK_K + b] (r = local id 1), the block exponents
 * in e[k] and the E2M1 codes of |v[k]| in code[k]. bmax >= 0x7f800000: the
 * block is not finite, and its e and codes mean nothing. One helper, so the
 * fp32 and the int8 Q/K prep quantize alike. xs: as for mxa_load_rotated. */
void mxa_quantize_in_row(const float v[MXA_QK_K], int d, int ceil_rule, uint thr, int pow2_dec,
                         __local float *xs, __local uint *bmax, int e[MXA_QK_K], uint code[MXA_QK_K])
{
    const int t = get_local_id(0), r = get_local_id(1), nk = MXA_QK_BLOCKS(d);
#ifdef MXA_PTX_SHFL
    (void)xs;
    for (int k = 0; k < MXA_QK_K; k++)
        if (k < nk) { /* block k: a butterfly max over the warp, every lane ends with it */
            uint m = as_uint(v[k]) & 0x7fffffffu;
            for (int h = 1; h < 32; h *= 2) m = max(m, mxa_shfl_xor(m, h));
            if (t == k) bmax[r * MXA_QK_K + k] = m;
        }
    /* bmax of this row is written and read by its own warp only */
    mxa_warp_sync();
#else
    __local float *a = xs + (get_local_size(1) + r) * d; /* buffer 1 */
    for (int k = 0; k < MXA_QK_K; k++)
        if (k < nk) a[32 * k + t] = as_float(as_uint(v[k]) & 0x7fffffffu);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < nk) { /* block t; the start skewed by t against bank conflicts */
        uint m = 0u;
        for (int j = 0; j < 32; j++) m = max(m, as_uint(a[32 * t + ((j + t) & 31)]));
        bmax[r * MXA_QK_K + t] = m;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    for (int k = 0; k < MXA_QK_K; k++) {
        e[k] = 0;
        code[k] = 0u;
        if (k < nk) {
            e[k] = mxa_exponent(bmax[r * MXA_QK_K + k], ceil_rule, thr, pow2_dec);
            code[k] = mxa_e2m1_code(as_uint(v[k]) & 0x7fffffffu, e[k]);
        }
    }
}

/*
 * Q or K rows: optional Walsh-Hadamard rotation (SPEC section 2 step 1, in
 * the reference's order: stages h = 1, 2, ..., D/2 of (a + b, a - b), then the
 * fp32 factor `norm`), then optional MXFP4 along D.
 * Work-group (32, rows, 1), see MXA_QK_K; global (32, n_pad rounded up to
 * rows, B*H). Rows >= n are zero padding. transpose = 1 writes [bh][D][n_pad]
 * instead of [bh][n_pad][D]. A non-finite block decodes to NaN.
 */
__kernel void mxa_prep_qk(__global const float *x, ulong x_off, int in16, int n, int n_pad, int d, float norm,
                          int hadamard, int quant, int ceil_rule, uint thr, int pow2_dec, int transpose,
                          __global float *out)
{
    __local float xs[2 * 1024];
    __local uint bmax[MXA_QK_ROWS * MXA_QK_K];
    const int t = get_local_id(0), r = get_local_id(1), nk = MXA_QK_BLOCKS(d);
    const int row = get_global_id(1), bh = get_global_id(2);
    float v[MXA_QK_K];
    mxa_load_rotated(x, x_off, in16, n, row, bh, d, norm, hadamard, xs, v);
    if (quant) {
        int e[MXA_QK_K];
        uint code[MXA_QK_K];
        mxa_quantize_in_row(v, d, ceil_rule, thr, pow2_dec, xs, bmax, e, code);
        for (int k = 0; k < MXA_QK_K; k++)
            if (k < nk)
                v[k] = bmax[r * MXA_QK_K + k] >= 0x7f800000u ? NAN : mxa_decode(code[k], as_uint(v[k]) >> 31, e[k]);
    }
    if (row >= n_pad) return; /* the last work-group's tail: after every barrier */
    for (int k = 0; k < MXA_QK_K; k++)
        if (k < nk) {
            const int i = 32 * k + t;
            if (transpose) out[((size_t)bh * d + i) * n_pad + row] = v[k];
            else out[((size_t)bh * n_pad + row) * d + i] = v[k];
        }
}

/* The keys head bh (of B*hkv) has: n, or its batch's key length (docs/attention-inputs.md:
 * V is quantized as if the batch had only those, the block holding the last one zero-padded). */
int mxa_v_keys(__global const int *klen, int has_klen, int hkv, int bh, int n)
{
    return has_klen ? klen[bh / hkv] : n;
}

/*
 * V: optional MXFP4 (or, with fp8, MXFP8) along the token axis (blocks of 32 keys per channel).
 * One work-item per (channel, key block); global (D, n_pad / 32, B*Hkv).
 * Output [bh][n_pad][D], keys >= n (or the batch's key length) zero.
 */
__kernel void mxa_prep_v(__global const float *x, ulong x_off, int in16, int n, int n_pad, int d,
                         __global const int *klen, int has_klen, int hkv, int quant, int ceil_rule, uint thr,
                         int pow2_dec, int fp8, __global float *out)
{
    const int c = get_global_id(0), blk = get_global_id(1), bh = get_global_id(2);
    if (c >= d) return;
    const size_t src = x_off + (size_t)bh * n * d + c;
    __global float *dst = out + (size_t)bh * n_pad * d + c;
    const int j0 = blk * 32, len = clamp(mxa_v_keys(klen, has_klen, hkv, bh, n) - j0, 0, 32);
    if (!quant) {
        for (int k = 0; k < 32; k++) dst[(size_t)(j0 + k) * d] = k < len ? mxa_in(x, src + (size_t)(j0 + k) * d, in16) : 0.0f;
        return;
    }
    uint m = 0u;
    for (int k = 0; k < len; k++) m = max(m, as_uint(mxa_in(x, src + (size_t)(j0 + k) * d, in16)) & 0x7fffffffu);
    const int e = m >= 0x7f800000u ? 0 : fp8 ? mxa_fp8_exponent(m) : mxa_exponent(m, ceil_rule, thr, pow2_dec);
    for (int k = 0; k < 32; k++) {
        float v = 0.0f;
        if (k < len) {
            const uint bits = as_uint(mxa_in(x, src + (size_t)(j0 + k) * d, in16)), a = bits & 0x7fffffffu;
            v = m >= 0x7f800000u ? NAN
                : fp8             ? mxa_fp8_decode(mxa_e4m3_code(a, e), bits >> 31, e)
                                  : mxa_decode(mxa_e2m1_code(a, e), bits >> 31, e);
        }
        dst[(size_t)(j0 + k) * d] = v;
    }
}

/*
 * Pre-quantized K or V (mxa_prepare_kv, runtime/kv.c: mxa_quantize's layout, 16 code bytes per
 * block of 32 with element 2k in the low nibble of byte k, one E8M0 scale byte per block, 0xFF =
 * NaN) decoded to float32 [heads][n][d], the input the preparation kernels above take. Both
 * variants then prepare it as usual, K without the rotation it was stored with: re-quantizing
 * decoded MXFP4 blocks gives the same values, so the result is that of the float32 K and V.
 * One work-item per element (adjacent work-items: adjacent channels, so the writes coalesce);
 * global (d, n, heads). transpose = 0: K rows [heads * n][d]; 1: V^T rows [heads * d][n32 tokens],
 * the tokens from n on (padding to 32) not read.
 */
__kernel void mxa_decode_kv(__global const uchar *codes, ulong codes_off, __global const uchar *scales,
                            ulong scales_off, int n, int d, int n32, int transpose, __global float *out)
{
    const int c = get_global_id(0), j = get_global_id(1), head = get_global_id(2);
    if (c >= d || j >= n) return;
    const size_t row = transpose ? (size_t)head * d + c : (size_t)head * n + j;
    const int col = transpose ? j : c, len = transpose ? n32 : d;
    const uint byte = codes[codes_off + row * (size_t)(len / 2) + col / 2];
    const uint code = (col & 1) ? byte >> 4 : byte & 15u;
    const uint s = scales[scales_off + row * (size_t)(len / 32) + col / 32];
    out[((size_t)head * n + j) * d + c] = s == MXA_E8M0_NAN ? NAN : mxa_decode(code & 7u, code >> 3, (int)s - 127);
}

/* ---- int8 preparation for the tensor-core variant (attention_mma.cl) ---- */

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
 * [bh][D/32][n_pad] when scales_t. Same rotation and quantization, and the same
 * geometry, as mxa_prep_qk. A row whose nonzero blocks have exponents within 3
 * of each other gets one scale: codes shifted left by e - min e (|12 << 3| = 96
 * fits int8), every block scale 2^(min e - 1); the same values, and the
 * attention kernel sees equal scales and sums all blocks in one int32 dot product. */
__kernel void mxa_prep_qk_i8(__global const float *x, ulong x_off, int in16, int n, int n_pad, int d, float norm,
                             int hadamard, int ceil_rule, uint thr, int pow2_dec, int scales_t,
                             __global char *out, __global float *exps)
{
    __local float xs[2 * 1024];
    __local uint bmax[MXA_QK_ROWS * MXA_QK_K];
    const int t = get_local_id(0), r = get_local_id(1), nk = MXA_QK_BLOCKS(d);
    const int row = get_global_id(1), bh = get_global_id(2);
    float v[MXA_QK_K];
    mxa_load_rotated(x, x_off, in16, n, row, bh, d, norm, hadamard, xs, v);
    int e[MXA_QK_K];
    uint code[MXA_QK_K];
    mxa_quantize_in_row(v, d, ceil_rule, thr, pow2_dec, xs, bmax, e, code);
    if (row >= n_pad) return; /* the last work-group's tail: after every barrier */
    int lo = 127, hi = -127; /* exponent range of the nonzero blocks (zero blocks take any) */
    for (int b = 0; b < nk; b++)
        if (bmax[r * MXA_QK_K + b]) {
            const int eb = mxa_exponent(bmax[r * MXA_QK_K + b], ceil_rule, thr, pow2_dec);
            lo = min(lo, eb);
            hi = max(hi, eb);
        }
    if (lo > hi) lo = hi = 0; /* all zero: the exponent of a zero block */
    const int one_scale = hi - lo <= 3;
    const size_t rr = (size_t)bh * n_pad + row;
    for (int k = 0; k < MXA_QK_K; k++)
        if (k < nk) {
            int tw = mxa_e2m1_twice(code[k]);
            if (one_scale && tw) tw <<= e[k] - lo; /* tw != 0: a nonzero block, lo <= e <= lo + 3 */
            out[rr * d + 32 * k + mxa_word_pos(t)] = (char)((as_uint(v[k]) >> 31) ? -tw : tw);
            if (t == k) { /* block k's scale, one work-item each */
                const size_t at = scales_t ? ((size_t)bh * nk + k) * n_pad + row : rr * nk + k;
                exps[at] = mxa_half_pow2(one_scale ? lo : e[k]);
            }
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
 * by mxa_v_key, words by mxa_word_pos), each column's codes on one unit
 * 2^(E - 4), E the column's largest block exponent, so that the attention
 * kernel chains the blocks of a tile in one int32 product: pass 0 finds E
 * (atomic max of E + 128 into colx[bh * D + c], 0: no block; colx zeroed
 * first); pass 1 shifts a block's codes left by e - E + 3 (0..3: |code| <= 96)
 * with factor 1 in exps [bh][n_pad/32][D], or keeps the codes of a block more
 * than 3 binades below E unshifted with the factor 2^(e - E + 3) and flags
 * its key block in colx[heads * D + bh * n_pad / 32 + blk]. One work-item per
 * (channel, key block); global (D, n_pad / 32, B*Hkv). */
__kernel void mxa_prep_v_i8(__global const float *x, ulong x_off, int in16, int n, int n_pad, int d,
                            __global const int *klen, int has_klen, int hkv, int ceil_rule, uint thr,
                            int pow2_dec, __global uint *out, __global float *exps, __global uint *colx, int pass)
{
    const int c = get_global_id(0), blk = get_global_id(1), bh = get_global_id(2);
    if (c >= d) return;
    const size_t src = x_off + (size_t)bh * n * d + c;
    const int j0 = blk * 32, len = clamp(mxa_v_keys(klen, has_klen, hkv, bh, n) - j0, 0, 32);
    /* the block's 32 keys at once, without conditions (keys past n read key n - 1 and
     * are dropped, as are those past the batch's key length), so that the loads are all
     * in flight together */
    uint bits[32];
#pragma unroll
    for (int k = 0; k < 32; k++) bits[k] = as_uint(mxa_in(x, src + (size_t)min(j0 + k, n - 1) * d, in16));
    uint m = 0u;
#pragma unroll
    for (int k = 0; k < 32; k++) {
        if (k >= len) bits[k] = 0u;
        m = max(m, bits[k] & 0x7fffffffu);
    }
    const int e = mxa_exponent(m, ceil_rule, thr, pow2_dec);
    __global uint *colmax = colx + (size_t)bh * d + c;
    if (pass == 0) {
        if (m != 0u) atomic_max(colmax, (uint)(e + 128));
        return;
    }
    const uint cm = *colmax;
    const int shift = m == 0u || cm == 0u ? 0 : e - ((int)cm - 128 - 3);
    const int low = shift < 0, lift = low ? 0 : shift;
    /* the block's 32 bytes, 32-byte aligned: two 16-byte stores */
    __global uint4 *dst = (__global uint4 *)(out + ((size_t)bh * d + c) * (n_pad / 4) + j0 / 4);
    uint words[8];
#pragma unroll
    for (int w = 0; w < 8; w++) { /* unrolled: bits[] and words[] are indexed by constants only */
        uint word = 0u;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint b = bits[mxa_v_key(4 * w + i)];
            const int tw = mxa_e2m1_twice(mxa_e2m1_code(b & 0x7fffffffu, e)) << lift;
            word |= ((uint)((b >> 31) ? -tw : tw) & 0xffu) << (8 * i);
        }
        words[mxa_word_pos(4 * w) >> 2] = word;
    }
    dst[0] = (uint4)(words[0], words[1], words[2], words[3]);
    dst[1] = (uint4)(words[4], words[5], words[6], words[7]);
    exps[((size_t)bh * (n_pad / 32) + blk) * d + c] = as_float(low ? mxa_pow2_bits(shift) : 0x3f800000u);
    if (low) atomic_or(colx + (size_t)get_global_size(2) * d + (size_t)bh * (n_pad / 32) + blk, 1u);
}
