/*
 * The slice of the HIP runtime and hiprtc C APIs the backend uses, declared
 * here because no ROCm headers exist at build time. Values are from ROCm's
 * hip_runtime_api.h / hiprtc.h (ABI-stable since ROCm 5; hipDeviceProp_t is
 * not, hence the arch-name note in hip_loader.c). Resolved with dlsym.
 */
#ifndef MXA_HIP_API_H
#define MXA_HIP_API_H

#include <stddef.h>

#include "mxa/mxa.h"

typedef int hipError_t; /* hipSuccess = 0 */
typedef int hiprtcResult; /* HIPRTC_SUCCESS = 0 */
typedef void *hipModule_t;
typedef void *hipFunction_t;
typedef struct ihipStream_t *hipStream_t; /* as ROCm declares them (include/mxa/mxa_hip.h) */
typedef struct ihipEvent_t *hipEvent_t;
typedef void *hiprtcProgram;

#define MXA_HIP_SUCCESS 0
#define MXA_HIP_ERROR_OUT_OF_MEMORY 2
#define MXA_HIP_ERROR_NO_DEVICE 100
#define MXA_HIPRTC_ERROR_COMPILATION 6

/* hipPointer_attribute values (ROCm >= 5, the CUDA driver API's numbering). */
#define MXA_HIP_POINTER_DEVICE_ORDINAL 9
#define MXA_HIP_POINTER_RANGE_START 11
#define MXA_HIP_POINTER_RANGE_SIZE 12

/* hipDeviceAttribute_t values (the ROCm >= 5 enum). */
#define MXA_HIP_ATTR_MAX_THREADS_PER_BLOCK 56
#define MXA_HIP_ATTR_MULTIPROCESSOR_COUNT 63
#define MXA_HIP_ATTR_MAX_SHARED_MEMORY_PER_BLOCK 74
#define MXA_HIP_ATTR_WARP_SIZE 87

/* hipDeviceProp_t: gcnArchName offsets of the two ABI versions. The plain
 * hipGetDeviceProperties symbol keeps the ROCm 5 layout ("R0000"); ROCm 6
 * added hipGetDevicePropertiesR0600 with the new one. */
#define MXA_HIP_PROP_R0000_ARCH_OFFSET 396
#define MXA_HIP_PROP_R0600_ARCH_OFFSET 1160
#define MXA_HIP_PROP_BUFFER 4096 /* larger than either struct (792, 1472 bytes) */
#define MXA_HIP_ARCH_LEN 256

/* Oldest HIP runtime the kernels were written against (HIP_VERSION encoding:
 * major * 10^7 + minor * 10^5 + patch). ROCm 5.3 brought hiprtc's
 * --gpu-architecture with target features. */
#define MXA_HIP_MIN_RUNTIME 50300000

/* The entry points, resolved by name. */
typedef struct mxa_hip_api {
    void *hip_lib, *rtc_lib;
    char hip_path[256], rtc_path[256];

    hipError_t (*hipInit)(unsigned flags);
    hipError_t (*hipGetDeviceCount)(int *count);
    hipError_t (*hipRuntimeGetVersion)(int *version);
    hipError_t (*hipDriverGetVersion)(int *version);
    hipError_t (*hipDeviceGetName)(char *name, int len, int device);
    hipError_t (*hipDeviceGetAttribute)(int *value, int attr, int device);
    hipError_t (*hipDeviceTotalMem)(size_t *bytes, int device);
    hipError_t (*hipGetDeviceProperties)(void *prop, int device); /* R0600 or R0000, see arch_offset */
    size_t arch_offset;
    hipError_t (*hipSetDevice)(int device);
    hipError_t (*hipGetDevice)(int *device);
    hipError_t (*hipMalloc)(void **ptr, size_t bytes);
    hipError_t (*hipFree)(void *ptr);
    hipError_t (*hipMemcpyHtoD)(void *dst, const void *src, size_t bytes);
    hipError_t (*hipMemcpyDtoH)(void *dst, const void *src, size_t bytes);
    hipError_t (*hipMemcpyHtoDAsync)(void *dst, const void *src, size_t bytes, hipStream_t stream);
    hipError_t (*hipStreamCreate)(hipStream_t *stream);
    hipError_t (*hipStreamDestroy)(hipStream_t stream);
    hipError_t (*hipStreamWaitEvent)(hipStream_t stream, hipEvent_t event, unsigned flags);
    hipError_t (*hipEventCreate)(hipEvent_t *event);
    hipError_t (*hipEventDestroy)(hipEvent_t event);
    hipError_t (*hipEventRecord)(hipEvent_t event, hipStream_t stream);
    hipError_t (*hipEventSynchronize)(hipEvent_t event);
    hipError_t (*hipEventElapsedTime)(float *ms, hipEvent_t start, hipEvent_t stop);
    /* Optional (NULL when the runtime lacks it): which device a pointer belongs to. */
    hipError_t (*hipPointerGetAttribute)(void *data, int attribute, void *ptr);
    hipError_t (*hipModuleLoadData)(hipModule_t *module, const void *image);
    hipError_t (*hipModuleUnload)(hipModule_t module);
    hipError_t (*hipModuleGetFunction)(hipFunction_t *fn, hipModule_t module, const char *name);
    hipError_t (*hipModuleLaunchKernel)(hipFunction_t fn, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                                        hipStream_t stream, void **params, void **extra);
    hipError_t (*hipDeviceSynchronize)(void);
    const char *(*hipGetErrorString)(hipError_t err);

    hiprtcResult (*hiprtcVersion)(int *major, int *minor);
    hiprtcResult (*hiprtcCreateProgram)(hiprtcProgram *prog, const char *src, const char *name,
                                        int num_headers, const char *const *headers,
                                        const char *const *include_names);
    hiprtcResult (*hiprtcCompileProgram)(hiprtcProgram prog, int num_options, const char *const *options);
    hiprtcResult (*hiprtcGetProgramLogSize)(hiprtcProgram prog, size_t *size);
    hiprtcResult (*hiprtcGetProgramLog)(hiprtcProgram prog, char *log);
    hiprtcResult (*hiprtcGetCodeSize)(hiprtcProgram prog, size_t *size);
    hiprtcResult (*hiprtcGetCode)(hiprtcProgram prog, char *code);
    hiprtcResult (*hiprtcDestroyProgram)(hiprtcProgram *prog);
    const char *(*hiprtcGetErrorString)(hiprtcResult result);

    int runtime_version, driver_version, rtc_major, rtc_minor;
    int refs; /* guarded by the loader's lock */
} mxa_hip_api;

/* 1 when <root>/dev/kfd exists and the KFD topology under <root>/sys lists
 * a GPU node (nonzero simd_count or gpu_id); else 0 with `reason` naming the
 * check that failed. `root` is "" for the real system (tests pass a tree). */
int mxa_hip_kfd_gpu(const char *root, char *reason, size_t reason_size);

/* Loads libamdhip64 and libhiprtc (MXA_HIP_LIBRARY / MXA_HIPRTC_LIBRARY
 * override the names; without MXA_HIP_LIBRARY nothing is loaded unless
 * mxa_hip_kfd_gpu finds a GPU), resolves every entry point and checks versions. On
 * any failure returns MXA_ERR_NOT_FOUND or MXA_ERR_UNSUPPORTED with `reason`
 * saying why, and loads nothing. The result holds one reference. */
mxa_status mxa_hip_api_load(mxa_hip_api **out, char *reason, size_t reason_size);

/* Takes / drops a reference; the last drop unloads the libraries. */
void mxa_hip_api_retain(mxa_hip_api *api);
void mxa_hip_api_release(mxa_hip_api *api);

/* Records a failed HIP call as the thread's error: "hipMalloc(...) failed: <name> (2)". */
mxa_status mxa_hip_fail(const mxa_hip_api *api, hipError_t err, const char *call);

#endif
