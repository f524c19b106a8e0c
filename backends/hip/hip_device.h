/* The HIP backend's per-device state (internal to backends/hip). */
#ifndef MXA_HIP_DEVICE_H
#define MXA_HIP_DEVICE_H

#include "../../runtime/backend.h"
#include "hip_api.h"
#include "hip_arch.h"
#include "hip_program.h"
#include "mxa_hip_args.h"

/* What probe learns about one device (probe_data). */
typedef struct mxa_hip_probe {
    mxa_hip_api *api; /* one reference */
    int ordinal;
    mxa_hip_arch arch;
    mxa_hip_choice choice;
} mxa_hip_probe;

/* A built kernel, kept for the device's lifetime. */
typedef struct mxa_hip_kernel {
    char key[160]; /* program name + options */
    hipModule_t module;
    hipFunction_t fn_a, fn_b, fn_c; /* the program's entry points, in its order */
} mxa_hip_kernel;

/* A buffer handle: mxa's own device memory, or an application's (mxa_hip_buffer_wrap). */
typedef struct mxa_hip_buffer {
    void *ptr;
    int wrapped; /* the application's memory: never freed by mxa */
} mxa_hip_buffer;

/* What a submitted call copies back to the host once it completes. */
typedef struct mxa_hip_readback {
    void *o_host, *lse_host;
    const void *o_dev, *lse_dev;
    size_t o_bytes, lse_bytes;
} mxa_hip_readback;

typedef struct mxa_hip_device {
    mxa_hip_api *api; /* one reference */
    int ordinal;
    mxa_hip_arch arch;
    mxa_hip_choice choice;
    mxa_hip_kernel *kernels;
    int kernel_count, kernel_cap;
    int compiled, cache_hits; /* program builds by origin, for tests and logs */

    hipStream_t stream;      /* mxa's own: mxa_attention and mxa_attention_async run here */
    hipEvent_t start, done;  /* around the latest call's attention kernel */
    hipStream_t done_stream; /* where `done` was recorded last (valid when done_recorded) */
    int done_recorded;
    void *scratch;           /* every call's working memory, reused: free once `done` completes */
    size_t scratch_bytes;
    mxa_pending *pending;    /* a submitted call not completed yet, or NULL */
    mxa_hip_readback readback;
    char pending_variant[48];
} mxa_hip_device;

/* Probes HIP device `ordinal` into pd (probe_data: an mxa_hip_probe holding a reference
 * of api). MXA_ERR_UNSUPPORTED when mxa cannot use that device, with the reason. */
mxa_status mxa_hip_probe_device(mxa_hip_api *api, int ordinal, mxa_probed_device *pd);

/* Makes the device current on this thread; *previous receives the thread's device,
 * which mxa_hip_leave restores (an application's thread keeps its own device). */
mxa_status mxa_hip_enter(mxa_hip_device *dev, int *previous);
void mxa_hip_leave(mxa_hip_device *dev, int previous);

/* Completes a submitted call, if any (every operation on the device does this first). */
void mxa_hip_complete_pending(mxa_hip_device *dev);

/* Enqueues the call's prep and attention on `stream` (NULL: HIP's default stream) and
 * returns; the device's scratch is ordered behind the previous call's `done`. Host
 * outputs are not read back: *readback says what to copy once `done` completes. */
mxa_status mxa_hip_attention_enqueue_call(mxa_hip_device *dev, const mxa_attention_call *call, hipStream_t stream,
                                          mxa_hip_readback *readback, const char **variant);

/* The device's buffer handle of an application's memory (mxa_hip_buffer_wrap). */
mxa_status mxa_hip_buffer_wrap_handle(mxa_hip_device *dev, void *ptr, size_t size, void **handle);

/* The prep program's kernels (fn_a, fn_b, fn_c): quantize_rows, prep_qk, prep_v. */
mxa_status mxa_hip_prep_kernels(mxa_hip_device *dev, const mxa_hip_kernel **out);

/* The attention kernel for head size d, tile bc, a variant, whether it reads the bias,
 * mask and key lengths (the build without them is the usual one) and its output type
 * (MXA_HIP_OUT_*). */
mxa_status mxa_hip_attention_kernel(mxa_hip_device *dev, int d, int bc, mxa_hip_variant variant, int extras,
                                    int out_type, const mxa_hip_kernel **out);

/* Launches `fn` on `stream` with one by-value argument block. */
mxa_status mxa_hip_launch(mxa_hip_device *dev, hipStream_t stream, hipFunction_t fn, const char *name, unsigned gx,
                          unsigned gy, unsigned gz, unsigned threads, void *args);

/* hipMalloc with the size in the error message (MXA_ERR_OUT_OF_MEMORY on OOM). */
mxa_status mxa_hip_alloc(mxa_hip_device *dev, size_t bytes, void **ptr);
void mxa_hip_free(mxa_hip_device *dev, void *ptr);

/* Device address of a buffer handle at a byte offset. */
void *mxa_hip_buffer_at(void *handle, size_t offset);

/* Device address of an array: its buffer + offset, or an uploaded copy of its
 * host data (*owned set; free it with mxa_hip_free). */
mxa_status mxa_hip_array_ptr(mxa_hip_device *dev, const mxa_array *a, void **ptr, void **owned);

/* The attention entry points of the vtable (hip_attention.c). */
mxa_status mxa_hip_attention(void *impl, const mxa_attention_call *call, mxa_attention_info *info);
mxa_status mxa_hip_attention_submit(void *impl, const mxa_attention_call *call, mxa_pending *pending);
void mxa_hip_attention_wait(void *impl, mxa_pending *pending);

#endif
