/* Helpers shared by the test programs: seeded data, error measures. */
#ifndef MXA_TESTS_TESTUTIL_H
#define MXA_TESTS_TESTUTIL_H

#include <stdint.h>

#include "mxa/mxa.h"

/* A seeded splitmix64 generator: the same seed gives the same data everywhere. */
typedef struct tu_rng {
    uint64_t state;
} tu_rng;

uint64_t tu_next(tu_rng *r);
double tu_uniform(tu_rng *r);             /* [0, 1) */
double tu_normal(tu_rng *r);              /* standard normal */
void tu_fill_normal(tu_rng *r, float *x, int64_t n, float sigma);

/* Attention-like inputs: q/k with a few outlier channels (what Hadamard is
 * for), scores of standard deviation about 2.5; v unit noise around a
 * per-channel mean. D <= 256. */
void tu_fill_attention(tu_rng *r, float *q, float *k, float *v, int64_t b, int64_t h, int64_t hkv,
                       int64_t nq, int64_t nk, int64_t d);

/* sum (a-b)^2 / sum b^2 (b is the reference). */
double tu_nmse(const float *a, const float *b, int64_t n);
double tu_cosine(const float *a, const float *b, int64_t n);
double tu_max_abs_diff(const float *a, const float *b, int64_t n);

/* A contiguous float32 host tensor over `data`. */
mxa_tensor tu_tensor(float *data, int64_t b, int64_t h, int64_t n, int64_t d);

/* One small mxattention call (2 queries, 2 keys, D = 32, seeded normal data) on dev:
 * for tests that need a device to have really run something. */
mxa_status tu_small_attention(mxa_device *dev, uint64_t seed);

#endif
