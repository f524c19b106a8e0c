/* The NVFP4 attention baselines (internal; reached through the reference). */
#ifndef MXA_RUNTIME_REFERENCE_NVFP4_H
#define MXA_RUNTIME_REFERENCE_NVFP4_H

#include "attention_check.h"
#include "backend.h"

/* Attention with NVFP4 Q, K, V and P~ (desc->format == MXA_FORMAT_NVFP4),
 * with SageAttention-style smoothing when desc->smooth. Same arrays and
 * outputs as mxa_reference_run; desc->rule is not used. bias (a dense host
 * float array as mxa_reference_extras holds it, or NULL) is added to the
 * scaled scores as in the MXFP4 reference. */
mxa_status mxa_reference_nvfp4_run(const mxa_attention_desc *desc, int bc, const mxa_attention_dims *dims,
                                   const mxa_side_array *bias, const float *q, const float *k, const float *v, float *o,
                                   float *lse, float *row_sums);

#endif
