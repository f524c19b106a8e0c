// Bias, mask and key lengths of docs/attention-inputs.md for the attention kernels, included
// after the kernel's push-constant block `pc` (nq, nk, causal, bias_*, mask_*). EXTRAS is a
// specialization constant, so with 0 every branch on it folds away and the kernel is the one
// without extras; the host binds some other valid buffer to a binding whose bit is 0, which is
// then never read.
//   bias element (b, h, i, j): bias[bias_offset + b bias_sb + h bias_sh + i nk + j]
//   mask byte (b, h, i, j): byte mask_offset + b mask_sb + h mask_sh + i nk + j of maskw,
//     nonzero = visible (read as words: no 8-bit storage needed)
//   keylen[b]: batch b's keys (B entries)
// A dimension the side array broadcasts over has stride 0.

layout(constant_id = 13) const int EXTRAS = 0; // bit 0 bias, bit 1 mask, bit 2 key lengths, bit 3 causal
const bool HAS_BIAS = (EXTRAS & 1) != 0;
const bool HAS_MASK = (EXTRAS & 2) != 0;
const bool HAS_KEYLEN = (EXTRAS & 4) != 0;
const bool HAS_SIDE = (EXTRAS & 3) != 0; // a per-element bias or mask
// A causal call (pc.causal says how rows align). Only tile skipping reads it, so a kernel
// given 0 for a causal call stays correct, merely without the skip.
const bool HAS_CAUSAL = (EXTRAS & 8) != 0;

layout(std430, binding = 8) readonly buffer XB { float bias[]; };
layout(std430, binding = 9) readonly buffer XM { uint maskw[]; };
layout(std430, binding = 10) readonly buffer XL { uint keylen[]; };

// The keys batch b has (L_b).
int keys_of(uint b)
{
    uint n = pc.nk;
    if (HAS_KEYLEN) n = min(keylen[b], pc.nk);
    return int(n);
}

// How far causal alignment moves a row's last key: i + shift, L the batch's keys.
int causal_shift(int L) { return pc.causal == 2u ? 0 : L - int(pc.nq); }

// Row i's first element in the bias and in the mask (element / byte index of key 0).
uint bias_row(uint b, uint hh, uint i) { return pc.bias_offset + b * pc.bias_sb + hh * pc.bias_sh + i * pc.nk; }
uint mask_row(uint b, uint hh, uint i) { return pc.mask_offset + b * pc.mask_sb + hh * pc.mask_sh + i * pc.nk; }

// Score s of key j (a key the row may see by causality and length) with its bias added,
// times f (LOG2E for kernels whose scores are in log2 units), or -inf when the mask hides it.
float side_score(float s, uint brow, uint mrow, uint j, float f)
{
    if (HAS_BIAS) s += bias[brow + j] * f;
    if (HAS_MASK) {
        const uint e = mrow + j;
        if ((maskw[e >> 2] >> (8u * (e & 3u)) & 0xffu) == 0u) s = uintBitsToFloat(0xff800000u);
    }
    return s;
}
