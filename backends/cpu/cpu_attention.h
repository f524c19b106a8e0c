/* The fused flash-attention pass of the CPU backend. */
#ifndef MXA_CPU_ATTENTION_H
#define MXA_CPU_ATTENTION_H

#include "../../runtime/backend.h"
#include "cpu_kernels.h"
#include "cpu_quant.h"
#include "cpu_threads.h"

/* Runs a validated call on host arrays q, k, v into float32 o and lse (may be NULL), with
 * the call's bias, mask and key lengths; arena and scratch are the device's memory kept
 * between calls. */
mxa_status cpu_attention_run(const cpu_kernels *kern, cpu_pool *pool, cpu_buf *arena, cpu_buf *scratch,
                             const mxa_attention_call *call, const float *q, const float *k, const float *v, float *o,
                             float *lse);

#endif
