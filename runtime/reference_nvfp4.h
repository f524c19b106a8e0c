/* The NVFP4 attention baselines (internal; reached through the reference). */
#ifndef MXA_RUNTIME_REFERENCE_NVFP4_H
#define MXA_RUNTIME_REFERENCE_NVFP4_H

#include "attention_check.h"

/* Attention with NVFP4 Q, K, V and P~ (desc->format == MXA_FORMAT_NVFP4),
 * with SageAttention-style smoothing when desc->smooth. Same arrays and
 * outputs as mxa_reference_run; desc->rule is not used. */
mxa_status mxa_reference_nvfp4_run(const mxa_attention_desc *desc, int bc, const mxa_attention_dims *dims,
                                   const float *q, const float *k, const float *v, float *o, float *lse,
                                   float *row_sums);

#endif
