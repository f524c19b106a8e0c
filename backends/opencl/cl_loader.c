/*
 * The ICD loader, found at run time. Loaded tables are kept for the life of
 * the process and libOpenCL is never dlclose'd: ICDs (PoCL, NVIDIA) start
 * driver threads, and unmapping their code under those threads crashes. The
 * ICD loader itself never unloads vendor libraries for the same reason.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cl_api.h"
#include "env.h"
#include "log.h"
#include "status.h"
#include "sysprobe.h"
#include "text.h"

#define MAX_LOADED 4

typedef struct loaded_api {
    char path[256];
    mxa_cl_api api;
} loaded_api;

static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;
static loaded_api loaded[MAX_LOADED];
static int loaded_count;

/* Resolves every entry point; returns the first missing name, or NULL. */
static const char *resolve(void *lib, mxa_cl_api *api)
{
#define SYM(field, name)                                                    \
    do {                                                                    \
        void *p = dlsym(lib, name);                                         \
        if (!p) return name;                                                \
        memcpy(&api->field, &p, sizeof p); /* object -> function pointer */ \
    } while (0)
    SYM(GetPlatformIDs, "clGetPlatformIDs");
    SYM(GetPlatformInfo, "clGetPlatformInfo");
    SYM(GetDeviceIDs, "clGetDeviceIDs");
    SYM(GetDeviceInfo, "clGetDeviceInfo");
    SYM(CreateContext, "clCreateContext");
    SYM(ReleaseContext, "clReleaseContext");
    SYM(CreateCommandQueue, "clCreateCommandQueue");
    SYM(ReleaseCommandQueue, "clReleaseCommandQueue");
    SYM(CreateBuffer, "clCreateBuffer");
    SYM(ReleaseMemObject, "clReleaseMemObject");
    SYM(EnqueueWriteBuffer, "clEnqueueWriteBuffer");
    SYM(EnqueueReadBuffer, "clEnqueueReadBuffer");
    SYM(CreateProgramWithSource, "clCreateProgramWithSource");
    SYM(CreateProgramWithBinary, "clCreateProgramWithBinary");
    SYM(BuildProgram, "clBuildProgram");
    SYM(GetProgramInfo, "clGetProgramInfo");
    SYM(GetProgramBuildInfo, "clGetProgramBuildInfo");
    SYM(ReleaseProgram, "clReleaseProgram");
    SYM(CreateKernel, "clCreateKernel");
    SYM(ReleaseKernel, "clReleaseKernel");
    SYM(SetKernelArg, "clSetKernelArg");
    SYM(GetKernelWorkGroupInfo, "clGetKernelWorkGroupInfo");
    SYM(EnqueueNDRangeKernel, "clEnqueueNDRangeKernel");
    SYM(Finish, "clFinish");
    SYM(WaitForEvents, "clWaitForEvents");
    SYM(GetEventProfilingInfo, "clGetEventProfilingInfo");
    SYM(ReleaseEvent, "clReleaseEvent");
    SYM(Flush, "clFlush");
    SYM(EnqueueFillBuffer, "clEnqueueFillBuffer");
    SYM(RetainContext, "clRetainContext");
    SYM(RetainDevice, "clRetainDevice");
    SYM(ReleaseDevice, "clReleaseDevice");
    SYM(RetainMemObject, "clRetainMemObject");
    SYM(RetainEvent, "clRetainEvent");
    SYM(GetContextInfo, "clGetContextInfo");
    SYM(GetCommandQueueInfo, "clGetCommandQueueInfo");
    SYM(GetMemObjectInfo, "clGetMemObjectInfo");
#undef SYM
    return NULL;
}

int mxa_cl_icd_registered(const char *vendors_dir, char *reason, size_t reason_size)
{
    const char *v = mxa_env_string("OCL_ICD_VENDORS");
    if (mxa_env_string("OCL_ICD_FILENAMES")) return 1; /* libraries named directly */
    if (v) {                                           /* ocl-icd: it replaces vendors_dir */
        const size_t n = strlen(v);
        char path[4096];
        int ok;
        if (mxa_is_dir(v)) ok = mxa_dir_has_file(v, ".icd");
        else if (mxa_is_file(v)) ok = 1; /* an .icd file or the ICD library itself */
        else if (strchr(v, '/')) ok = 0;
        else if (n > 4 && strcmp(v + n - 4, ".icd") == 0) /* an .icd file name in vendors_dir */
            ok = snprintf(path, sizeof path, "%s/%s", vendors_dir, v) < (int)sizeof path && mxa_is_file(path);
        else ok = 1; /* a bare library name: only dlopen could tell */
        if (!ok) snprintf(reason, reason_size, "no OpenCL ICD registered (OCL_ICD_VENDORS=%s has no *.icd)", v);
        return ok;
    }
    if (mxa_dir_has_file(vendors_dir, ".icd") ||
        mxa_path_list_has_file(mxa_env_string("OPENCL_VENDOR_PATH"), NULL, ".icd", 0))
        return 1;
    snprintf(reason, reason_size, "no OpenCL ICD registered (%s, OCL_ICD_VENDORS)", vendors_dir);
    return 0;
}

mxa_status mxa_cl_load(const mxa_cl_api **api, char *reason, size_t reason_size)
{
    const char *env = mxa_env_string("MXA_OPENCL_LIBRARY");
    const char *candidates[2] = {env ? env : "libOpenCL.so.1", env ? NULL : "libOpenCL.so"};
    mxa_status st = MXA_ERR_NOT_FOUND;
    *api = NULL;
    /* Without an ICD the loader finds no platform, and loading it costs (and
     * can pull in a driver's LLVM for nothing); a library named by
     * MXA_OPENCL_LIBRARY is the user's explicit choice and skips the check. */
    if (!env && !mxa_cl_icd_registered("/etc/OpenCL/vendors", reason, reason_size)) {
        MXA_LOG_I("opencl: %s", reason);
        return st;
    }
    pthread_mutex_lock(&loader_lock);
    for (int c = 0; c < 2 && candidates[c] && !*api; c++) {
        for (int i = 0; i < loaded_count; i++)
            if (strcmp(loaded[i].path, candidates[c]) == 0) {
                *api = &loaded[i].api;
                st = MXA_OK;
                break;
            }
        if (*api) break;
        void *lib = dlopen(candidates[c], RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char *why = dlerror();
            snprintf(reason, reason_size, "cannot load the OpenCL ICD loader %s: %s", candidates[c],
                     why ? why : "not found");
            mxa_text_sanitize(reason);
            continue;
        }
        if (loaded_count == MAX_LOADED) {
            snprintf(reason, reason_size, "too many different OpenCL libraries loaded in this process");
            break;
        }
        loaded_api *slot = &loaded[loaded_count];
        const char *missing = resolve(lib, &slot->api);
        if (missing) {
            snprintf(reason, reason_size, "%s lacks %s (OpenCL 1.2 is required)", candidates[c], missing);
            continue;
        }
        snprintf(slot->path, sizeof slot->path, "%s", candidates[c]);
        loaded_count++;
        *api = &slot->api;
        st = MXA_OK;
        MXA_LOG_D("opencl: loaded %s", candidates[c]);
    }
    pthread_mutex_unlock(&loader_lock);
    return st;
}

const char *mxa_cl_error_name(cl_int err)
{
    switch (err) {
#define E(x) case x: return #x
        E(CL_SUCCESS);
        E(CL_DEVICE_NOT_FOUND);
        E(CL_DEVICE_NOT_AVAILABLE);
        E(CL_COMPILER_NOT_AVAILABLE);
        E(CL_MEM_OBJECT_ALLOCATION_FAILURE);
        E(CL_OUT_OF_RESOURCES);
        E(CL_OUT_OF_HOST_MEMORY);
        E(CL_PROFILING_INFO_NOT_AVAILABLE);
        E(CL_BUILD_PROGRAM_FAILURE);
        E(CL_INVALID_VALUE);
        E(CL_INVALID_DEVICE);
        E(CL_INVALID_BINARY);
        E(CL_INVALID_BUILD_OPTIONS);
        E(CL_INVALID_PROGRAM);
        E(CL_INVALID_PROGRAM_EXECUTABLE);
        E(CL_INVALID_KERNEL_NAME);
        E(CL_INVALID_KERNEL);
        E(CL_INVALID_ARG_INDEX);
        E(CL_INVALID_ARG_VALUE);
        E(CL_INVALID_ARG_SIZE);
        E(CL_INVALID_KERNEL_ARGS);
        E(CL_INVALID_WORK_GROUP_SIZE);
        E(CL_INVALID_WORK_ITEM_SIZE);
        E(CL_INVALID_GLOBAL_OFFSET);
        E(CL_INVALID_MEM_OBJECT);
        E(CL_INVALID_BUFFER_SIZE);
        E(CL_INVALID_COMMAND_QUEUE);
        E(CL_INVALID_CONTEXT);
        E(CL_INVALID_PLATFORM);
        E(CL_INVALID_OPERATION);
        E(CL_INVALID_EVENT);
        E(CL_INVALID_GLOBAL_WORK_SIZE);
        E(CL_PLATFORM_NOT_FOUND_KHR);
#undef E
    default: return "CL_ERROR";
    }
}

mxa_status mxa_cl_fail(cl_int err, const char *what)
{
    const mxa_status st = (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ||
                           err == CL_INVALID_BUFFER_SIZE)
                              ? MXA_ERR_OUT_OF_MEMORY
                              : MXA_ERR_BACKEND;
    return mxa_fail(st, "opencl: %s failed: %s (%d)", what, mxa_cl_error_name(err), (int)err);
}
