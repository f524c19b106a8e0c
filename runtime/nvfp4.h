/*
 * The NVFP4 format (internal): the paper's comparison baseline, not part of
 * the MXFP4 contract. 16-element blocks of E2M1 elements share an FP8 E4M3
 * block scale, and the whole tensor shares an fp32 scale:
 *
 *   tensor scale  s  = amax / (6 * 448)          (amax of the tensor; 1 if 0)
 *   block scale   b  = E4M3(max|x_block| / (6 s)), round to nearest even,
 *                      saturating at 448 (the E4M3 maximum)
 *   element       c  = E2M1(|x| / (b s)), the MXFP4 element rounding (RNE, saturating at 6)
 *   decoded          = (E2M1 value * b) * s
 *
 * A block whose scale rounds to 0 decodes to zeros.
 */
#ifndef MXA_RUNTIME_NVFP4_H
#define MXA_RUNTIME_NVFP4_H

#include <stdint.h>

#define MXA_NVFP4_BLOCK 16
#define MXA_E4M3_MAX 448.0f

/* The E4M3 byte (sign 0, 4 exponent bits with bias 7, 3 mantissa bits) of a
 * non-negative y: round to nearest even, subnormals below 2^-6, saturating at
 * 448. NaN gives 0x7F (the E4M3 NaN). */
uint8_t mxa_e4m3_encode(float y);

/* The value of an E4M3 byte (sign honoured; 0x7F/0xFF give NaN). */
float mxa_e4m3_decode(uint8_t byte);

/* The fp32 tensor scale for a tensor whose largest magnitude is `amax`. */
float mxa_nvfp4_tensor_scale(float amax);

/* Quantizes n <= 16 values (the rest is zero padding) with tensor scale `ts`:
 * 4-bit codes (sign in bit 3) and the E4M3 block-scale byte. */
void mxa_nvfp4_quantize_block(const float *x, int n, float ts, uint8_t codes[MXA_NVFP4_BLOCK],
                              uint8_t *scale);

/* The value of one code under block-scale byte `scale` and tensor scale `ts`. */
float mxa_nvfp4_decode(uint8_t code, uint8_t scale, float ts);

/* Quantizes then decodes x[0..n) in place in blocks of 16 starting at x[0]
 * (the last block may be short) with tensor scale `ts`. */
void mxa_nvfp4_fake_quantize(float *x, int64_t n, float ts);

/* Quantizes then decodes x[i * stride] for i in [0, n) in place, in blocks of
 * 16 consecutive i (a strided view, e.g. one channel of V along tokens). */
void mxa_nvfp4_fake_quantize_strided(float *x, int64_t n, int64_t stride, float ts);

#endif
