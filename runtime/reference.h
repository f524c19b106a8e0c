/* The reference MXAttention on dense float32 arrays (internal entry point). */
#ifndef MXA_RUNTIME_REFERENCE_H
#define MXA_RUNTIME_REFERENCE_H

#include "attention_check.h"
#include "backend.h"

/* The optional inputs of docs/attention-inputs.md, dense on the host: bias (float32) and
 * mask (bytes, 0 = hidden) as a backend receives them (host pointers only; absent when
 * NULL), key_lengths (b entries in [0, nk]) or NULL. */
typedef struct mxa_reference_extras {
    mxa_side_array bias, mask;
    const int32_t *key_lengths;
} mxa_reference_extras;

/* Row i of batch b, head h of a dense host side array (broadcast dimensions have size 1),
 * or NULL when it has no host data. */
const void *mxa_side_row(const mxa_side_array *a, size_t esize, int64_t b, int64_t h, int64_t i);

/* SPEC §2 line by line. q [b,h,nq,d], k/v [b,hkv,nk,d], o [b,h,nq,d] dense;
 * extras, lse and row_sums (b*h*nq) may be NULL. Inputs are not modified. */
mxa_status mxa_reference_run(const mxa_attention_desc *desc, int bc, const mxa_attention_dims *dims,
                             const mxa_reference_extras *extras, const float *q, const float *k, const float *v,
                             float *o, float *lse, float *row_sums);

#endif
