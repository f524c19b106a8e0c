/* The runtime and device handles (internal). */
#ifndef MXA_RUNTIME_RUNTIME_INTERNAL_H
#define MXA_RUNTIME_RUNTIME_INTERNAL_H

#include <pthread.h>

#include "backend.h"

#define MXA_MAX_BACKENDS 4

typedef struct mxa_backend_slot {
    const mxa_backend_ops *ops; /* NULL when not built */
    mxa_backend_info info;
    mxa_probed_device devices[MXA_MAX_DEVICES_PER_BACKEND];
    int device_count;
    int probed;   /* probe ran (or was refused: disabled, not built); under probe_lock */
    int disabled; /* named by MXA_DISABLE / opts->disable */
} mxa_backend_slot;

/* Backends are probed (their libraries loaded) on first need: opening
 * "vulkan:0" loads Vulkan only, "cpu" loads nothing; "auto" and listing
 * devices probe every backend not disabled. */
struct mxa_runtime {
    pthread_mutex_t probe_lock;
    mxa_backend_slot backends[MXA_MAX_BACKENDS];
    int backend_count;
    struct mxa_device *devices; /* open devices (list under the handle lock) */
};

struct mxa_device {
    mxa_runtime *rt;
    const mxa_backend_ops *ops;
    const mxa_probed_device *probed;
    mxa_probed_device *owned_probe; /* an adopted device's own probe (probed points to it), else NULL */
    void *impl;
    pthread_mutex_t lock;       /* a device serialises its own queue */
    struct mxa_device *next;    /* in rt->devices */
    struct mxa_buffer *buffers; /* live buffers (list under the handle lock) */
};

struct mxa_buffer {
    mxa_device *dev; /* NULL once the device was closed (the buffer is orphaned) */
    void *handle;
    size_t bytes;
    struct mxa_buffer *prev, *next; /* in dev->buffers */
};

/* MXA_OK if dev is an open device of this process, else one error line naming fn. */
mxa_status mxa_device_check(const mxa_device *dev, const char *fn);
/* ... and of the backend `ops` ("fn: cpu is not <kind> device"; kind: "a Vulkan", "an OpenCL"). */
mxa_status mxa_device_check_backend(const mxa_device *dev, const mxa_backend_ops *ops, const char *kind, const char *fn);

/* Registers a device a backend opened over an application's own objects (interop headers:
 * mxa_opencl_device_create, mxa_vulkan_device_create) like mxa_device_open's. `owned_probe`
 * (malloc'ed; info.id and the rest filled by the backend, info.backend set here) and `impl`
 * belong to the device from now on, also on failure: closing the device calls ops->close(impl)
 * and then ops->release(owned_probe, 1) and frees it. */
mxa_status mxa_device_adopt(mxa_runtime *rt, const mxa_backend_ops *ops, mxa_probed_device *owned_probe, void *impl,
                            mxa_device **out);

/* Registers a backend-made buffer handle of `bytes` bytes on dev (mxa_buffer_create's list;
 * interop wraps of an application's memory). The handle belongs to the buffer from now on,
 * also on failure: mxa_buffer_destroy (or closing the device) calls ops->buffer_destroy. */
mxa_status mxa_buffer_adopt(mxa_device *dev, void *handle, size_t bytes, mxa_buffer **out);

/* For the interop entry points (mxa_opencl_attention_enqueue, mxa_vulkan_attention_record):
 * validates a call whose tensors (q, k, v, o, lse, bias, mask) all live in buffers of dev,
 * exactly as mxa_attention does, and fills `call`. Nothing to free: it points into the
 * tensors' buffers and at desc->key_lengths, which the backend consumes before returning.
 * `fn` names the entry point in errors; a host tensor is refused by name. */
mxa_status mxa_attention_call_device(mxa_device *dev, const char *fn, const mxa_attention_desc *desc,
                                     const mxa_tensor *q, const mxa_tensor *k, const mxa_tensor *v, mxa_tensor *o,
                                     mxa_tensor *lse, mxa_attention_call *call);

#endif
