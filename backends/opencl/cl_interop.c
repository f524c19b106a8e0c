/*
 * The OpenCL interop entry points (include/mxa/mxa_opencl.h): an mxa device over the
 * application's context, buffers over its cl_mem, attention on its queue after its events.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "mxa/mxa_opencl.h"
#include "runtime_internal.h"
#include "status.h"

#define ADOPTED_ID "opencl:adopted"

mxa_status mxa_opencl_device_create(mxa_runtime *rt, cl_context context, cl_device_id device, mxa_device **out)
{
    static const char fn[] = "mxa_opencl_device_create";
    if (!rt || !context || !device || !out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    *out = NULL;
    const mxa_cl_api *cl = NULL;
    char reason[MXA_REASON_LEN];
    if (mxa_cl_load(&cl, reason, sizeof reason) != MXA_OK)
        return mxa_fail(MXA_ERR_NOT_FOUND, "%s: the OpenCL library cannot be loaded: %s", fn, reason);
    size_t size = 0;
    cl_int err = cl->GetContextInfo(context, CL_CONTEXT_DEVICES, 0, NULL, &size);
    if (err != CL_SUCCESS || size == 0 || size % sizeof(cl_device_id))
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: not a valid cl_context (clGetContextInfo: %s)", fn,
                        mxa_cl_error_name(err));
    cl_device_id *devices = malloc(size);
    if (!devices) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    int member = 0;
    if (cl->GetContextInfo(context, CL_CONTEXT_DEVICES, size, devices, NULL) == CL_SUCCESS)
        for (size_t i = 0; i < size / sizeof *devices; i++) member |= devices[i] == device;
    free(devices);
    if (!member) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: the device is not one of the context's devices", fn);
    cl_platform_id platform = NULL;
    char platform_name[128] = "";
    if ((err = cl->GetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL)) != CL_SUCCESS)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: not a valid cl_device_id (clGetDeviceInfo: %s)", fn,
                        mxa_cl_error_name(err));
    cl->GetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof platform_name, platform_name, NULL);
    platform_name[sizeof platform_name - 1] = '\0';

    mxa_probed_device *probe = calloc(1, sizeof *probe);
    if (!probe) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (!mxa_cl_describe(cl, platform, platform_name, device, probe)) {
        free(probe);
        return mxa_fail(MXA_ERR_UNSUPPORTED, "%s: the device is not available or has no OpenCL C compiler", fn);
    }
    const cl_device_desc *dd = probe->probe_data;
    if (!dd->supported[CL_VARIANT_TILED] && !dd->supported[CL_VARIANT_MMA_PTX]) {
        mxa_status st = mxa_fail(MXA_ERR_UNSUPPORTED, "%s: %s cannot run mxa's kernels: %s", fn, probe->info.name,
                                 probe->info.variant_reason);
        mxa_cl_release(probe, 1);
        free(probe);
        return st;
    }
    snprintf(probe->info.id, sizeof probe->info.id, ADOPTED_ID);
    probe->info.index = -1; /* not one of the probed devices */
    void *impl = NULL;
    mxa_status st = mxa_cl_open_in(probe, context, &impl);
    if (st) {
        mxa_cl_release(probe, 1);
        free(probe);
        return st;
    }
    return mxa_device_adopt(rt, &mxa_opencl_backend, probe, impl, out);
}

/* MXA_OK if dev is an open OpenCL device (adopted or opened by mxa). */
static mxa_status opencl_device(const mxa_device *dev, const char *fn)
{
    return mxa_device_check_backend(dev, &mxa_opencl_backend, "an OpenCL", fn);
}

mxa_status mxa_opencl_buffer_wrap(mxa_device *dev, cl_mem mem, size_t offset, size_t size, mxa_buffer **out)
{
    static const char fn[] = "mxa_opencl_buffer_wrap";
    mxa_status st = opencl_device(dev, fn);
    if (st) return st;
    if (!mem || !out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    *out = NULL;
    if (size == 0) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: size is 0", fn);
    if (offset % 4) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: offset %zu is not a multiple of 4", fn, offset);
    cl_impl *d = dev->impl;
    cl_context context = NULL;
    size_t mem_size = 0;
    cl_int err = d->cl->GetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof context, &context, NULL);
    if (err == CL_SUCCESS) err = d->cl->GetMemObjectInfo(mem, CL_MEM_SIZE, sizeof mem_size, &mem_size, NULL);
    if (err != CL_SUCCESS)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: not a valid cl_mem (clGetMemObjectInfo: %s)", fn,
                        mxa_cl_error_name(err));
    if (context != d->context)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: the cl_mem belongs to another context than %s's", fn,
                        dev->probed->info.id);
    if (offset > mem_size || size > mem_size - offset)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: %zu bytes at offset %zu do not fit the %zu-byte cl_mem", fn, size,
                        offset, mem_size);
    cl_buffer *b = calloc(1, sizeof *b);
    if (!b) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    d->cl->RetainMemObject(mem);
    b->mem = mem;
    b->base = offset;
    b->bytes = size;
    return mxa_buffer_adopt(dev, b, size, out); /* released by buffer_destroy, also on failure */
}

/* MXA_OK if `queue` is an in-order queue of d's context and device. */
static mxa_status check_queue(const cl_impl *d, cl_command_queue queue, const char *fn)
{
    if (!queue) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: queue is NULL", fn);
    cl_context context = NULL;
    cl_device_id device = NULL;
    cl_command_queue_properties props = 0;
    cl_int err = d->cl->GetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context, &context, NULL);
    if (err == CL_SUCCESS) err = d->cl->GetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, NULL);
    if (err == CL_SUCCESS) err = d->cl->GetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
    if (err != CL_SUCCESS)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: not a valid cl_command_queue (clGetCommandQueueInfo: %s)", fn,
                        mxa_cl_error_name(err));
    if (context != d->context) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: the queue belongs to another context", fn);
    if (device != d->desc.device)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: the queue belongs to another device of the context", fn);
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: the queue is out of order; mxa needs an in-order queue", fn);
    return MXA_OK;
}

mxa_status mxa_opencl_attention_enqueue(mxa_device *dev, cl_command_queue queue, cl_uint num_wait,
                                        const cl_event *wait, cl_event *done, const mxa_attention_desc *desc,
                                        const mxa_tensor *q, const mxa_tensor *k, const mxa_tensor *v, mxa_tensor *o,
                                        mxa_tensor *lse)
{
    static const char fn[] = "mxa_opencl_attention_enqueue";
    mxa_status st = opencl_device(dev, fn);
    if (st) return st;
    if (done) *done = NULL;
    cl_impl *d = dev->impl;
    if ((st = check_queue(d, queue, fn))) return st;
    if (num_wait && !wait) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: num_wait is %u but wait is NULL", fn, num_wait);
    mxa_attention_call call;
    if ((st = mxa_attention_call_device(dev, fn, desc, q, k, v, o, lse, &call))) return st;
    cl_event *list = malloc(((size_t)num_wait + 1) * sizeof *list);
    if (!list) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (num_wait) memcpy(list, wait, (size_t)num_wait * sizeof *list);
    pthread_mutex_lock(&dev->lock);
    if (d->inflight.pending) mxa_cl_attention_wait(d, d->inflight.pending); /* its scratch is this call's */
    cl_uint n = num_wait;
    if (d->interop_done) list[n++] = d->interop_done; /* the previous enqueue's scratch, on any queue */
    d->target = queue;
    d->wait = list;
    d->wait_count = n;
    cl_event ev = NULL;
    st = mxa_cl_attention_enqueue(d, &call, &ev);
    d->target = d->queue;
    d->wait = NULL;
    d->wait_count = 0;
    if (st == MXA_OK) {
        d->cl->Flush(queue);
        if (d->interop_done) d->cl->ReleaseEvent(d->interop_done);
        d->interop_done = ev;
        if (done) {
            d->cl->RetainEvent(ev);
            *done = ev;
        }
    }
    pthread_mutex_unlock(&dev->lock);
    free(list);
    return st;
}
