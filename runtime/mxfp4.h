/*
 * The MXFP4 format of SPEC §1 (internal): shared exponents from the fp32
 * exponent/fraction bits, E2M1 round-to-nearest-even with saturation, packing.
 */
#ifndef MXA_RUNTIME_MXFP4_H
#define MXA_RUNTIME_MXFP4_H

#include <stdint.h>

#include "mxa/mxa.h"

#define MXA_E8M0_NAN 0xFF
#define MXA_E8M0_ONE 0x7F

/* E2M1 magnitudes indexed by the 3-bit code: 0 0.5 1 1.5 2 3 4 6. */
extern const float mxa_e2m1_values[8];

/* Twice the E2M1 magnitude (an integer: 0 1 2 3 4 6 8 12), indexed by the
 * 4-bit code including the sign bit: what exact int8 emulation multiplies. */
extern const int8_t mxa_e2m1_doubled[16];

/* 1 if the rule is valid (OCP, or CEIL with q in [6, 8]). */
int mxa_rule_valid(mxa_rule rule);

/* Shared exponent in [-127, 127] for a block with maximum magnitude `max_abs`
 * (finite, >= 0; 0 gives 0). */
int mxa_shared_exponent(float max_abs, mxa_rule rule);

/* 3-bit E2M1 code of a non-negative normalised magnitude v (RNE, saturating). */
uint8_t mxa_e2m1_code(float v);

/*
 * Quantizes n <= 32 values (the rest of the block is zero padding) into the
 * block's 4-bit codes (codes[i], unpacked, sign in bit 3) and E8M0 scale byte.
 */
void mxa_quantize_block(const float *x, int n, mxa_rule rule, uint8_t codes[MXA_BLOCK],
                        uint8_t *scale);

/* Quantizes one row of n values into packed codes (ceil(n/32)*16 bytes) and
 * ceil(n/32) scale bytes. */
void mxa_quantize_row(const float *x, int64_t n, mxa_rule rule, uint8_t *packed, uint8_t *scales);

/* Decodes a 4-bit code under scale byte `scale` (0xFF gives NaN). */
float mxa_decode(uint8_t code, uint8_t scale);

/* Quantizes then decodes n <= 32 values in place (padding excluded). */
void mxa_fake_quantize_block(float *x, int n, mxa_rule rule);

#endif
