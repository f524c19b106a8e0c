/*
 * mxa inside an application's own HIP (ROCm) work: its device, its device memory,
 * its stream. Needs no ROCm header to include: the handle types are declared here
 * the way HIP declares them, so this header may come before or after
 * <hip/hip_runtime.h>. The functions exist in every build; without the HIP backend
 * they return MXA_ERR_UNSUPPORTED.
 *
 * Not run on AMD hardware by this project: checked against a test double of the
 * HIP runtime and a host emulator of the kernels (backends/hip/README.md).
 */
#ifndef MXA_MXA_HIP_H
#define MXA_MXA_HIP_H

#include "mxa/mxa.h"

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(__HIP_PLATFORM_NVIDIA__)
/* hip_runtime_api.h's own declaration (AMD platform); repeating it is valid C11 and C++. */
typedef struct ihipStream_t *hipStream_t;
#endif

/**
 * An mxa device on the application's HIP device `hip_device` (an ordinal as
 * hipSetDevice takes it), in that device's primary context: the context the HIP
 * runtime API uses, so device pointers from hipMalloc are valid in mxa's kernels.
 * mxa never resets or tears down the device (no hipDeviceReset); closing the mxa
 * device frees only what mxa allocated. Calls restore the calling thread's current
 * device. The device also takes mxa_attention, mxa_attention_async and mxa_buffer_create
 * like one from mxa_device_open (on a stream of mxa's own).
 */
MXA_API mxa_status mxa_hip_device_create(mxa_runtime *rt, int hip_device, mxa_device **out);

/**
 * An mxa_buffer over `size` bytes of the application's device memory at `device_ptr`
 * (from hipMalloc on the device's HIP device). mxa never frees it: destroy the
 * mxa_buffer before freeing the memory. Usable as attention tensors (offsets in bytes)
 * and with mxa_buffer_upload/download, which copy synchronously (hipMemcpyHtoD/DtoH,
 * ordered after work on blocking streams, not after work on a hipStreamNonBlocking
 * stream: synchronize that first). Where the runtime exports hipPointerGetAttribute,
 * a pointer it does not place on this HIP device, or a range past its allocation, is
 * refused.
 */
MXA_API mxa_status mxa_hip_buffer_wrap(mxa_device *dev, void *device_ptr, size_t size, mxa_buffer **out);

/**
 * Enqueues prep (rotation, quantization) and attention on the application's `stream`
 * and returns without waiting. `stream` NULL is HIP's default (null) stream.
 * q, k, v, o (f32, f16 or bf16), lse (may be NULL), desc->bias and desc->mask must
 * all be device buffers of `dev` (mxa_hip_buffer_wrap or mxa_buffer_create); a host
 * tensor is refused. desc->key_lengths is a host array, read before this returns.
 *
 * Synchronization is stream order: the call reads q, k, v, bias and mask after the
 * work enqueued on `stream` before it, and o and lse are written when work enqueued
 * after it runs; a host read needs hipStreamSynchronize (or an event) first.
 *
 * Scratch: every call on one mxa device uses the device's one scratch buffer. mxa
 * orders each call behind the previous one (the stream waits on the device for it,
 * hipStreamWaitEvent; the host does not wait), so calls on different streams are
 * safe but do not overlap each other. A call that needs a larger scratch than any
 * before waits on the host for the previous call and allocates (hipMalloc): a first
 * call of the largest shape sizes it for the rest.
 * Calls from several threads on one mxa device are serialized by mxa.
 */
MXA_API mxa_status mxa_hip_attention_enqueue(mxa_device *dev, hipStream_t stream, const mxa_attention_desc *desc,
                                             const mxa_tensor *q, const mxa_tensor *k, const mxa_tensor *v,
                                             mxa_tensor *o, mxa_tensor *lse);

#ifdef __cplusplus
}
#endif

#endif /* MXA_MXA_HIP_H */
