/*
 * Device discovery: every platform and device the ICD loader reports, their
 * versions, extensions and limits, and the kernel variant each would run.
 * Vendor ids are not trusted alone (PoCL reports the host CPU's vendor id for
 * its CPU device): the device type and platform name decide what a device is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "env.h"
#include "log.h"
#include "speed.h"
#include "status.h"
#include "text.h"

const char *const mxa_cl_variant_names[CL_VARIANT_COUNT] = {"cl-mma-ptx", "cl-tiled"};

#define CL_DEFAULT_BC 64
#define TILED_MIN_LOCAL (16u * 1024u) /* smallest tiled configuration (BR 16, D 32) */

static void dev_string(const mxa_cl_api *cl, cl_device_id dev, cl_device_info what, char *buf, size_t size)
{
    buf[0] = '\0';
    if (cl->GetDeviceInfo(dev, what, size, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
    buf[size - 1] = '\0';
}

/* "OpenCL C 1.2 ..." -> 12 */
static int parse_version(const char *s, const char *prefix)
{
    int major = 0, minor = 0;
    size_t n = strlen(prefix);
    if (strncmp(s, prefix, n) == 0 && sscanf(s + n, "%d.%d", &major, &minor) == 2) return major * 10 + minor;
    return 0;
}

/* The highest OpenCL C version: CL_DEVICE_OPENCL_C_ALL_VERSIONS on 3.0 devices
 * (the plain version string of a 3.0 device may say 1.2 while 3.0 is there). */
static int c_version(const mxa_cl_api *cl, cl_device_id dev, int device_version)
{
    char text[128];
    dev_string(cl, dev, CL_DEVICE_OPENCL_C_VERSION, text, sizeof text);
    int best = parse_version(text, "OpenCL C ");
    if (device_version >= 30) {
        size_t size = 0;
        if (cl->GetDeviceInfo(dev, CL_DEVICE_OPENCL_C_ALL_VERSIONS, 0, NULL, &size) == CL_SUCCESS && size > 0 &&
            size % sizeof(cl_name_version) == 0) {
            cl_name_version *all = malloc(size);
            if (all && cl->GetDeviceInfo(dev, CL_DEVICE_OPENCL_C_ALL_VERSIONS, size, all, NULL) == CL_SUCCESS)
                for (size_t i = 0; i < size / sizeof *all; i++) {
                    int v = (int)CL_VERSION_MAJOR(all[i].version) * 10 + (int)CL_VERSION_MINOR(all[i].version);
                    if (v > best) best = v;
                }
            free(all);
        }
    }
    return best;
}

static int has_ext(const char *exts, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = exts; (p = strstr(p, name)) != NULL; p += n)
        if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
    return 0;
}

static void append(char *buf, size_t size, const char *text)
{
    size_t len = strlen(buf);
    if (len + 1 < size) snprintf(buf + len, size - len, "%s%s", len ? ", " : "", text);
}

/* Which variants the device can run, and which one is chosen (DESIGN.md env switches). */
static void choose_variant(cl_device_desc *dd, mxa_device_info *info)
{
    char why_mma[160] = "";
    dd->supported[CL_VARIANT_TILED] = dd->c_version >= 12 && dd->local_mem >= TILED_MIN_LOCAL && dd->max_wg >= 128;
    if (!dd->is_nvidia || dd->type != CL_DEVICE_TYPE_GPU)
        snprintf(why_mma, sizeof why_mma, "not an NVIDIA GPU");
    else if (dd->cc_major < 8)
        snprintf(why_mma, sizeof why_mma, "compute capability %d.%d < 8.0", dd->cc_major, dd->cc_minor);
    else if (mxa_env_flag("MXA_DISABLE_COOPMAT"))
        snprintf(why_mma, sizeof why_mma, "disabled by MXA_DISABLE_COOPMAT");
    else if (dd->local_mem < 32u * 1024u)
        snprintf(why_mma, sizeof why_mma, "local memory below 32 KiB");
    dd->supported[CL_VARIANT_MMA_PTX] = why_mma[0] == '\0';

    int chosen = -1;
    const char *forced = mxa_env_kernel();
    char note[96] = "";
    if (forced) {
        for (int v = 0; v < CL_VARIANT_COUNT; v++)
            if (strcmp(forced, mxa_cl_variant_names[v]) == 0) {
                if (dd->supported[v]) chosen = v;
                else snprintf(note, sizeof note, "; MXA_KERNEL=%s is not supported here", forced);
            }
    }
    if (chosen >= 0) {
        snprintf(info->variant_reason, sizeof info->variant_reason, "forced by MXA_KERNEL");
    } else {
        for (int v = 0; v < CL_VARIANT_COUNT && chosen < 0; v++)
            if (dd->supported[v]) chosen = v;
        if (chosen == CL_VARIANT_MMA_PTX)
            snprintf(info->variant_reason, sizeof info->variant_reason,
                     "NVIDIA compute capability %d.%d: int8 tensor cores (mma.sync m16n8k32) through inline PTX%.60s",
                     dd->cc_major, dd->cc_minor, note);
        else if (chosen == CL_VARIANT_TILED)
            snprintf(info->variant_reason, sizeof info->variant_reason,
                     "portable local-memory tiles, exact FP4 products in fp32 (mma: %.100s)%.60s", why_mma, note);
    }
    if (chosen < 0) {
        dd->variant = CL_VARIANT_TILED;
        snprintf(info->variant, sizeof info->variant, "none");
        snprintf(info->variant_reason, sizeof info->variant_reason,
                 "needs OpenCL C 1.2, 16 KiB local memory and 128-wide work-groups");
        return;
    }
    dd->variant = (cl_variant)chosen;
    snprintf(info->variant, sizeof info->variant, "%s", mxa_cl_variant_names[chosen]);
}

/* The score for "auto" (runtime/speed.h): the estimated attention throughput of the
 * chosen variant from its rate on the H200 and the device's compute units (SMs on
 * NVIDIA); an OpenCL CPU device (PoCL on CI machines) below the native CPU backend. */
void mxa_cl_score(const cl_device_desc *dd, mxa_device_info *info)
{
    if (strcmp(info->variant, "none") == 0)
        mxa_speed_exclude(info, -100, "no variant runs here");
    else if (dd->type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR))
        mxa_speed_estimate(info, MXA_SPEED_DISCRETE, info->compute_units); /* units always known */
    else
        mxa_speed_estimate(info, MXA_SPEED_HOST_CPU, 0);
}

/* Fills one probed device; returns 0 if the device is unusable (cl_internal.h). */
int mxa_cl_describe(const mxa_cl_api *cl, cl_platform_id plat, const char *plat_name, cl_device_id dev,
                    mxa_probed_device *out)
{
    cl_device_desc *dd = calloc(1, sizeof *dd);
    if (!dd) return 0;
    mxa_device_info *info = &out->info;
    memset(out, 0, sizeof *out);
    dd->api = cl;
    dd->platform = plat;
    dd->device = dev;
    snprintf(dd->platform_name, sizeof dd->platform_name, "%s", plat_name);
    cl->GetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof dd->type, &dd->type, NULL);

    char version[128], exts[8192];
    cl_bool avail = CL_TRUE, compiler = CL_TRUE;
    cl->GetDeviceInfo(dev, CL_DEVICE_AVAILABLE, sizeof avail, &avail, NULL);
    cl->GetDeviceInfo(dev, CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, NULL);
    dev_string(cl, dev, CL_DEVICE_NAME, info->name, sizeof info->name);
    dev_string(cl, dev, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    dev_string(cl, dev, CL_DRIVER_VERSION, dd->driver_version, sizeof dd->driver_version);
    dev_string(cl, dev, CL_DEVICE_VERSION, version, sizeof version);
    dev_string(cl, dev, CL_DEVICE_EXTENSIONS, exts, sizeof exts);
    mxa_text_sanitize(info->name); /* the driver's bytes, printed by mxa probe and the log */
    if (!avail || !compiler) {
        MXA_LOG_I("opencl: skipping %s (%s)", info->name, !avail ? "not available" : "no compiler");
        free(dd);
        return 0;
    }
    const int dev_version = parse_version(version, "OpenCL ");
    dd->c_version = c_version(cl, dev, dev_version);
    dd->is_pocl = strstr(plat_name, "Portable Computing Language") != NULL || strstr(version, "PoCL") != NULL;
    dd->is_nvidia = strstr(plat_name, "NVIDIA") != NULL && has_ext(exts, "cl_nv_device_attribute_query");
    cl_uint cu = 0, warp = 0;
    cl_ulong mem = 0, local = 0;
    size_t max_wg = 0;
    cl->GetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    cl->GetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    cl->GetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    cl->GetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL);
    dd->local_mem = (size_t)local;
    dd->max_wg = max_wg;
    if (dd->is_nvidia) {
        cl_uint major = 0, minor = 0;
        cl->GetDeviceInfo(dev, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major, &major, NULL);
        cl->GetDeviceInfo(dev, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof minor, &minor, NULL);
        cl->GetDeviceInfo(dev, CL_DEVICE_WARP_SIZE_NV, sizeof warp, &warp, NULL);
        dd->cc_major = (int)major;
        dd->cc_minor = (int)minor;
    }

    snprintf(info->driver, sizeof info->driver, "%.40s %.30s (%.50s)", plat_name, dd->driver_version,
             dev_version ? version : "OpenCL ?");
    info->memory_bytes = mem;
    info->compute_units = cu;
    info->shared_memory_bytes = local;
    info->subgroup_min = info->subgroup_max = dd->type == CL_DEVICE_TYPE_CPU ? 1u : warp;

    char caps[MXA_REASON_LEN] = "";
    char line[96];
    snprintf(line, sizeof line, "OpenCL %d.%d, OpenCL C %d.%d", dev_version / 10, dev_version % 10,
             dd->c_version / 10, dd->c_version % 10);
    append(caps, sizeof caps, line);
    info->caps = MXA_CAP_INT8 | MXA_CAP_TIMESTAMPS;
    if (has_ext(exts, "cl_khr_fp16")) {
        info->caps |= MXA_CAP_FP16;
        append(caps, sizeof caps, "fp16");
    }
    if (has_ext(exts, "cl_khr_integer_dot_product") && !mxa_env_flag("MXA_DISABLE_INT_DOT")) {
        info->caps |= MXA_CAP_INT_DOT;
        append(caps, sizeof caps, "int-dot");
    }
    if (has_ext(exts, "cl_khr_subgroups") || has_ext(exts, "cl_intel_subgroups")) {
        info->caps |= MXA_CAP_SUBGROUPS;
        append(caps, sizeof caps, "subgroups");
    }
    snprintf(line, sizeof line, "local %llu KiB", (unsigned long long)(local / 1024));
    append(caps, sizeof caps, line);
    if (dd->is_nvidia) {
        snprintf(line, sizeof line, "cc %d.%d, warp %u", dd->cc_major, dd->cc_minor, warp);
        append(caps, sizeof caps, line);
    }
    if (dd->is_pocl) append(caps, sizeof caps, "pocl");

    choose_variant(dd, info);
    if (dd->supported[CL_VARIANT_MMA_PTX]) {
        info->caps |= MXA_CAP_COOPMAT;
        append(caps, sizeof caps, "tensor-cores (inline PTX)");
    }
    snprintf(info->capabilities, sizeof info->capabilities, "%s", caps);
    /* the tensor-core kernel runs fastest with 128-key tiles (H200: 45 ms vs 50 ms at 64) */
    info->default_bc = dd->variant == CL_VARIANT_MMA_PTX ? 128 : CL_DEFAULT_BC;
    mxa_cl_score(dd, info);
    out->probe_data = dd;
    return 1;
}

mxa_status mxa_cl_probe(mxa_probed_device *devices, int max_devices, int *count, char *reason,
                        size_t reason_size)
{
    const mxa_cl_api *cl = NULL;
    *count = 0;
    if (mxa_cl_load(&cl, reason, reason_size) != MXA_OK) return MXA_OK; /* absent, with the reason */
    cl_uint nplat = 0;
    cl_int err = cl->GetPlatformIDs(0, NULL, &nplat);
    if (err != CL_SUCCESS || nplat == 0) {
        snprintf(reason, reason_size, "no OpenCL platform (clGetPlatformIDs: %s; is an ICD installed? OCL_ICD_VENDORS=%s)",
                 err == CL_SUCCESS ? "0 platforms" : mxa_cl_error_name(err),
                 mxa_env_string("OCL_ICD_VENDORS") ? mxa_env_string("OCL_ICD_VENDORS") : "unset");
        return MXA_OK;
    }
    cl_platform_id plats[16];
    if (nplat > 16) nplat = 16;
    if ((err = cl->GetPlatformIDs(nplat, plats, NULL)) != CL_SUCCESS) {
        snprintf(reason, reason_size, "clGetPlatformIDs failed: %s", mxa_cl_error_name(err));
        return MXA_OK;
    }
    for (cl_uint p = 0; p < nplat && *count < max_devices; p++) {
        char plat_name[128] = "";
        cl->GetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof plat_name, plat_name, NULL);
        plat_name[sizeof plat_name - 1] = '\0';
        cl_uint ndev = 0;
        cl_device_id devs[MXA_MAX_DEVICES_PER_BACKEND];
        if (cl->GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MXA_MAX_DEVICES_PER_BACKEND, devs, &ndev) != CL_SUCCESS)
            continue;
        if (ndev > MXA_MAX_DEVICES_PER_BACKEND) ndev = MXA_MAX_DEVICES_PER_BACKEND;
        for (cl_uint i = 0; i < ndev && *count < max_devices; i++)
            if (mxa_cl_describe(cl, plats[p], plat_name, devs[i], &devices[*count])) (*count)++;
    }
    if (*count == 0) snprintf(reason, reason_size, "%u OpenCL platform(s) but no usable device", nplat);
    else snprintf(reason, reason_size, "%d device(s) on %u platform(s)", *count, nplat);
    return MXA_OK;
}

void mxa_cl_release(mxa_probed_device *devices, int count)
{
    for (int i = 0; i < count; i++) {
        free(devices[i].probe_data);
        devices[i].probe_data = NULL;
    }
}
