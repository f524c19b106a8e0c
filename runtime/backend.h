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

/* A contiguous [b, h, n, d] array: float32 on the host (host != NULL), or in a device
 * buffer of the backend (buffer != NULL, at byte `offset`) as float32, or as float16 or
 * bfloat16 where the backend takes them (MXA_EXTRA_IN_HALF). */
typedef struct mxa_array {
    int64_t b, h, n, d;
    float *host;
    void *buffer; /* the backend's own buffer handle */
    size_t offset;
    mxa_dtype dtype; /* q, k, v: of the buffer's elements; MXA_F32 on the host and for K/V decoded
                        from call->kv (o's is call->o_dtype) */
} mxa_array;

/* An input's dtype as the prep kernels take it (prep_input.glsl's IN_TYPE, prep.cl's in16):
 * 0 float32, 1 float16, 2 bfloat16. */
static inline int mxa_input_code(mxa_dtype dtype) { return dtype == MXA_F16 ? 1 : dtype == MXA_BF16 ? 2 : 0; }

/* A bias (float32) or mask (one byte per element, 0 = hidden) [b, h, nq, nk], dense,
 * where b is 1 or B and h is 1 or H (1 = the same for every batch / head): on the host
 * or in a backend buffer at byte `offset`; absent when both are NULL. */
typedef struct mxa_side_array {
    int64_t b, h, nq, nk;
    const void *host;
    void *buffer;
    size_t offset;
} mxa_side_array;

/* Pre-quantized K and V in one backend buffer (runtime/kv.c's layout): byte offsets of the
 * K codes, K scales, V^T codes, V^T scales; V^T rows hold nk32 tokens. */
typedef struct mxa_kv_arrays {
    void *buffer; /* NULL: no pre-quantized K/V (k and v are arrays as usual) */
    size_t offset[4];
    int64_t nk32;
} mxa_kv_arrays;

/* The attention problem as a backend receives it: already validated. The desc's
 * pointers (bias, mask, key_lengths, kv) are NULL here: use the fields below. */
typedef struct mxa_attention_call {
    mxa_attention_desc desc; /* scale resolved (> 0); causal is MXA_CAUSAL_* */
    int bc;                  /* resolved (> 0, multiple of 32) */
    mxa_array q, k, v, o;    /* o is written: float32 unless o_dtype says otherwise */
    mxa_dtype o_dtype;       /* MXA_F32, or MXA_F16 / MXA_BF16 for an o in a device buffer (rounded once) */
    float *lse;              /* host, b*h*nq floats, or NULL */
    void *lse_buffer;        /* or a backend buffer (float32 at byte lse_offset), or NULL */
    size_t lse_offset;
    mxa_side_array bias;     /* float32, added to the scaled scores */
    mxa_side_array mask;     /* bytes, 0 = key hidden */
    const int32_t *key_lengths; /* host, b entries in [0, nk], or NULL (all nk) */
    mxa_kv_arrays kv;        /* pre-quantized K/V: decode them (rotated K, V) instead of reading k and v,
                                whose dims are set and data are not; rotate q only */
} mxa_attention_call;

/* One device as a backend's probe reports it. */
typedef struct mxa_probed_device {
    mxa_device_info info; /* id/backend/index are filled by the runtime */
    void *probe_data;     /* backend-private, passed to open; freed by release */
} mxa_probed_device;

/* An attention call submitted without waiting (mxa_attention_async): the backend fills it
 * when the work completes (in its wait, or earlier, when a later call on the device must
 * wait for it first, or when the device closes). Owned by the runtime's event. */
typedef struct mxa_pending {
    int done;
    mxa_status status;
    char message[512];       /* the error message when status != MXA_OK */
    mxa_attention_info info;
} mxa_pending;

/* What a backend's attention takes beyond plain q, k, v, o (mxa_backend_ops.extras);
 * the runtime refuses the rest with MXA_ERR_UNSUPPORTED. */
#define MXA_EXTRA_BIAS (1u << 0)
#define MXA_EXTRA_MASK (1u << 1)
#define MXA_EXTRA_KEY_LENGTHS (1u << 2)
#define MXA_EXTRA_CAUSAL_TOP_LEFT (1u << 3)
#define MXA_EXTRA_OUT_HALF (1u << 4)   /* f16/bf16 o in a device buffer */
#define MXA_EXTRA_LSE_BUFFER (1u << 5) /* lse in a device buffer */
#define MXA_EXTRA_KV (1u << 6)         /* call->kv (mxa_prepare_kv) */
#define MXA_EXTRA_PV_MXFP8 (1u << 7)   /* desc.pv_format MXA_PV_MXFP8 (a backend whose chosen kernel
                                          variant lacks it refuses the call with MXA_ERR_UNSUPPORTED) */
#define MXA_EXTRA_IN_HALF (1u << 8)    /* f16/bf16 q, k, v in device buffers (read as their exact float32 values) */

typedef struct mxa_backend_ops {
    const char *name;
    unsigned extras; /* MXA_EXTRA_* */

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

    /* Optional (NULL: the runtime runs attention and completes at once). Submits attention
     * and returns without waiting; the backend fills *pending when the work completes. The
     * call's host pointers stay valid until then. */
    mxa_status (*attention_submit)(void *impl, const mxa_attention_call *call, mxa_pending *pending);
    /* Completes `pending` if it has not completed yet. */
    void (*attention_wait)(void *impl, mxa_pending *pending);

    /* Optional (NULL: MXA_ERR_UNSUPPORTED). Quantizes like `quantize` to MXFP8 E4M3 with the
     * floor rule: rows x nblocks*32 code bytes and rows x nblocks scale bytes. */
    mxa_status (*quantize_mxfp8)(void *impl, const mxa_array *x, uint8_t *codes, uint8_t *scales);
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
