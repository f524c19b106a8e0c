/*
 * include/mxa/mxa_hip.h: mxa on an application's HIP device, memory and stream.
 * Built in every build; without the HIP backend each entry point says so.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mxa/mxa_hip.h"
#include "../../runtime/runtime_internal.h"
#include "../../runtime/status.h"

#ifdef MXA_HAVE_HIP
#include "hip_device.h"

mxa_status mxa_hip_device_create(mxa_runtime *rt, int hip_device, mxa_device **out)
{
    if (!rt || !out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_hip_device_create: NULL argument");
    *out = NULL;
    if (hip_device < 0)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_hip_device_create: HIP device %d is not an ordinal", hip_device);
    char reason[MXA_REASON_LEN];
    mxa_hip_api *api = NULL;
    mxa_status st = mxa_hip_api_load(&api, reason, sizeof reason);
    if (st == MXA_ERR_OUT_OF_MEMORY) return st;
    if (st) return mxa_fail(st, "mxa_hip_device_create: %s", reason);
    int count = 0;
    hipError_t e = api->hipInit(0);
    if (e == MXA_HIP_SUCCESS) e = api->hipGetDeviceCount(&count);
    mxa_probed_device *pd = NULL;
    if (e != MXA_HIP_SUCCESS) st = mxa_hip_fail(api, e, "hipInit / hipGetDeviceCount");
    else if (hip_device >= count)
        st = mxa_fail(MXA_ERR_NOT_FOUND, "mxa_hip_device_create: no HIP device %d (the runtime reports %d)", hip_device,
                      count);
    else if (!(pd = calloc(1, sizeof *pd)))
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_hip_device_create: out of memory");
    else if ((st = mxa_hip_probe_device(api, hip_device, pd))) { /* holds its own reference of api */
        free(pd);
        pd = NULL;
    }
    mxa_hip_api_release(api);
    if (st || !pd) return st ? st : mxa_fail(MXA_ERR_INTERNAL, "mxa_hip_device_create: no probe record");
    snprintf(pd->info.id, sizeof pd->info.id, "hip:%d", hip_device);
    pd->info.index = hip_device;
    void *impl = NULL;
    if ((st = mxa_hip_backend.open(pd, &impl))) {
        mxa_hip_backend.release(pd, 1);
        free(pd);
        return st;
    }
    return mxa_device_adopt(rt, &mxa_hip_backend, pd, impl, out);
}

/* MXA_OK when dev is an open mxa device of the HIP backend. */
static mxa_status hip_device_check(const mxa_device *dev, const char *fn)
{
    return mxa_device_check_backend(dev, &mxa_hip_backend, "a HIP", fn);
}

mxa_status mxa_hip_buffer_wrap(mxa_device *dev, void *device_ptr, size_t size, mxa_buffer **out)
{
    const char *fn = "mxa_hip_buffer_wrap";
    mxa_status st = hip_device_check(dev, fn);
    if (st) return st;
    if (!out || !device_ptr) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    *out = NULL;
    if (size == 0) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: size is 0", fn);
    void *handle = NULL;
    pthread_mutex_lock(&dev->lock);
    st = mxa_hip_buffer_wrap_handle(dev->impl, device_ptr, size, &handle);
    pthread_mutex_unlock(&dev->lock);
    return st ? st : mxa_buffer_adopt(dev, handle, size, out);
}

mxa_status mxa_hip_attention_enqueue(mxa_device *dev, hipStream_t stream, const mxa_attention_desc *desc,
                                     const mxa_tensor *q, const mxa_tensor *k, const mxa_tensor *v, mxa_tensor *o,
                                     mxa_tensor *lse)
{
    const char *fn = "mxa_hip_attention_enqueue";
    mxa_attention_call call;
    mxa_status st = hip_device_check(dev, fn);
    if (st || (st = mxa_attention_call_device(dev, fn, desc, q, k, v, o, lse, &call))) return st;
    mxa_hip_device *hd = dev->impl;
    mxa_hip_readback unused; /* every output is a device buffer */
    const char *variant = NULL;
    int previous;
    pthread_mutex_lock(&dev->lock);
    if (!(st = mxa_hip_enter(hd, &previous))) {
        mxa_hip_complete_pending(hd); /* its host outputs come from the scratch this call reuses */
        st = mxa_hip_attention_enqueue_call(hd, &call, stream, &unused, &variant);
        mxa_hip_leave(hd, previous);
    }
    pthread_mutex_unlock(&dev->lock);
    return st;
}

#else

mxa_status mxa_hip_device_create(mxa_runtime *rt, int hip_device, mxa_device **out)
{
    (void)rt, (void)hip_device;
    if (out) *out = NULL;
    return mxa_fail(MXA_ERR_UNSUPPORTED, "mxa_hip_device_create: this mxa was built without the HIP backend");
}

mxa_status mxa_hip_buffer_wrap(mxa_device *dev, void *device_ptr, size_t size, mxa_buffer **out)
{
    (void)dev, (void)device_ptr, (void)size;
    if (out) *out = NULL;
    return mxa_fail(MXA_ERR_UNSUPPORTED, "mxa_hip_buffer_wrap: this mxa was built without the HIP backend");
}

mxa_status mxa_hip_attention_enqueue(mxa_device *dev, hipStream_t stream, const mxa_attention_desc *desc,
                                     const mxa_tensor *q, const mxa_tensor *k, const mxa_tensor *v, mxa_tensor *o,
                                     mxa_tensor *lse)
{
    (void)dev, (void)stream, (void)desc, (void)q, (void)k, (void)v, (void)o, (void)lse;
    return mxa_fail(MXA_ERR_UNSUPPORTED, "mxa_hip_attention_enqueue: this mxa was built without the HIP backend");
}

#endif
