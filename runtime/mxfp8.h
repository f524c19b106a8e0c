/*
 * The MXFP8 format (OCP MX v1.0, E4M3 elements) for the P·V side of attention
 * (internal): shared exponent floor(log2 M) - 8, E4M3 round-to-nearest-even
 * saturating at 448, zero and non-finite blocks as MXFP4's (SPEC §1).
 */
#ifndef MXA_RUNTIME_MXFP8_H
#define MXA_RUNTIME_MXFP8_H

#include <stdint.h>

#include "mxa/mxa.h"

#define MXA_E4M3_MAX_CODE 0x7E /* 448 = 1.75 * 2^8, the largest finite magnitude */

/* Shared exponent in [-127, 127] of a block with maximum magnitude `max_abs`
 * (finite, >= 0): floor(log2 M) - 8; 0 for M = 0; -127 for a subnormal M. */
int mxa_mxfp8_exponent(float max_abs);

/* 7-bit E4M3 magnitude code of a finite v >= 0 (RNE, saturating at 448). */
uint8_t mxa_e4m3_code(float v);

/* The E4M3 magnitude of a 7-bit code times 2^9: an integer in [0, 229376]
 * (0x7F, E4M3's NaN, is never produced and gives 0). Exact block products
 * multiply these. */
int32_t mxa_e4m3_scaled(uint8_t code);

/* Quantizes n <= 32 values (the rest of the block is zero padding) into 8-bit
 * codes (sign in bit 7) and an E8M0 scale byte. */
void mxa_mxfp8_quantize_block(const float *x, int n, uint8_t codes[MXA_BLOCK], uint8_t *scale);

/* One row of n values: ceil(n/32)*32 code bytes and ceil(n/32) scale bytes. */
void mxa_mxfp8_quantize_row(const float *x, int64_t n, uint8_t *codes, uint8_t *scales);

/* Decodes an 8-bit code under a scale byte (0xFF gives NaN). */
float mxa_mxfp8_decode(uint8_t code, uint8_t scale);

#endif
