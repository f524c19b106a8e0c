/*
 * A stand-in for ROCm's <hip/hip_runtime_api.h>, declaring only what
 * examples/hip_interop.c calls, with ROCm's names, types and values, so the
 * example compiles here without ROCm and runs against the test double
 * (fake_hip_emu). Not a HIP header: do not use it for anything else.
 */
#ifndef MXA_TESTS_HIP_RUNTIME_API_STANDIN_H
#define MXA_TESTS_HIP_RUNTIME_API_STANDIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hipError_t { hipSuccess = 0 } hipError_t;
typedef enum hipMemcpyKind {
    hipMemcpyHostToHost = 0,
    hipMemcpyHostToDevice = 1,
    hipMemcpyDeviceToHost = 2,
    hipMemcpyDeviceToDevice = 3,
    hipMemcpyDefault = 4
} hipMemcpyKind;
typedef struct ihipStream_t *hipStream_t;

hipError_t hipSetDevice(int deviceId);
hipError_t hipMalloc(void **ptr, size_t size);
hipError_t hipFree(void *ptr);
hipError_t hipMemcpy(void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind);
hipError_t hipStreamCreate(hipStream_t *stream);
hipError_t hipStreamSynchronize(hipStream_t stream);
hipError_t hipStreamDestroy(hipStream_t stream);
const char *hipGetErrorString(hipError_t error);

#ifdef __cplusplus
}
#endif

#endif
