/* Validation of an attention call, shared by mxa_attention and the reference. */
#ifndef MXA_RUNTIME_ATTENTION_CHECK_H
#define MXA_RUNTIME_ATTENTION_CHECK_H

#include "mxa/mxa.h"

/* Largest input magnitude attention accepts: above it scores may overflow fp32. */
#define MXA_ATTENTION_INPUT_LIMIT 281474976710656.0f /* 2^48 */

typedef struct mxa_attention_dims {
    int64_t b, h, hkv, nq, nk, d;
    float scale; /* resolved */
} mxa_attention_dims;

/* Checks desc, shapes, dtypes and GQA; resolves the scale. Host tensors or
 * device buffers are both accepted here (the caller checks placement). */
mxa_status mxa_attention_check(const mxa_attention_desc *desc, const mxa_tensor *q,
                               const mxa_tensor *k, const mxa_tensor *v, const mxa_tensor *o,
                               const mxa_tensor *lse, mxa_attention_dims *dims);

/* Checks a key-tile size. */
mxa_status mxa_bc_check(int bc);

#endif
