/* Host tensor access, dtype conversion and validation (internal). */
#ifndef MXA_RUNTIME_TENSOR_H
#define MXA_RUNTIME_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "mxa/mxa.h"

float mxa_f16_to_f32(uint16_t h);
uint16_t mxa_f32_to_f16(float f); /* round to nearest even, overflow to Inf */
float mxa_bf16_to_f32(uint16_t h);
uint16_t mxa_f32_to_bf16(float f); /* round to nearest even */
/* n float16 (dtype MXA_F16) or bfloat16 (MXA_BF16) elements as their exact float32 values. */
void mxa_widen16(mxa_dtype dtype, const uint16_t *src, size_t n, float *out);

/* Checks dtype, shape (> 0), strides (>= 0) and that data or buffer is set. */
mxa_status mxa_tensor_check(const mxa_tensor *t, const char *name);

/* Element stride of each dim (the tensor's, or contiguous when zero-filled). */
void mxa_tensor_strides(const mxa_tensor *t, int64_t strides[4]);

/* 1 if t is contiguous row-major float32 on the host. */
int mxa_tensor_is_dense_f32(const mxa_tensor *t);

int64_t mxa_tensor_numel(const mxa_tensor *t);

float mxa_tensor_get(const mxa_tensor *t, int64_t b, int64_t h, int64_t n, int64_t d);
void mxa_tensor_set(const mxa_tensor *t, int64_t b, int64_t h, int64_t n, int64_t d, float v);

/* Copies a host tensor into dense float32 `out` (numel floats). */
void mxa_tensor_gather(const mxa_tensor *t, float *out);

/* Writes dense float32 `in` into a host tensor, converting the dtype. */
void mxa_tensor_scatter(const mxa_tensor *t, const float *in);

/* Copies a host tensor into dense bytes `out` (numel bytes), 1 where the element is nonzero. */
void mxa_tensor_gather_bytes(const mxa_tensor *t, uint8_t *out);

/* Checks every element of dense `x` is finite and |x| <= limit; names the
 * first offender in the error message. */
mxa_status mxa_check_values(const float *x, int64_t n, float limit, const char *name);

#endif
