/* Pre-quantized K and V (internal; the public API is mxa_prepare_kv in mxa.h). */
#ifndef MXA_RUNTIME_KV_H
#define MXA_RUNTIME_KV_H

#include "backend.h"

struct mxa_kv {
    mxa_device *dev;
    mxa_buffer *buf;   /* the four parts, at off[] (kv.c's header comment) */
    int64_t b, hkv, nk, d;
    size_t off[4], bytes;
    int hadamard;
    mxa_rule rule;
    int32_t *key_lengths; /* the ones V was cut at, or NULL */
};

/* For attention with desc->kv: checks it matches desc (key lengths included) and dev (k and
 * v must be NULL), and gives a shape-only tensor standing in for k and v in the shape
 * checks, and the backend's arrays. Nothing to do (arrays->buffer NULL) without desc->kv. */
mxa_status mxa_kv_attach(const mxa_device *dev, const mxa_attention_desc *desc, const mxa_tensor *k, const mxa_tensor *v,
                         mxa_tensor *kv_shape, mxa_kv_arrays *arrays);

#endif
