/* Kernels of an opened device: built once (hiprtc or the cache), kept until close. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/log.h"
#include "../../runtime/status.h"
#include "hip_device.h"

/* Finds or builds the program `name` with `options`, resolving its entry points. */
static mxa_status get_kernel(mxa_hip_device *dev, const char *name, const char *source, const char *options,
                             const char *const entries[3], const mxa_hip_kernel **out)
{
    char key[160];
    snprintf(key, sizeof key, "%s %s", name, options);
    for (int i = 0; i < dev->kernel_count; i++)
        if (strcmp(dev->kernels[i].key, key) == 0) {
            *out = &dev->kernels[i];
            return MXA_OK;
        }
    if (dev->kernel_count == dev->kernel_cap) {
        int cap = dev->kernel_cap ? 2 * dev->kernel_cap : 8;
        mxa_hip_kernel *k = realloc(dev->kernels, (size_t)cap * sizeof *k);
        if (!k) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "hip: out of memory");
        dev->kernels = k;
        dev->kernel_cap = cap;
    }
    mxa_hip_kernel kern;
    memset(&kern, 0, sizeof kern);
    snprintf(kern.key, sizeof kern.key, "%s", key);
    mxa_hip_origin origin;
    mxa_status st = mxa_hip_program_load(dev->api, dev->arch.full, name, source, options, &kern.module, &origin);
    if (st) return st;
    hipFunction_t *fns[3] = {&kern.fn_a, &kern.fn_b, &kern.fn_c};
    for (int i = 0; i < 3 && entries[i]; i++) {
        hipError_t e = dev->api->hipModuleGetFunction(fns[i], kern.module, entries[i]);
        if (e != MXA_HIP_SUCCESS) {
            char call[96];
            snprintf(call, sizeof call, "hipModuleGetFunction(%s)", entries[i]);
            st = mxa_hip_fail(dev->api, e, call);
            dev->api->hipModuleUnload(kern.module);
            return st;
        }
    }
    if (origin == MXA_HIP_FROM_CACHE) dev->cache_hits++;
    else dev->compiled++;
    MXA_LOG_I("hip: %s for %s from the %s", key, dev->arch.full, origin == MXA_HIP_FROM_CACHE ? "cache" : "compiler");
    dev->kernels[dev->kernel_count] = kern;
    *out = &dev->kernels[dev->kernel_count++];
    return MXA_OK;
}

mxa_status mxa_hip_prep_kernels(mxa_hip_device *dev, const mxa_hip_kernel **out)
{
    static const char *const entries[3] = {"mxa_quantize_rows", "mxa_prep_qk", "mxa_prep_v"};
    return get_kernel(dev, "mxa_prep", mxa_hip_src_prep, "", entries, out);
}

mxa_status mxa_hip_attention_kernel(mxa_hip_device *dev, int d, int bc, mxa_hip_variant variant, int extras,
                                    int out_type, const mxa_hip_kernel **out)
{
    static const char *const entries[3] = {"mxa_attention", NULL, NULL};
    char options[128];
    snprintf(options, sizeof options,
             "-DMXA_D=%d -DMXA_BC=%d -DMXA_VARIANT=%d -DMXA_MFMA_K16=%d -DMXA_EXTRAS=%d -DMXA_OUT=%d", d, bc,
             (int)variant, dev->arch.mfma_i8_k == 16, extras != 0, out_type);
    return get_kernel(dev, "mxa_attention", mxa_hip_src_attention, options, entries, out);
}

mxa_status mxa_hip_launch(mxa_hip_device *dev, hipStream_t stream, hipFunction_t fn, const char *name, unsigned gx,
                          unsigned gy, unsigned gz, unsigned threads, void *args)
{
    if (gx == 0 || gy == 0 || gz == 0) return MXA_OK; /* nothing to do */
    void *params[1] = {args};
    hipError_t e = dev->api->hipModuleLaunchKernel(fn, gx, gy, gz, threads, 1, 1, 0, stream, params, NULL);
    if (e != MXA_HIP_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "hipModuleLaunchKernel(%s, grid %ux%ux%u)", name, gx, gy, gz);
        return mxa_hip_fail(dev->api, e, call);
    }
    return MXA_OK;
}

mxa_status mxa_hip_alloc(mxa_hip_device *dev, size_t bytes, void **ptr)
{
    *ptr = NULL;
    hipError_t e = dev->api->hipMalloc(ptr, bytes ? bytes : 4);
    if (e != MXA_HIP_SUCCESS) {
        *ptr = NULL;
        char call[64];
        snprintf(call, sizeof call, "hipMalloc(%zu bytes)", bytes);
        return mxa_hip_fail(dev->api, e, call);
    }
    return MXA_OK;
}

void mxa_hip_free(mxa_hip_device *dev, void *ptr)
{
    if (ptr) dev->api->hipFree(ptr);
}

void *mxa_hip_buffer_at(void *handle, size_t offset)
{
    return (char *)((mxa_hip_buffer *)handle)->ptr + offset;
}

mxa_status mxa_hip_array_ptr(mxa_hip_device *dev, const mxa_array *a, void **ptr, void **owned)
{
    *owned = NULL;
    if (!a->host) {
        *ptr = mxa_hip_buffer_at(a->buffer, a->offset);
        return MXA_OK;
    }
    const size_t bytes = (size_t)(a->b * a->h * a->n * a->d) * sizeof(float);
    mxa_status st = mxa_hip_alloc(dev, bytes, owned);
    if (st) return st;
    hipError_t e = dev->api->hipMemcpyHtoD(*owned, a->host, bytes);
    if (e != MXA_HIP_SUCCESS) {
        mxa_hip_free(dev, *owned);
        *owned = NULL;
        return mxa_hip_fail(dev->api, e, "hipMemcpyHtoD");
    }
    *ptr = *owned;
    return MXA_OK;
}
