/*
 * mxa attention inside an application's own OpenCL context, in the application's command
 * stream: the application owns the context, the queue and the buffers; mxa adopts the device,
 * wraps the buffers and enqueues attention between the application's own commands, chained by
 * events, with no host round trip and no wait inside mxa.
 *
 * Build: cc opencl_interop.c -lmxa -lOpenCL   Run: ./opencl_interop   (exit 0 on success)
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <mxa/mxa.h>
#include <mxa/mxa_opencl.h>

enum { B = 1, H = 4, N = 256, D = 64 }; /* q, k, v, o: [B, H, N, D] float32 */

#define CHECK_CL(call)                                                        \
    do {                                                                      \
        cl_int e_ = (call);                                                   \
        if (e_ != CL_SUCCESS) {                                               \
            fprintf(stderr, "%s failed: %d\n", #call, e_);                    \
            return 1;                                                         \
        }                                                                     \
    } while (0)
#define CHECK_MXA(call)                                                       \
    do {                                                                      \
        if ((call) != MXA_OK) {                                               \
            fprintf(stderr, "%s failed: %s\n", #call, mxa_last_error_message()); \
            return 1;                                                         \
        }                                                                     \
    } while (0)

int main(void)
{
    /* ---- the application's OpenCL objects */
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    CHECK_CL(clGetPlatformIDs(1, &platform, NULL));
    CHECK_CL(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK_CL(err);
    cl_command_queue queue = clCreateCommandQueue(ctx, device, 0, &err); /* in order */
    CHECK_CL(err);
    const size_t bytes = (size_t)B * H * N * D * sizeof(float);
    cl_mem mq = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem mk = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem mv = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem mo = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK_CL(err);

    /* ---- mxa over them: once, at start-up */
    mxa_runtime *rt;
    mxa_device *dev;
    mxa_buffer *bq, *bk, *bv, *bo;
    CHECK_MXA(mxa_runtime_create(NULL, &rt));
    CHECK_MXA(mxa_opencl_device_create(rt, ctx, device, &dev));
    CHECK_MXA(mxa_opencl_buffer_wrap(dev, mq, 0, bytes, &bq));
    CHECK_MXA(mxa_opencl_buffer_wrap(dev, mk, 0, bytes, &bk));
    CHECK_MXA(mxa_opencl_buffer_wrap(dev, mv, 0, bytes, &bv));
    CHECK_MXA(mxa_opencl_buffer_wrap(dev, mo, 0, bytes, &bo));
    mxa_tensor q, k, v, o;
    mxa_tensor_init(&q, MXA_F32, B, H, N, D, NULL);
    k = v = o = q;
    q.buffer = bq;
    k.buffer = bk;
    v.buffer = bv;
    o.buffer = bo;
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;

    /* ---- the hot loop: the application's writes, mxa attention, the application's read */
    float *host = malloc(bytes), *out = malloc(bytes);
    if (!host || !out) return 1;
    for (size_t i = 0; i < bytes / sizeof(float); i++) host[i] = sinf(0.37f * (float)i);
    cl_event writes[3], done, read;
    CHECK_CL(clEnqueueWriteBuffer(queue, mq, CL_FALSE, 0, bytes, host, 0, NULL, &writes[0]));
    CHECK_CL(clEnqueueWriteBuffer(queue, mk, CL_FALSE, 0, bytes, host, 0, NULL, &writes[1]));
    CHECK_CL(clEnqueueWriteBuffer(queue, mv, CL_FALSE, 0, bytes, host, 0, NULL, &writes[2]));
    CHECK_MXA(mxa_opencl_attention_enqueue(dev, queue, 3, writes, &done, &desc, &q, &k, &v, &o, NULL));
    CHECK_CL(clEnqueueReadBuffer(queue, mo, CL_FALSE, 0, bytes, out, 1, &done, &read));
    CHECK_CL(clWaitForEvents(1, &read));

    /* row 0 sees only key 0 (causal): its output is v's row 0 as MXFP4 (|v| <= 1: error < 0.25) */
    printf("o[0][0..3] = %.4f %.4f %.4f %.4f (v: %.4f %.4f %.4f %.4f)\n", out[0], out[1], out[2], out[3], host[0],
           host[1], host[2], host[3]);
    int ok = 1;
    for (int c = 0; c < D; c++) ok &= fabsf(out[c] - host[c]) < 0.25f;

    /* ---- tear-down: events, then mxa, then the application's objects (any order is safe) */
    for (int i = 0; i < 3; i++) clReleaseEvent(writes[i]);
    clReleaseEvent(done);
    clReleaseEvent(read);
    mxa_buffer_destroy(bq);
    mxa_buffer_destroy(bk);
    mxa_buffer_destroy(bv);
    mxa_buffer_destroy(bo);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    clReleaseMemObject(mq);
    clReleaseMemObject(mk);
    clReleaseMemObject(mv);
    clReleaseMemObject(mo);
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    free(host);
    free(out);
    return ok ? 0 : 1;
}
