/*
 * What both attention kernels share: the output's element type and the extras
 * of docs/attention-inputs.md (bias, mask, key lengths, causal alignment).
 *
 * Compile-time, each only when the call has it, so that plain calls run the
 * kernels they always ran: MXA_OUT (0 f32, 1 f16, 2 bf16), MXA_BIAS, MXA_MASK.
 * Key lengths and the causal alignment are run-time arguments (one load and
 * one subtraction per work-group).
 */
#ifndef MXA_OUT
#define MXA_OUT 0
#endif
#if MXA_OUT == 0
#define MXA_OUT_T float
#else
#define MXA_OUT_T ushort
#endif

/* The arguments both kernels take after `causal`, in this order (cl_attention.c, extra_args):
 * the bias (float) and mask (bytes) with element offsets and batch / head strides (0 when
 * broadcast), per-batch key lengths (has_klen), and the lse's element offset. */
#define MXA_EXTRA_PARAMS                                                                                       \
    __global const float *bias, ulong bias_off, ulong bias_bs, ulong bias_hs, __global const uchar *mask,    \
        ulong mask_off, ulong mask_bs, ulong mask_hs, __global const int *klen, int has_klen, ulong lse_off

/* f32 -> f16 bits, round to nearest even, as runtime/tensor.c's mxa_f32_to_f16 */
ushort mxa_f16_bits(float f)
{
    const uint u = as_uint(f), au = u & 0x7fffffffu;
    const ushort sign = (ushort)((u >> 16) & 0x8000u);
    if (au > 0x7f800000u) return sign | 0x7e00;
    if (au >= 0x477ff000u) return sign | 0x7c00; /* >= 65520: rounds to Inf */
    if (au < 0x38800000u) return sign | (ushort)rint(as_float(au) * 0x1p24f); /* subnormal: units of 2^-24 */
    const uint r = au + 0x0fffu + ((au >> 13) & 1u);
    return sign | (ushort)((((r >> 23) - 112u) << 10) | ((r >> 13) & 0x3ffu));
}

/* f32 -> bf16 bits, round to nearest even, as runtime/tensor.c's mxa_f32_to_bf16 */
ushort mxa_bf16_bits(float f)
{
    const uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* o[i] = v in the output's type (rounded once) */
void mxa_store_out(__global MXA_OUT_T *o, size_t i, float v)
{
#if MXA_OUT == 0
    o[i] = v;
#elif MXA_OUT == 1
    o[i] = mxa_f16_bits(v);
#else
    o[i] = mxa_bf16_bits(v);
#endif
}

/* The keys batch b has: its key length, or all nk. */
int mxa_keys_of(__global const int *klen, int has_klen, int b, int nk)
{
    return has_klen ? klen[b] : nk;
}

/* Causal: key j is visible to row i iff j <= i + shift (bottom-right aligned to the
 * batch's keys, or top-left). */
int mxa_causal_shift(int causal, int nkb, int nq)
{
    return causal == 2 ? 0 : nkb - nq;
}

/* Row `row` of the bias and the mask of head bh (rows of nk entries). */
typedef struct mxa_side_rows {
    __global const float *bias;
    __global const uchar *mask;
} mxa_side_rows;

mxa_side_rows mxa_side_head(__global const float *bias, ulong bias_off, ulong bias_bs, ulong bias_hs,
                            __global const uchar *mask, ulong mask_off, ulong mask_bs, ulong mask_hs, int bh,
                            int h)
{
    const ulong b = (ulong)(bh / h), hh = (ulong)(bh % h);
    mxa_side_rows s;
    s.bias = bias + bias_off + b * bias_bs + hh * bias_hs;
    s.mask = mask + mask_off + b * mask_bs + hh * mask_hs;
    return s;
}

/* The score x of (row, key) with the mask and the bias applied (bias x factor: 1, or
 * log2(e) for scores in log2 units). Only for rows < nq and keys < nk (the reads). */
float mxa_side_apply(float x, mxa_side_rows s, int row, int key, int nk, float factor)
{
    const size_t at = (size_t)row * nk + key;
#ifdef MXA_MASK
    if (!s.mask[at]) return -INFINITY;
#endif
#ifdef MXA_BIAS
    x += s.bias[at] * factor;
#endif
    (void)at;
    (void)s;
    (void)factor;
    return x;
}
