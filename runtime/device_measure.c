/*
 * mxa_device_measure: a short real attention call on a device, timed and cached, so
 * that "auto" ranks devices by what they measured rather than by an estimate (speed.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "speed.h"
#include "status.h"

#define MEASURE_D 128
#define MEASURE_MIN_SECONDS 0.010 /* one call this long: launch and submit overheads are small */
#define MEASURE_MAX_KEYS 16384
#define MEASURE_MAX_HEADS 32      /* 268 MB per float32 tensor at N 16384 */
#define MEASURE_REPS 3

/* Device buffers of q, k, v (seeded values) and o at one shape [1, heads, keys, D]. */
typedef struct measure_run {
    int64_t heads, keys;
    mxa_buffer *buf[4];
} measure_run;

static void run_free(measure_run *r)
{
    for (int i = 0; i < 4; i++) mxa_buffer_destroy(r->buf[i]);
    memset(r, 0, sizeof *r);
}

static mxa_status run_alloc(mxa_device *dev, measure_run *r, int64_t heads, int64_t keys)
{
    memset(r, 0, sizeof *r);
    r->heads = heads;
    r->keys = keys;
    const size_t count = (size_t)(heads * keys * MEASURE_D), bytes = count * sizeof(float);
    float *host = malloc(bytes);
    if (!host) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_device_measure: out of memory");
    mxa_status st = MXA_OK;
    uint32_t x = 0x9e3779b9u;
    for (int i = 0; i < 4 && st == MXA_OK; i++) {
        st = mxa_buffer_create(dev, bytes, &r->buf[i]);
        if (st || i == 3) continue; /* o is written by the call */
        for (size_t j = 0; j < count; j++) { /* uniform in [-2, 2): attention-like, no special case */
            x = x * 1664525u + 1013904223u;
            host[j] = (float)(x >> 8) * (4.0f / 16777216.0f) - 2.0f;
        }
        st = mxa_buffer_upload(r->buf[i], 0, host, bytes);
    }
    free(host);
    if (st) run_free(r);
    return st;
}

static mxa_status run_time(mxa_device *dev, const measure_run *r, double *seconds)
{
    mxa_tensor t[4];
    for (int i = 0; i < 4; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].dtype = MXA_F32;
        t[i].shape[0] = 1;
        t[i].shape[1] = r->heads;
        t[i].shape[2] = r->keys;
        t[i].shape[3] = MEASURE_D;
        t[i].buffer = r->buf[i];
    }
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    mxa_status st = mxa_attention(dev, &desc, &t[0], &t[1], &t[2], &t[3], NULL, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    *seconds = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

mxa_status mxa_device_measure(mxa_device *dev, double *tflops)
{
    mxa_device_info info;
    mxa_status st = mxa_device_info_of(dev, &info);
    if (st) return st;
    measure_run cur, next;
    double t = 0.0;
    if ((st = run_alloc(dev, &cur, 8, 256))) return st;
    /* the first call builds or loads the kernels; the second is the first timing */
    if ((st = run_time(dev, &cur, &t)) || (st = run_time(dev, &cur, &t))) {
        run_free(&cur);
        return st;
    }
    /* grow the work 4x a step (N, then H) until one call is long enough; a shape the
     * device cannot hold (memory) ends the growth at the last one that ran */
    while (t < MEASURE_MIN_SECONDS && (cur.keys < MEASURE_MAX_KEYS || cur.heads < MEASURE_MAX_HEADS)) {
        const int64_t keys = cur.keys < MEASURE_MAX_KEYS ? cur.keys * 2 : cur.keys;
        const int64_t heads = cur.keys < MEASURE_MAX_KEYS ? cur.heads : cur.heads * 4;
        double tn;
        if (run_alloc(dev, &next, heads, keys)) break;
        if (run_time(dev, &next, &tn)) { /* its first call: a warm-up for the timings below */
            run_free(&next);
            break;
        }
        run_free(&cur);
        cur = next;
        t = tn;
    }
    mxa_clear_error();
    double times[MEASURE_REPS];
    for (int i = 0; i < MEASURE_REPS && st == MXA_OK; i++) st = run_time(dev, &cur, &times[i]);
    const int64_t heads = cur.heads, keys = cur.keys;
    run_free(&cur);
    if (st) return st;
    qsort(times, MEASURE_REPS, sizeof times[0], cmp_double);
    const double median = times[MEASURE_REPS / 2];
    const double flops = 4.0 * (double)heads * (double)keys * (double)keys * MEASURE_D;
    const double rate = median > 0.0 ? flops / median / 1e12 : 0.0;
    if (!(rate > 0.0))
        return mxa_fail(MXA_ERR_INTERNAL, "mxa_device_measure: the clock measured no time for a call");
    mxa_speed_record rec = {rate, (int32_t)heads, (int32_t)keys, MEASURE_D, MEASURE_REPS};
    if (mxa_speed_store(&info, &rec) != MXA_OK)
        return mxa_fail(MXA_ERR_IO, "mxa_device_measure: %s: %.2f TFLOP/s measured, but the cache could not store it", info.id,
                        rate);
    MXA_LOG_I("%s: %.2f TFLOP/s (mxattention B1 H%lld N%lld D%d, median of %d)", info.id, rate, (long long)heads,
              (long long)keys, MEASURE_D, MEASURE_REPS);
    if (tflops) *tflops = rate;
    mxa_clear_error();
    return MXA_OK;
}
