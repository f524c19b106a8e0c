/*
 * Run-time loading of the HIP runtime and hiprtc: no ROCm at build time.
 *
 * gcnArchName (what hiprtc needs) lives only in hipDeviceProp_t, whose layout
 * changed in ROCm 6. ROCm versions the symbol instead of breaking it: the plain
 * hipGetDeviceProperties keeps the ROCm 5 layout (LLVM's amdgpu-arch tool reads
 * it at offset 396 the same way), and ROCm 6 adds hipGetDevicePropertiesR0600
 * (offset 1160). We prefer the R0600 symbol when present, fall back to the
 * plain one, hand either a zeroed 4 KiB buffer (larger than both structs) and
 * accept the name only if it reads "gfx..." and is terminated within 256
 * bytes; anything else makes the device absent with that reason. Integers come
 * from hipDeviceGetAttribute, whose enum has been stable since ROCm 5.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/env.h"
#include "../../runtime/log.h"
#include "../../runtime/status.h"
#include "../../runtime/sysprobe.h"
#include "hip_api.h"

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether one KFD topology node is a GPU: CPU nodes have simd_count 0 and gpu_id 0. */
static int kfd_node_is_gpu(const char *node)
{
    char path[4096], line[256];
    long simd = 0, gpu_id = 0;
    FILE *f = snprintf(path, sizeof path, "%s/properties", node) < (int)sizeof path ? fopen(path, "r") : NULL;
    if (f) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "simd_count %ld", &simd) == 1 && simd > 0) break;
        fclose(f);
    }
    if (snprintf(path, sizeof path, "%s/gpu_id", node) < (int)sizeof path && (f = fopen(path, "r"))) {
        if (fscanf(f, "%ld", &gpu_id) != 1) gpu_id = 0;
        fclose(f);
    }
    return simd > 0 || gpu_id != 0;
}

int mxa_hip_kfd_gpu(const char *root, char *reason, size_t reason_size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/dev/kfd", root);
    if (access(path, F_OK) != 0) {
        snprintf(reason, reason_size, "no AMD GPU kernel driver (%s)", path);
        return 0;
    }
    snprintf(path, sizeof path, "%s/sys/class/kfd/kfd/topology/nodes", root);
    DIR *d = opendir(path);
    int gpu = 0;
    for (struct dirent *e; d && !gpu && (e = readdir(d)) != NULL;) {
        char node[4096];
        if (e->d_name[0] == '.' || snprintf(node, sizeof node, "%s/%s", path, e->d_name) >= (int)sizeof node) continue;
        gpu = mxa_is_dir(node) && kfd_node_is_gpu(node);
    }
    if (d) closedir(d);
    if (!gpu)
        snprintf(reason, reason_size, "no AMD GPU kernel driver: %s/dev/kfd present but the KFD topology (%s) lists no GPU",
                 root, path);
    return gpu;
}

typedef struct symbol {
    const char *name;
    size_t offset; /* of the function pointer in mxa_hip_api */
    int rtc;       /* lives in libhiprtc */
} symbol;

#define SYM(n, r) {#n, offsetof(mxa_hip_api, n), r}
static const symbol symbols[] = {
    SYM(hipInit, 0), SYM(hipGetDeviceCount, 0), SYM(hipRuntimeGetVersion, 0),
    SYM(hipDriverGetVersion, 0), SYM(hipDeviceGetName, 0), SYM(hipDeviceGetAttribute, 0),
    SYM(hipDeviceTotalMem, 0), SYM(hipSetDevice, 0), SYM(hipGetDevice, 0), SYM(hipMalloc, 0), SYM(hipFree, 0),
    SYM(hipMemcpyHtoD, 0), SYM(hipMemcpyDtoH, 0), SYM(hipMemcpyHtoDAsync, 0), SYM(hipStreamCreate, 0),
    SYM(hipStreamDestroy, 0), SYM(hipStreamWaitEvent, 0), SYM(hipEventCreate, 0), SYM(hipEventDestroy, 0),
    SYM(hipEventRecord, 0), SYM(hipEventSynchronize, 0), SYM(hipEventElapsedTime, 0), SYM(hipModuleLoadData, 0),
    SYM(hipModuleUnload, 0), SYM(hipModuleGetFunction, 0), SYM(hipModuleLaunchKernel, 0),
    SYM(hipDeviceSynchronize, 0), SYM(hipGetErrorString, 0),
    SYM(hiprtcVersion, 1), SYM(hiprtcCreateProgram, 1), SYM(hiprtcCompileProgram, 1),
    SYM(hiprtcGetProgramLogSize, 1), SYM(hiprtcGetProgramLog, 1), SYM(hiprtcGetCodeSize, 1),
    SYM(hiprtcGetCode, 1), SYM(hiprtcDestroyProgram, 1), SYM(hiprtcGetErrorString, 1),
};
#undef SYM

/* Stores a dlsym result into a function-pointer field (POSIX guarantees the
 * conversion; memcpy keeps ISO C quiet about object-to-function casts). */
static int resolve(void *lib, const char *name, void *field)
{
    void *p = dlsym(lib, name);
    if (!p) return 0;
    memcpy(field, &p, sizeof p);
    return 1;
}

static void unload(mxa_hip_api *api)
{
    if (api->rtc_lib) dlclose(api->rtc_lib);
    if (api->hip_lib) dlclose(api->hip_lib);
    free(api);
}

mxa_status mxa_hip_api_load(mxa_hip_api **out, char *reason, size_t reason_size)
{
    static const char *const hip_default[] = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                                              "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so", NULL};
    static const char *const rtc_default[] = {"libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6",
                                              "libhiprtc.so.5", "/opt/rocm/lib/libhiprtc.so", NULL};
    mxa_status st = MXA_ERR_NOT_FOUND;
    char why[200];
    *out = NULL;
    /* Without an AMD GPU, loading the runtime only costs (it pulls its own LLVM,
     * which can clash with another driver's); a library named by
     * MXA_HIP_LIBRARY is the user's explicit choice, so it skips this check. */
    if (!mxa_env_string("MXA_HIP_LIBRARY") && !mxa_hip_kfd_gpu("", reason, reason_size)) {
        MXA_LOG_I("hip: %s", reason);
        return MXA_ERR_NOT_FOUND;
    }
    mxa_hip_api *api = calloc(1, sizeof *api);
    if (!api) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "hip: out of memory");

    const char *hip_env[] = {mxa_env_string("MXA_HIP_LIBRARY"), NULL};
    const char *rtc_env[] = {mxa_env_string("MXA_HIPRTC_LIBRARY"), NULL};
    api->hip_lib = mxa_dlopen_first(hip_env[0] ? hip_env : hip_default, api->hip_path, sizeof api->hip_path, why, sizeof why);
    if (!api->hip_lib) {
        snprintf(reason, reason_size, "HIP runtime not found (%s)", why);
        goto out;
    }
    api->rtc_lib = mxa_dlopen_first(rtc_env[0] ? rtc_env : rtc_default, api->rtc_path, sizeof api->rtc_path, why, sizeof why);
    if (!api->rtc_lib) {
        snprintf(reason, reason_size, "hiprtc not found (%s); it is needed to build kernels", why);
        goto out;
    }
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        void *lib = symbols[i].rtc ? api->rtc_lib : api->hip_lib;
        if (!resolve(lib, symbols[i].name, (char *)api + symbols[i].offset)) {
            snprintf(reason, reason_size, "%s lacks %s (too old or not a HIP runtime)",
                     symbols[i].rtc ? api->rtc_path : api->hip_path, symbols[i].name);
            goto out;
        }
    }
    if (!resolve(api->hip_lib, "hipPointerGetAttribute", &api->hipPointerGetAttribute))
        api->hipPointerGetAttribute = NULL; /* only the wrap check of mxa_hip_buffer_wrap uses it */
    if (resolve(api->hip_lib, "hipGetDevicePropertiesR0600", &api->hipGetDeviceProperties))
        api->arch_offset = MXA_HIP_PROP_R0600_ARCH_OFFSET;
    else if (resolve(api->hip_lib, "hipGetDeviceProperties", &api->hipGetDeviceProperties))
        api->arch_offset = MXA_HIP_PROP_R0000_ARCH_OFFSET;
    else {
        snprintf(reason, reason_size, "%s lacks hipGetDeviceProperties", api->hip_path);
        goto out;
    }
    hipError_t e = api->hipRuntimeGetVersion(&api->runtime_version);
    if (e != MXA_HIP_SUCCESS) {
        snprintf(reason, reason_size, "hipRuntimeGetVersion failed (%d)", e);
        goto out;
    }
    if (api->runtime_version < MXA_HIP_MIN_RUNTIME) {
        snprintf(reason, reason_size, "HIP runtime %d is older than the %d this backend needs (ROCm 5.3)",
                 api->runtime_version, MXA_HIP_MIN_RUNTIME);
        st = MXA_ERR_UNSUPPORTED;
        goto out;
    }
    if (api->hipDriverGetVersion(&api->driver_version) != MXA_HIP_SUCCESS) api->driver_version = 0;
    if (api->hiprtcVersion(&api->rtc_major, &api->rtc_minor) != 0) {
        snprintf(reason, reason_size, "hiprtcVersion failed");
        goto out;
    }
    api->refs = 1;
    *out = api;
    st = MXA_OK;
out:
    if (st != MXA_OK) {
        MXA_LOG_I("hip: %s", reason);
        unload(api);
    }
    return st;
}

void mxa_hip_api_retain(mxa_hip_api *api)
{
    pthread_mutex_lock(&api_lock);
    api->refs++;
    pthread_mutex_unlock(&api_lock);
}

void mxa_hip_api_release(mxa_hip_api *api)
{
    if (!api) return;
    pthread_mutex_lock(&api_lock);
    const int last = --api->refs == 0;
    pthread_mutex_unlock(&api_lock);
    if (last) unload(api);
}

mxa_status mxa_hip_fail(const mxa_hip_api *api, hipError_t err, const char *call)
{
    const char *name = api->hipGetErrorString ? api->hipGetErrorString(err) : NULL;
    mxa_status st = err == MXA_HIP_ERROR_OUT_OF_MEMORY ? MXA_ERR_OUT_OF_MEMORY : MXA_ERR_BACKEND;
    return mxa_fail(st, "hip: %s failed: %s (%d)", call, name ? name : "unknown error", err);
}
