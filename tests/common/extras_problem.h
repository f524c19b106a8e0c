/* An attention problem with the optional inputs of docs/attention-inputs.md, for the tests of
 * bias, mask and key lengths on every device (tests/test_extras.c, tests/vulkan/...). */
#ifndef MXA_TESTS_EXTRAS_PROBLEM_H
#define MXA_TESTS_EXTRAS_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "mxa/mxa.h"

/* o / lse receive a run's result. */
typedef struct problem {
    int64_t b, h, hkv, nq, nk, d;
    float *q, *k, *v, *o, *lse;
    float *bias; /* [bb, bh, nq, nk] or NULL */
    int64_t bb, bh;
    uint8_t *mask; /* [mb, mh, nq, nk] or NULL */
    int64_t mb, mh;
    int32_t *lengths;   /* b entries, or NULL */
    size_t mask_offset; /* > 0: a device test puts the mask in a device buffer at this byte offset */
} problem;

/* Seeded attention-like q, k, v (tu_fill_attention) and room for o and lse. */
problem make(uint64_t seed, int64_t b, int64_t h, int64_t hkv, int64_t nq, int64_t nk, int64_t d);
/* A zero bias [bb, bh, nq, nk] / an all-visible mask [mb, mh, nq, nk] to fill in. */
void add_bias(problem *p, int64_t bb, int64_t bh);
void add_mask(problem *p, int64_t mb, int64_t mh);
void drop(problem *p);
/* A recipe's desc with the given causal alignment and Bc 64 (fixed: a call per batch must
 * tile its keys as the batched call does). */
mxa_attention_desc recipe(mxa_recipe r, int causal);

#endif
