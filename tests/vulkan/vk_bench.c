/*
 * vk_bench: times mxa_attention with device-resident Q/K/V/O (no host copies in
 * the loop). Median of timed runs after warm-up; effective TFLOP/s =
 * 4 B H Nq Nk D / t, halved for causal. Until `mxa bench` exists.
 *   vk_bench [--device vulkan:0] [--shape B,H,N,D] [--hkv N] [--causal] [--recipe r] [--iters n]
 * The variant follows MXA_KERNEL / MXA_DISABLE_COOPMAT like every call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mxa/mxa.h"
#include "testutil.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *device = "vulkan:0", *recipe_name = "mxattention";
    long long B = 1, H = 40, N = 4096, D = 128, HKV = 0;
    int causal = 0, iters = 10, status = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            if (sscanf(argv[++i], "%lld,%lld,%lld,%lld", &B, &H, &N, &D) != 4) {
                fprintf(stderr, "vk_bench: --shape wants B,H,N,D\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--hkv") && i + 1 < argc) HKV = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--causal")) causal = 1;
        else if (!strcmp(argv[i], "--recipe") && i + 1 < argc) recipe_name = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: vk_bench [--device id] [--shape B,H,N,D] [--hkv n] [--causal] [--recipe r] [--iters n]\n");
            return 2;
        }
    }
    if (HKV <= 0) HKV = H;
    if (iters < 1) iters = 1;
    mxa_recipe recipe;
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_buffer *bq = NULL, *bk = NULL, *bv = NULL, *bo = NULL;
    float *host = NULL;
    double *ts = calloc((size_t)iters, sizeof(double)), *ks = calloc((size_t)iters, sizeof(double));
    if (!ts || !ks) goto out;
    if (mxa_recipe_parse(recipe_name, &recipe) || mxa_runtime_create(NULL, &rt) || mxa_device_open(rt, device, &dev)) {
        fprintf(stderr, "vk_bench: %s\n", mxa_last_error_message());
        goto out;
    }
    const size_t nq = (size_t)(B * H * N * D), nk = (size_t)(B * HKV * N * D);
    host = malloc((nq > nk ? nq : nk) * 3 * sizeof(float));
    if (!host) goto out;
    tu_rng r = {42};
    tu_fill_attention(&r, host, host + nq, host + nq + nk, B, H, HKV, N, N, D);
    if (mxa_buffer_create(dev, nq * 4, &bq) || mxa_buffer_create(dev, nk * 4, &bk) || mxa_buffer_create(dev, nk * 4, &bv) ||
        mxa_buffer_create(dev, nq * 4, &bo) || mxa_buffer_upload(bq, 0, host, nq * 4) ||
        mxa_buffer_upload(bk, 0, host + nq, nk * 4) || mxa_buffer_upload(bv, 0, host + nq + nk, nk * 4)) {
        fprintf(stderr, "vk_bench: %s\n", mxa_last_error_message());
        goto out;
    }
    mxa_tensor tq = tu_tensor(NULL, B, H, N, D), tk = tu_tensor(NULL, B, HKV, N, D), tv = tu_tensor(NULL, B, HKV, N, D),
               to = tu_tensor(NULL, B, H, N, D);
    tq.buffer = bq; tk.buffer = bk; tv.buffer = bv; to.buffer = bo;
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, recipe);
    desc.causal = causal;
    mxa_attention_info info;
    for (int i = 0; i < 2; i++) /* warm-up: pipelines, caches, clocks */
        if (mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, &info)) {
            fprintf(stderr, "vk_bench: %s\n", mxa_last_error_message());
            goto out;
        }
    for (int i = 0; i < iters; i++) {
        double t0 = now();
        if (mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, &info)) goto out;
        ts[i] = now() - t0;
        ks[i] = info.kernel_seconds;
    }
    qsort(ts, (size_t)iters, sizeof(double), cmp_double);
    qsort(ks, (size_t)iters, sizeof(double), cmp_double);
    const double flops = 4.0 * (double)B * (double)H * (double)N * (double)N * (double)D * (causal ? 0.5 : 1.0);
    const double t = ts[iters / 2], k = ks[iters / 2];
    printf("vk_bench %s B=%lld H=%lld Hkv=%lld N=%lld D=%lld %s %s variant=%s bc=%d: wall %.3f ms (%.1f TFLOP/s), "
           "device %.3f ms (%.1f TFLOP/s)\n",
           device, B, H, HKV, N, D, recipe_name, causal ? "causal" : "non-causal", info.variant, info.bc, t * 1e3,
           flops / t * 1e-12, k * 1e3, k > 0 ? flops / k * 1e-12 : 0.0);
    status = 0;
out:
    mxa_buffer_destroy(bq);
    mxa_buffer_destroy(bk);
    mxa_buffer_destroy(bv);
    mxa_buffer_destroy(bo);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    free(host);
    free(ts);
    free(ks);
    return status;
}
