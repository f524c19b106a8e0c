/* Opening a device (context + profiling queue, or the application's context) and its buffers. */
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "log.h"
#include "status.h"

mxa_status mxa_cl_open_in(const mxa_probed_device *device, cl_context context, void **impl)
{
    const cl_device_desc *dd = device->probe_data;
    if (!dd) return mxa_fail(MXA_ERR_INTERNAL, "opencl: device has no probe data");
    cl_impl *d = calloc(1, sizeof *d);
    if (!d) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    mxa_status st = MXA_OK;
    cl_int err = CL_SUCCESS;
    d->desc = *dd;
    d->cl = dd->api;
    mxa_cl_extra_options(d->extra_options, sizeof d->extra_options);
    if (context) {
        d->cl->RetainContext(context);
        d->cl->RetainDevice(dd->device);
        d->context = context;
        d->adopted = 1;
    } else {
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dd->platform, 0};
        d->context = d->cl->CreateContext(props, 1, &dd->device, NULL, NULL, &err);
        if (!d->context) {
            st = mxa_cl_fail(err, "clCreateContext");
            goto out;
        }
    }
    d->queue = d->cl->CreateCommandQueue(d->context, dd->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!d->queue) {
        st = mxa_cl_fail(err, "clCreateCommandQueue");
        goto out;
    }
    d->target = d->queue;
out:
    if (st) {
        mxa_cl_close(d);
        return st;
    }
    *impl = d;
    return MXA_OK;
}

mxa_status mxa_cl_open(const mxa_probed_device *device, void **impl)
{
    return mxa_cl_open_in(device, NULL, impl);
}

void mxa_cl_sync(cl_impl *d)
{
    if (d->inflight.pending) mxa_cl_attention_wait(d, d->inflight.pending);
    if (d->interop_done) {
        d->cl->WaitForEvents(1, &d->interop_done); /* its failure is the caller's to see, on its own event */
        d->cl->ReleaseEvent(d->interop_done);
        d->interop_done = NULL;
    }
}

void mxa_cl_close(void *impl)
{
    cl_impl *d = impl;
    if (!d) return;
    mxa_cl_sync(d); /* a pending call completes: its event reads what it wrote */
    if (d->queue) d->cl->Finish(d->queue);
    for (int i = 0; i < SCRATCH_COUNT; i++)
        if (d->scratch[i].mem) d->cl->ReleaseMemObject(d->scratch[i].mem);
    for (int i = 0; i < d->program_count; i++) d->cl->ReleaseProgram(d->programs[i].program);
    if (d->queue) d->cl->ReleaseCommandQueue(d->queue);
    if (d->context) d->cl->ReleaseContext(d->context);
    if (d->adopted) d->cl->ReleaseDevice(d->desc.device);
    free(d);
}

mxa_status mxa_cl_buffer_create(void *impl, size_t bytes, void **buffer)
{
    cl_impl *d = impl;
    cl_int err = CL_SUCCESS;
    mxa_cl_sync(d);
    cl_buffer *b = calloc(1, sizeof *b);
    if (!b) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    b->mem = d->cl->CreateBuffer(d->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!b->mem) {
        free(b);
        return mxa_cl_fail(err, "clCreateBuffer");
    }
    b->bytes = bytes;
    *buffer = b;
    return MXA_OK;
}

void mxa_cl_buffer_destroy(void *impl, void *buffer)
{
    cl_impl *d = impl;
    cl_buffer *b = buffer;
    if (!b) return;
    mxa_cl_sync(d);
    d->cl->ReleaseMemObject(b->mem);
    free(b);
}

mxa_status mxa_cl_buffer_upload(void *impl, void *buffer, size_t offset, const void *src, size_t bytes)
{
    cl_impl *d = impl;
    cl_buffer *b = buffer;
    mxa_cl_sync(d);
    cl_int err = d->cl->EnqueueWriteBuffer(d->queue, b->mem, CL_TRUE, b->base + offset, bytes, src, 0, NULL, NULL);
    return err == CL_SUCCESS ? MXA_OK : mxa_cl_fail(err, "clEnqueueWriteBuffer");
}

mxa_status mxa_cl_buffer_download(void *impl, void *buffer, size_t offset, void *dst, size_t bytes)
{
    cl_impl *d = impl;
    cl_buffer *b = buffer;
    mxa_cl_sync(d);
    cl_int err = d->cl->EnqueueReadBuffer(d->queue, b->mem, CL_TRUE, b->base + offset, bytes, dst, 0, NULL, NULL);
    return err == CL_SUCCESS ? MXA_OK : mxa_cl_fail(err, "clEnqueueReadBuffer");
}

mxa_status mxa_cl_scratch(cl_impl *d, int slot, size_t bytes, cl_mem *mem)
{
    cl_scratch *s = &d->scratch[slot];
    if (bytes == 0) bytes = 4;
    if (s->mem && s->bytes >= bytes) {
        *mem = s->mem;
        return MXA_OK;
    }
    if (s->mem) {
        /* queued kernels may still use the old buffer: release only after them (on an
         * application's queue, OpenCL keeps a released buffer until its commands complete) */
        d->cl->Finish(d->queue);
        d->cl->ReleaseMemObject(s->mem);
        s->mem = NULL;
        s->bytes = 0;
    }
    cl_int err = CL_SUCCESS;
    s->mem = d->cl->CreateBuffer(d->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!s->mem) return mxa_cl_fail(err, "clCreateBuffer (scratch)");
    s->bytes = bytes;
    *mem = s->mem;
    return MXA_OK;
}

mxa_status mxa_cl_array_in(cl_impl *d, const mxa_array *a, int slot, cl_mem *mem, cl_ulong *offset)
{
    const size_t bytes = (size_t)(a->b * a->h * a->n * a->d) * sizeof(float);
    if (a->buffer) {
        const cl_buffer *b = a->buffer;
        *mem = b->mem;
        *offset = (b->base + a->offset) / mxa_dtype_size(a->dtype); /* in elements of the buffer's dtype */
        return MXA_OK;
    }
    mxa_status st = mxa_cl_scratch(d, slot, bytes, mem);
    if (st) return st;
    *offset = 0;
    const cl_event *wait = NULL;
    const cl_uint nwait = mxa_cl_take_wait(d, &wait);
    cl_int err = d->cl->EnqueueWriteBuffer(d->target, *mem, CL_FALSE, 0, bytes, a->host, nwait, wait, NULL);
    return err == CL_SUCCESS ? MXA_OK : mxa_cl_fail(err, "clEnqueueWriteBuffer (input)");
}
