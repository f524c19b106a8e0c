/*
 * The OpenCL entry points mxa uses, resolved from libOpenCL.so.1 with dlopen
 * so that a machine without an ICD loader still runs mxa (the backend is then
 * absent, with the reason). Only the headers are a build-time dependency.
 */
#ifndef MXA_OPENCL_CL_API_H
#define MXA_OPENCL_CL_API_H

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "mxa/mxa.h"

/* Our own pointer types: the headers mark some 1.2 entry points deprecated. */
typedef struct mxa_cl_api {
    cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
    cl_int (*GetPlatformInfo)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
    cl_int (*GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
    cl_int (*GetDeviceInfo)(cl_device_id, cl_device_info, size_t, void *, size_t *);
    cl_context (*CreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                void(CL_CALLBACK *)(const char *, const void *, size_t, void *),
                                void *, cl_int *);
    cl_int (*ReleaseContext)(cl_context);
    cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties,
                                           cl_int *);
    cl_int (*ReleaseCommandQueue)(cl_command_queue);
    cl_mem (*CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
    cl_int (*ReleaseMemObject)(cl_mem);
    cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *,
                                 cl_uint, const cl_event *, cl_event *);
    cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint,
                                const cl_event *, cl_event *);
    cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *,
                                          cl_int *);
    cl_program (*CreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id *,
                                          const size_t *, const unsigned char **, cl_int *,
                                          cl_int *);
    cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                           void(CL_CALLBACK *)(cl_program, void *), void *);
    cl_int (*GetProgramInfo)(cl_program, cl_program_info, size_t, void *, size_t *);
    cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_program_build_info, size_t, void *,
                                  size_t *);
    cl_int (*ReleaseProgram)(cl_program);
    cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
    cl_int (*ReleaseKernel)(cl_kernel);
    cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
    cl_int (*GetKernelWorkGroupInfo)(cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t,
                                     void *, size_t *);
    cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *,
                                   const size_t *, const size_t *, cl_uint, const cl_event *,
                                   cl_event *);
    cl_int (*Finish)(cl_command_queue);
    cl_int (*WaitForEvents)(cl_uint, const cl_event *);
    cl_int (*GetEventProfilingInfo)(cl_event, cl_profiling_info, size_t, void *, size_t *);
    cl_int (*ReleaseEvent)(cl_event);
    /* OpenCL 1.2: key lengths, and the interop entry points (mxa_opencl.h) */
    cl_int (*Flush)(cl_command_queue);
    cl_int (*EnqueueFillBuffer)(cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, cl_uint,
                                const cl_event *, cl_event *);
    cl_int (*RetainContext)(cl_context);
    cl_int (*RetainDevice)(cl_device_id);
    cl_int (*ReleaseDevice)(cl_device_id);
    cl_int (*RetainMemObject)(cl_mem);
    cl_int (*RetainEvent)(cl_event);
    cl_int (*GetContextInfo)(cl_context, cl_context_info, size_t, void *, size_t *);
    cl_int (*GetCommandQueueInfo)(cl_command_queue, cl_command_queue_info, size_t, void *, size_t *);
    cl_int (*GetMemObjectInfo)(cl_mem, cl_mem_info, size_t, void *, size_t *);
} mxa_cl_api;

/* 1 if an OpenCL ICD is registered as the ICD loaders look for one:
 * OCL_ICD_FILENAMES, OCL_ICD_VENDORS (a directory of *.icd, an .icd or library
 * file, or a bare name), else *.icd in `vendors_dir` (/etc/OpenCL/vendors) or
 * in OPENCL_VENDOR_PATH. Otherwise 0 with `reason` saying what was searched.
 * Reads files only, loads nothing. */
int mxa_cl_icd_registered(const char *vendors_dir, char *reason, size_t reason_size);

/* Loads the ICD loader (MXA_OPENCL_LIBRARY, else libOpenCL.so.1, else
 * libOpenCL.so; the latter two only if mxa_cl_icd_registered) once per
 * process and returns its table. On failure returns
 * MXA_ERR_NOT_FOUND and writes why into `reason`. Thread-safe. */
mxa_status mxa_cl_load(const mxa_cl_api **api, char *reason, size_t reason_size);

/* The name of an OpenCL error code ("CL_OUT_OF_RESOURCES"). */
const char *mxa_cl_error_name(cl_int err);

/* Records "<what>: <CL error name> (<code>)" as the error and returns MXA_ERR_BACKEND
 * (MXA_ERR_OUT_OF_MEMORY for the allocation failures). */
mxa_status mxa_cl_fail(cl_int err, const char *what);

#endif
