/*
 * mxa inside a HIP application: the application owns the device, the memory and
 * the stream; mxa enqueues prep + attention on that stream and returns at once.
 *
 *   cc -D__HIP_PLATFORM_AMD__ -I/opt/rocm/include hip_interop.c -lmxa -L/opt/rocm/lib -lamdhip64 -lm
 *
 * Running it needs an AMD GPU with ROCm. This project has none: its build compiles
 * this file against a stand-in of <hip/hip_runtime_api.h> (tests/hip/include) and
 * runs it against the test double of the HIP runtime, whose kernels run on a host
 * emulator (ctest: example_hip_interop). It has never run on AMD hardware.
 */
#include <stdio.h>
#include <stdlib.h>

#include <hip/hip_runtime_api.h>

#include "mxa/mxa.h"
#include "mxa/mxa_hip.h"

#define HIP_OK(call)                                                                                                \
    do {                                                                                                            \
        hipError_t e_ = (call);                                                                                     \
        if (e_ != hipSuccess) return fprintf(stderr, "%s: %s\n", #call, hipGetErrorString(e_)), 1;                  \
    } while (0)
#define MXA_OK(call)                                                                                                \
    do {                                                                                                            \
        if ((call) != MXA_OK) return fprintf(stderr, "%s: %s\n", #call, mxa_last_error_message()), 1;               \
    } while (0)

enum { B = 1, H = 4, N = 256, D = 64 };

/* A [B, H, N, D] float32 tensor in an mxa buffer. */
static mxa_tensor device_tensor(mxa_buffer *buf)
{
    mxa_tensor t = {MXA_F32, {B, H, N, D}, {0, 0, 0, 0}, NULL, buf, 0};
    return t;
}

int main(void)
{
    const size_t n = (size_t)B * H * N * D, bytes = n * sizeof(float);
    float *x = malloc(bytes), *out = malloc(bytes), *ref = malloc(bytes);
    if (!x || !out || !ref) return 1;
    for (size_t i = 0; i < n; i++) x[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;

    /* The application's own device memory and stream (q = k = v = x for brevity). */
    void *qkv = NULL, *o = NULL;
    hipStream_t stream;
    HIP_OK(hipSetDevice(0));
    HIP_OK(hipMalloc(&qkv, bytes));
    HIP_OK(hipMalloc(&o, bytes));
    HIP_OK(hipStreamCreate(&stream));
    HIP_OK(hipMemcpy(qkv, x, bytes, hipMemcpyHostToDevice));

    /* mxa on the same device, over the same memory. */
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_buffer *bx = NULL, *bo = NULL;
    MXA_OK(mxa_runtime_create(NULL, &rt));
    MXA_OK(mxa_hip_device_create(rt, 0, &dev));
    MXA_OK(mxa_hip_buffer_wrap(dev, qkv, bytes, &bx));
    MXA_OK(mxa_hip_buffer_wrap(dev, o, bytes, &bo));
    const mxa_tensor tx = device_tensor(bx);
    mxa_tensor to = device_tensor(bo);
    mxa_attention_desc desc;
    MXA_OK(mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION));
    desc.causal = MXA_CAUSAL_TOP_LEFT;
    desc.bc = 64;
    MXA_OK(mxa_hip_attention_enqueue(dev, stream, &desc, &tx, &tx, &tx, &to, NULL));

    /* Stream order: whatever the application enqueues next on `stream` sees o. */
    HIP_OK(hipStreamSynchronize(stream));
    HIP_OK(hipMemcpy(out, o, bytes, hipMemcpyDeviceToHost));

    /* Against the reference MXAttention on the host (same recipe and bc). */
    mxa_tensor hx, hr;
    MXA_OK(mxa_tensor_init(&hx, MXA_F32, B, H, N, D, x));
    MXA_OK(mxa_tensor_init(&hr, MXA_F32, B, H, N, D, ref));
    MXA_OK(mxa_reference_attention(&desc, desc.bc, &hx, &hx, &hx, &hr, NULL, NULL));
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < n; i++) err += (out[i] - ref[i]) * (out[i] - ref[i]), norm += ref[i] * ref[i];
    printf("mxa on the application's HIP stream: NMSE vs the reference %.3g\n", err / norm);

    mxa_buffer_destroy(bx); /* the application's memory stays; mxa never frees it */
    mxa_buffer_destroy(bo);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    HIP_OK(hipStreamDestroy(stream));
    HIP_OK(hipFree(qkv));
    HIP_OK(hipFree(o));
    free(x), free(out), free(ref);
    return err / norm < 1e-6 ? 0 : 1;
}
