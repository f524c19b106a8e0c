/*
 * The backend interface: what every backend (cpu, vulkan, opencl, hip)
 * implements, and the normalised arguments the runtime hands it.
 *
 * The runtime validates everything before a backend sees it: shapes, dtypes,
 * strides, the recipe, finiteness. It converts host tensors to contiguous
 * float32 (without a copy when they already are), so a backend only ever sees
 * contiguous float32 [B, H, N, D] data, either on the host or in one of its
 * own buffers.
 */
#ifndef MXA_RUNTIME_BACKEND_H
#define MXA_RUNTIME_BACKEND_H

#include "mxa/mxa.h"

#define MXA_MAX_DEVICES_PER_BACKEND 16

/* A contiguous float32 [b, h, n, d] array: on the host (host != NULL) or in a
 * device buffer of the backend (buffer != NULL, at byte `offset`). */
typedef struct mxa_array {
    int64_t b, h, n, d;
    float *host;
    void *buffer; /* the backend's own buffer handle */
    size_t offset;
} mxa_array;

/* The attention problem as a backend receives it: already validated. */
typedef struct mxa_attention_call {
    mxa_attention_desc desc; /* scale already resolved (> 0) */
    int bc;                  /* resolved (> 0, multiple of 32) */
    mxa_array q, k, v, o;    /* o is written, float32 */
    float *lse;              /* host, b*h*nq floats, or NULL */
} mxa_attention_call;

/* One device as a backend's probe reports it. */
typedef struct mxa_probed_device {
    mxa_device_info info; /* id/backend/index are filled by the runtime */
    void *probe_data;     /* backend-private, passed to open; freed by release */
} mxa_probed_device;

typedef struct mxa_backend_ops {
    const char *name;

    /* Finds devices. Returns MXA_OK with count = 0 and a reason when the
     * backend is absent (no loader, no driver, no device); never aborts. */
    mxa_status (*probe)(mxa_probed_device *devices, int max_devices, int *count,
                        char *reason, size_t reason_size);
    /* Frees probe_data of every probed device (may be NULL). */
    void (*release)(mxa_probed_device *devices, int count);

    mxa_status (*open)(const mxa_probed_device *device, void **impl);
    void (*close)(void *impl);

    mxa_status (*buffer_create)(void *impl, size_t bytes, void **buffer);
    void (*buffer_destroy)(void *impl, void *buffer);
    mxa_status (*buffer_upload)(void *impl, void *buffer, size_t offset, const void *src,
                                size_t bytes);
    mxa_status (*buffer_download)(void *impl, void *buffer, size_t offset, void *dst,
                                  size_t bytes);

    /* Quantizes contiguous rows x cols float32 (x) along the rows. */
    mxa_status (*quantize)(void *impl, const mxa_array *x, mxa_rule rule, uint8_t *codes,
                           uint8_t *scales);

    /* Runs attention; fills info->variant and info->kernel_seconds. */
    mxa_status (*attention)(void *impl, const mxa_attention_call *call, mxa_attention_info *info);
} mxa_backend_ops;

/* Built-in backends (defined in backends/<name>/ when built). */
extern const mxa_backend_ops mxa_cpu_backend;
#ifdef MXA_HAVE_VULKAN
extern const mxa_backend_ops mxa_vulkan_backend;
#endif
#ifdef MXA_HAVE_OPENCL
extern const mxa_backend_ops mxa_opencl_backend;
#endif
#ifdef MXA_HAVE_HIP
extern const mxa_backend_ops mxa_hip_backend;
#endif

#endif /* MXA_RUNTIME_BACKEND_H */
