/*
 * Programs: built per device from the embedded sources with -D options, kept
 * in memory for the device's life, and their binaries cached on disk
 * (runtime/cache.h) keyed by platform, device, driver, source hash and options.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "cl_internal.h"
#include "env.h"
#include "log.h"
#include "status.h"

extern const char mxa_cl_mxfp4[], mxa_cl_prep[], mxa_cl_attention_common[], mxa_cl_attention_tiled[],
    mxa_cl_attention_mma[];
extern const size_t mxa_cl_mxfp4_size, mxa_cl_prep_size, mxa_cl_attention_common_size, mxa_cl_attention_tiled_size,
    mxa_cl_attention_mma_size;

#define MAX_SOURCES 3

/* Each program is the shared MXFP4 helpers followed by its family's files (the attention
 * kernels' shared part first); returns how many. */
static int family_sources(int family, const char *src[MAX_SOURCES], size_t len[MAX_SOURCES])
{
    src[0] = mxa_cl_mxfp4;
    len[0] = mxa_cl_mxfp4_size;
    if (family == CL_FAMILY_PREP) {
        src[1] = mxa_cl_prep;
        len[1] = mxa_cl_prep_size;
        return 2;
    }
    src[1] = mxa_cl_attention_common;
    len[1] = mxa_cl_attention_common_size;
    src[2] = family == CL_FAMILY_TILED ? mxa_cl_attention_tiled : mxa_cl_attention_mma;
    len[2] = family == CL_FAMILY_TILED ? mxa_cl_attention_tiled_size : mxa_cl_attention_mma_size;
    return 3;
}

/* The kernels each family's program must yield (a cached binary is checked for all of them). */
static const char *const family_kernels[][8] = {
    [CL_FAMILY_PREP] = {"mxa_quantize_rows", "mxa_quantize_rows_fp8", "mxa_prep_qk", "mxa_prep_v", "mxa_prep_qk_i8",
                        "mxa_prep_v_i8", NULL},
    [CL_FAMILY_TILED] = {"mxa_attention_tiled", NULL},
    [CL_FAMILY_MMA] = {"mxa_attention_mma", NULL},
};

static void device_string(const cl_impl *d, cl_device_info what, char *out, size_t size)
{
    out[0] = '\0';
    d->cl->GetDeviceInfo(d->desc.device, what, size, out, NULL);
    out[size - 1] = '\0';
}

/* Everything a binary depends on: platform and its version (PoCL names its LLVM there),
 * device name and version, driver version, the sources and the options. */
static void cache_key(const cl_impl *d, int family, const char *options, char *key, size_t size)
{
    const char *src[MAX_SOURCES];
    size_t len[MAX_SOURCES];
    const int n = family_sources(family, src, len);
    uint64_t h = MXA_HASH_SEED;
    for (int i = 0; i < n; i++) h = mxa_hash64(src[i], len[i], h);
    char name[MXA_NAME_LEN], version[160], platform_version[200] = "";
    device_string(d, CL_DEVICE_NAME, name, sizeof name);
    device_string(d, CL_DEVICE_VERSION, version, sizeof version);
    d->cl->GetPlatformInfo(d->desc.platform, CL_PLATFORM_VERSION, sizeof platform_version, platform_version, NULL);
    platform_version[sizeof platform_version - 1] = '\0';
    snprintf(key, size, "opencl|%s|%s|%s|%s|%s|src=%016llx|%s", d->desc.platform_name, platform_version, name,
             version, d->desc.driver_version, (unsigned long long)h, options);
}

/* Logs the build log of a failed build (one line per log line at warn level). */
static void log_build_failure(cl_impl *d, cl_program program, const char *options)
{
    size_t size = 0;
    d->cl->GetProgramBuildInfo(program, d->desc.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = size ? malloc(size + 1) : NULL;
    if (log && d->cl->GetProgramBuildInfo(program, d->desc.device, CL_PROGRAM_BUILD_LOG, size, log, NULL) == CL_SUCCESS) {
        log[size] = '\0';
        MXA_LOG_W("opencl: build with '%s' failed:\n%.4000s", options, log);
    }
    free(log);
}

/* The build log of a successful build, at info level (e.g. -cl-nv-verbose register counts). */
static void log_build_info(cl_impl *d, cl_program program, const char *options)
{
    size_t size = 0;
    d->cl->GetProgramBuildInfo(program, d->desc.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = size > 2 ? malloc(size + 1) : NULL;
    if (log && d->cl->GetProgramBuildInfo(program, d->desc.device, CL_PROGRAM_BUILD_LOG, size, log, NULL) == CL_SUCCESS) {
        log[size] = '\0';
        MXA_LOG_I("opencl: built '%s':\n%.4000s", options, log);
    }
    free(log);
}

static mxa_status build(cl_impl *d, cl_program program, const char *options, const char *what)
{
    cl_int err = d->cl->BuildProgram(program, 1, &d->desc.device, options, NULL, NULL);
    if (err == CL_SUCCESS) {
        log_build_info(d, program, options);
        return MXA_OK;
    }
    log_build_failure(d, program, options);
    return mxa_cl_fail(err, what);
}

/* Whether `p` yields every kernel of `family` (a binary can build yet lack one). */
static int has_kernels(cl_impl *d, cl_program p, int family)
{
    for (const char *const *name = family_kernels[family]; *name; name++) {
        cl_int err = CL_SUCCESS;
        cl_kernel k = d->cl->CreateKernel(p, *name, &err);
        if (!k) {
            MXA_LOG_I("opencl: cached binary has no kernel %s (%s)", *name, mxa_cl_error_name(err));
            return 0;
        }
        d->cl->ReleaseKernel(k);
    }
    return 1;
}

/* A program from a cached binary, or NULL. The entry is taken out of the cache while the
 * driver has it and put back only once the binary built and yields every kernel: one that
 * the driver rejects, that lacks a kernel or that crashes the process is rebuilt from
 * source by the next attempt, and never fails later runs. */
static cl_program from_cache(cl_impl *d, int family, const char *key, const char *options)
{
    void *bin = NULL;
    size_t size = 0;
    if (mxa_cache_take("opencl-binary", key, &bin, &size) != MXA_OK) {
        mxa_clear_error(); /* a miss is not an error */
        return NULL;
    }
    cl_int err = CL_SUCCESS, status = CL_SUCCESS;
    const unsigned char *ptr = bin;
    cl_program p = d->cl->CreateProgramWithBinary(d->context, 1, &d->desc.device, &size, &ptr, &status, &err);
    const char *why = NULL;
    if (!p || err != CL_SUCCESS || status != CL_SUCCESS) why = mxa_cl_error_name(err ? err : status);
    else if (d->cl->BuildProgram(p, 1, &d->desc.device, options, NULL, NULL) != CL_SUCCESS) why = "did not build";
    else if (!has_kernels(d, p, family)) why = "a kernel is missing";
    if (!why) {
        if (mxa_cache_store("opencl-binary", key, bin, size) != MXA_OK) mxa_clear_error(); /* not fatal */
        free(bin);
        return p;
    }
    free(bin);
    MXA_LOG_I("opencl: cached binary rejected (%s); rebuilding", why);
    if (p) d->cl->ReleaseProgram(p);
    return NULL;
}

static void to_cache(cl_impl *d, cl_program p, const char *key)
{
    size_t size = 0;
    if (d->cl->GetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS || size == 0)
        return;
    unsigned char *bin = malloc(size);
    if (!bin) return;
    if (d->cl->GetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS)
        (void)mxa_cache_store("opencl-binary", key, bin, size); /* failure to cache is not fatal */
    free(bin);
}

/*
 * MXA_OPENCL_OPTIONS adds build options for experiments that leave the kernels' contract
 * alone. mxa passes the kernels their shapes and recipe as -D macros, so -D, -U and -I
 * (and math relaxations, which break the exact MXFP4 products) would change what a kernel
 * computes without the host knowing: -DMXA_BC=7 gave zeros. Only the options below pass;
 * any other makes mxa ignore the whole variable, with one warning per device open.
 */
static const char *const safe_options[] = {"-cl-opt-disable", "-cl-kernel-arg-info", "-cl-nv-verbose", "-w",
                                           "-Werror", NULL};
static const char *const safe_prefixes[] = {"-cl-nv-maxrregcount=", "-cl-nv-opt-level=", NULL};

static int safe_option(const char *opt, size_t len)
{
    for (const char *const *s = safe_options; *s; s++)
        if (strlen(*s) == len && strncmp(opt, *s, len) == 0) return 1;
    for (const char *const *s = safe_prefixes; *s; s++) {
        const size_t n = strlen(*s);
        if (len > n && strncmp(opt, *s, n) == 0 && strspn(opt + n, "0123456789") == len - n) return 1;
    }
    return 0;
}

void mxa_cl_extra_options(char *out, size_t size)
{
    out[0] = '\0';
    const char *extra = mxa_env_string("MXA_OPENCL_OPTIONS");
    if (!extra) return;
    if (strlen(extra) >= size) {
        MXA_LOG_W("MXA_OPENCL_OPTIONS: longer than %zu characters; ignoring the variable", size - 1);
        return;
    }
    for (const char *p = extra + strspn(extra, " \t"); *p; p += strspn(p, " \t")) {
        const size_t len = strcspn(p, " \t");
        if (!safe_option(p, len)) {
            MXA_LOG_W("MXA_OPENCL_OPTIONS: '%.*s' is not one of the build options that keep the kernels' "
                      "contract (-cl-opt-disable, -cl-kernel-arg-info, -cl-nv-verbose, -cl-nv-maxrregcount=N, "
                      "-cl-nv-opt-level=N, -w, -Werror); ignoring the variable",
                      (int)len, p);
            return;
        }
        p += len;
    }
    snprintf(out, size, "%s", extra);
}

mxa_status mxa_cl_program(cl_impl *d, int family, const char *base_options, cl_program *out)
{
    char options[sizeof d->programs[0].options];
    const char *extra = d->extra_options;
    if (snprintf(options, sizeof options, "%s%s%s", base_options, *extra ? " " : "", extra) >= (int)sizeof options)
        return mxa_fail(MXA_ERR_INTERNAL, "opencl: build options too long");
    for (int i = 0; i < d->program_count; i++)
        if (d->programs[i].family == family && strcmp(d->programs[i].options, options) == 0) {
            *out = d->programs[i].program;
            return MXA_OK;
        }
    if (d->program_count == CL_MAX_PROGRAMS) {
        /* keep memory bounded: drop the oldest program (its kernels are created per call) */
        d->cl->Finish(d->queue);
        d->cl->ReleaseProgram(d->programs[0].program);
        memmove(&d->programs[0], &d->programs[1], sizeof d->programs[0] * (CL_MAX_PROGRAMS - 1));
        d->program_count--;
    }
    char key[1024];
    cache_key(d, family, options, key, sizeof key);
    cl_program p = from_cache(d, family, key, options);
    if (!p) {
        const char *src[MAX_SOURCES];
        size_t len[MAX_SOURCES];
        const int n = family_sources(family, src, len);
        cl_int err = CL_SUCCESS;
        p = d->cl->CreateProgramWithSource(d->context, (cl_uint)n, src, len, &err);
        if (!p) return mxa_cl_fail(err, "clCreateProgramWithSource");
        mxa_status st = build(d, p, options, "clBuildProgram");
        if (st) {
            d->cl->ReleaseProgram(p);
            return st;
        }
        to_cache(d, p, key);
    }
    cl_built *b = &d->programs[d->program_count++];
    b->family = family;
    snprintf(b->options, sizeof b->options, "%s", options);
    b->program = p;
    *out = p;
    return MXA_OK;
}

mxa_status mxa_cl_kernel(cl_impl *d, cl_program program, const char *name, cl_kernel *out)
{
    cl_int err = CL_SUCCESS;
    *out = d->cl->CreateKernel(program, name, &err);
    if (!*out) return mxa_cl_fail(err, name);
    return MXA_OK;
}

void mxa_cl_arg(cl_args *a, size_t size, const void *value)
{
    if (a->err == CL_SUCCESS) a->err = a->cl->SetKernelArg(a->kernel, a->next, size, value);
    a->next++;
}

mxa_status mxa_cl_launch(cl_impl *d, cl_args *a, cl_uint dims, const size_t *global, const size_t *local,
                         cl_event *events, int *event_count, const char *what)
{
    if (a->err != CL_SUCCESS) return mxa_cl_fail(a->err, "clSetKernelArg");
    cl_event ev = NULL;
    const cl_event *wait = NULL;
    const cl_uint nwait = mxa_cl_take_wait(d, &wait);
    cl_int err = d->cl->EnqueueNDRangeKernel(d->target, a->kernel, dims, NULL, global, local, nwait, wait,
                                             events ? &ev : NULL);
    if (err != CL_SUCCESS) return mxa_cl_fail(err, what);
    if (events) events[(*event_count)++] = ev;
    return MXA_OK;
}

cl_uint mxa_cl_take_wait(cl_impl *d, const cl_event **wait)
{
    const cl_uint n = d->wait_count;
    *wait = n ? d->wait : NULL;
    d->wait_count = 0;
    d->wait = NULL;
    return n;
}

double mxa_cl_events_seconds(cl_impl *d, cl_event *events, int count)
{
    cl_ulong first = 0, last = 0;
    int ok = count > 0;
    if (ok && d->cl->WaitForEvents((cl_uint)count, events) != CL_SUCCESS) ok = 0;
    for (int i = 0; i < count; i++) {
        cl_ulong start = 0, end = 0;
        if (ok && (d->cl->GetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) ||
                   d->cl->GetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_END, sizeof end, &end, NULL)))
            ok = 0;
        if (ok) {
            MXA_LOG_D("opencl: kernel %d of %d: %.3f ms", i + 1, count, (double)(end - start) * 1e-6);
            if (i == 0 || start < first) first = start;
            if (end > last) last = end;
        }
        d->cl->ReleaseEvent(events[i]);
    }
    return ok && last >= first ? (double)(last - first) * 1e-9 : -1.0;
}
