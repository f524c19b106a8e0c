/* The reference MXAttention on dense float32 arrays (internal entry point). */
#ifndef MXA_RUNTIME_REFERENCE_H
#define MXA_RUNTIME_REFERENCE_H

#include "attention_check.h"

/* SPEC §2 line by line. q [b,h,nq,d], k/v [b,hkv,nk,d], o [b,h,nq,d] dense;
 * lse and row_sums (b*h*nq) may be NULL. Inputs are not modified. */
mxa_status mxa_reference_run(const mxa_attention_desc *desc, int bc, const mxa_attention_dims *dims,
                             const float *q, const float *k, const float *v, float *o, float *lse,
                             float *row_sums);

#endif
