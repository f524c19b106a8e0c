/*
 * OpenCL attention benchmark (not a test): mxa_attention on device buffers,
 * median kernel time (event profiling: preparation + attention kernels) after
 * warm-up, effective TFLOP/s = 4 B H Nq Nk D / t (causal: half of that work).
 * Usage: cl_bench [--device opencl:0] [--shape B,H,N,D] [--recipe mxattention]
 *                 [--causal] [--bc N] [--iters N] [--check]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mxa/mxa.h"
#include "testutil.h"

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    const char *device = "opencl:0", *recipe_name = "mxattention";
    long long b = 1, h = 40, n = 16384, d = 128;
    int causal = 0, bc = 0, iters = 10, check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            if (sscanf(argv[++i], "%lld,%lld,%lld,%lld", &b, &h, &n, &d) != 4) {
                fprintf(stderr, "cl_bench: --shape wants B,H,N,D\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--recipe") && i + 1 < argc) recipe_name = argv[++i];
        else if (!strcmp(argv[i], "--causal")) causal = 1;
        else if (!strcmp(argv[i], "--check")) check = 1;
        else if (!strcmp(argv[i], "--bc") && i + 1 < argc) bc = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "cl_bench: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (iters < 1 || iters > 1000) iters = 10;
    mxa_recipe recipe;
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_buffer *bq = NULL, *bk = NULL, *bv = NULL, *bo = NULL;
    float *host = NULL, *out = NULL;
    double *times = NULL;
    int rc = 1;
    if (mxa_recipe_parse(recipe_name, &recipe) || mxa_runtime_create(NULL, &rt) || mxa_device_open(rt, device, &dev)) {
        fprintf(stderr, "cl_bench: %s\n", mxa_last_error_message());
        goto out;
    }
    mxa_device_info info;
    mxa_device_info_of(dev, &info);
    const size_t el = (size_t)(b * h * n * d), bytes = el * sizeof(float);
    host = malloc(bytes);
    times = malloc((size_t)iters * sizeof(double));
    if (!host || !times) goto out;
    /* uniform data of unit variance (fast to make at 1 GB; timing does not depend on it) */
    tu_rng r = {1234};
    for (size_t i = 0; i < el; i++) host[i] = (float)(tu_uniform(&r) * 3.4641 - 1.7320);
    if (mxa_buffer_create(dev, bytes, &bq) || mxa_buffer_create(dev, bytes, &bk) || mxa_buffer_create(dev, bytes, &bv) ||
        mxa_buffer_create(dev, bytes, &bo) || mxa_buffer_upload(bq, 0, host, bytes) ||
        mxa_buffer_upload(bk, 0, host, bytes) || mxa_buffer_upload(bv, 0, host, bytes)) {
        fprintf(stderr, "cl_bench: %s\n", mxa_last_error_message());
        goto out;
    }
    mxa_tensor tq = tu_tensor(NULL, b, h, n, d), tk = tq, tv = tq, to = tq;
    tq.buffer = bq;
    tk.buffer = bk;
    tv.buffer = bv;
    to.buffer = bo;
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, recipe);
    desc.causal = causal;
    desc.bc = bc;
    mxa_attention_info ai;
    for (int w = 0; w < 2; w++)
        if (mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, &ai)) {
            fprintf(stderr, "cl_bench: %s\n", mxa_last_error_message());
            goto out;
        }
    double wall = now();
    for (int i = 0; i < iters; i++) {
        if (mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, &ai)) {
            fprintf(stderr, "cl_bench: %s\n", mxa_last_error_message());
            goto out;
        }
        times[i] = ai.kernel_seconds;
    }
    wall = (now() - wall) / iters;
    qsort(times, (size_t)iters, sizeof *times, cmp_double);
    const double t = times[iters / 2];
    const double flop = 4.0 * (double)b * h * n * n * d * (causal ? 0.5 : 1.0);
    printf("cl_bench: %s (%s) variant %s bc %d recipe %s B=%lld H=%lld N=%lld D=%lld%s: median %.3f ms "
           "(min %.3f, wall %.3f ms/call), %.2f TFLOP/s effective\n",
           info.id, info.name, ai.variant, ai.bc, recipe_name, b, h, n, d, causal ? " causal" : "", t * 1e3,
           times[0] * 1e3, wall * 1e3, flop / t * 1e-12);
    if (check) { /* first head against the reference (slow on the host: small shapes only) */
        out = malloc(bytes);
        float *ref = malloc((size_t)(n * d) * sizeof(float));
        if (out && ref && !mxa_buffer_download(bo, 0, out, bytes)) {
            mxa_tensor hq = tu_tensor(host, 1, 1, n, d), hr = tu_tensor(ref, 1, 1, n, d);
            if (!mxa_reference_attention(&desc, ai.bc, &hq, &hq, &hq, &hr, NULL, NULL))
                printf("cl_bench: head 0 nmse vs reference %.3g\n", tu_nmse(out, ref, n * d));
        }
        free(ref);
    }
    rc = 0;
out:
    mxa_buffer_destroy(bq);
    mxa_buffer_destroy(bk);
    mxa_buffer_destroy(bv);
    mxa_buffer_destroy(bo);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    free(host);
    free(out);
    free(times);
    return rc;
}
