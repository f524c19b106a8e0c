/*
 * The HIP backend (AMD Instinct and Radeon through ROCm), loaded at run time:
 * probe, devices, buffers and quantization. Attention is in hip_attention.c,
 * kernels in hip_kernels.c, the loader in hip_loader.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/log.h"
#include "../../runtime/status.h"
#include "../../runtime/text.h"
#include "hip_device.h"

/* "6.2.41134" from HIP_VERSION's major * 10^7 + minor * 10^5 + patch. */
static void version_text(int v, char *buf, size_t size)
{
    snprintf(buf, size, "%d.%d.%d", v / 10000000, (v / 100000) % 100, v % 100000);
}

static int attribute(const mxa_hip_api *api, int attr, int device, int fallback)
{
    int v = 0;
    return api->hipDeviceGetAttribute(&v, attr, device) == MXA_HIP_SUCCESS ? v : fallback;
}

/* The device's gcnArchName from hipDeviceProp_t (see hip_loader.c for why this way). */
static mxa_status arch_name(const mxa_hip_api *api, int device, char *out, size_t size)
{
    mxa_status st = MXA_OK;
    char *prop = calloc(1, MXA_HIP_PROP_BUFFER);
    if (!prop) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "hip: out of memory");
    hipError_t e = api->hipGetDeviceProperties(prop, device);
    const char *name = prop + api->arch_offset;
    if (e != MXA_HIP_SUCCESS) st = mxa_hip_fail(api, e, "hipGetDeviceProperties");
    else if (!memchr(name, '\0', MXA_HIP_ARCH_LEN) || strncmp(name, "gfx", 3) != 0)
        st = mxa_fail(MXA_ERR_UNSUPPORTED, "hip: device %d reports no readable gcnArchName", device);
    else
        snprintf(out, size, "%s", name);
    free(prop);
    return st;
}

mxa_status mxa_hip_probe_device(mxa_hip_api *api, int ordinal, mxa_probed_device *pd)
{
    mxa_device_info *info = &pd->info;
    char arch_text[MXA_HIP_ARCH_LEN], rt[32];
    memset(pd, 0, sizeof *pd);
    mxa_status st = arch_name(api, ordinal, arch_text, sizeof arch_text);
    mxa_hip_probe *data = NULL;
    if (st) return st;
    if (!(data = calloc(1, sizeof *data))) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "hip: out of memory");
    if ((st = mxa_hip_arch_parse(arch_text, &data->arch))) {
        free(data);
        return st;
    }
    if (api->hipDeviceGetName(info->name, sizeof info->name, ordinal) != MXA_HIP_SUCCESS || !info->name[0])
        snprintf(info->name, sizeof info->name, "AMD GPU %d", ordinal);
    info->name[sizeof info->name - 1] = '\0';
    snprintf(info->vendor, sizeof info->vendor, "AMD");
    version_text(api->runtime_version, rt, sizeof rt);
    snprintf(info->driver, sizeof info->driver, "HIP %s (driver %d), hiprtc %d.%d", rt, api->driver_version,
             api->rtc_major, api->rtc_minor);
    size_t mem = 0;
    if (api->hipDeviceTotalMem(&mem, ordinal) == MXA_HIP_SUCCESS) info->memory_bytes = mem;
    info->compute_units = (uint32_t)attribute(api, MXA_HIP_ATTR_MULTIPROCESSOR_COUNT, ordinal, 0);
    const int wave = attribute(api, MXA_HIP_ATTR_WARP_SIZE, ordinal, 64);
    info->subgroup_min = info->subgroup_max = (uint32_t)wave;
    info->shared_memory_bytes = (uint64_t)attribute(api, MXA_HIP_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, ordinal, 0);
    info->caps = data->arch.caps | MXA_CAP_TIMESTAMPS;
    mxa_hip_arch_describe(&data->arch, wave, info->capabilities, sizeof info->capabilities);
    mxa_hip_choose(&data->arch, wave, &data->choice);
    snprintf(info->variant, sizeof info->variant, "%s", data->choice.name);
    snprintf(info->variant_reason, sizeof info->variant_reason, "%s", data->choice.reason);
    info->default_bc = data->choice.default_bc;
    mxa_hip_score(info);
    mxa_hip_api_retain(api);
    data->api = api;
    data->ordinal = ordinal;
    pd->probe_data = data;
    return MXA_OK;
}

static mxa_status hip_probe(mxa_probed_device *devices, int max_devices, int *count, char *reason,
                            size_t reason_size)
{
    mxa_hip_api *api = NULL;
    int n = 0, found = 0;
    *count = 0;
    mxa_status st = mxa_hip_api_load(&api, reason, reason_size);
    if (st) return st == MXA_ERR_OUT_OF_MEMORY ? st : MXA_OK; /* absent, with the reason */
    hipError_t e = api->hipInit(0);
    if (e == MXA_HIP_ERROR_NO_DEVICE || (e == MXA_HIP_SUCCESS && (e = api->hipGetDeviceCount(&n)) ==
                                                                      MXA_HIP_ERROR_NO_DEVICE)) {
        snprintf(reason, reason_size, "no AMD GPU: the HIP runtime (%s) reports no device", api->hip_path);
        goto out;
    }
    if (e != MXA_HIP_SUCCESS) {
        snprintf(reason, reason_size, "the HIP runtime (%s) failed to start: %s (%d)", api->hip_path,
                 api->hipGetErrorString(e) ? api->hipGetErrorString(e) : "?", e);
        goto out;
    }
    if (n <= 0) {
        snprintf(reason, reason_size, "no AMD GPU: the HIP runtime (%s) reports %d devices", api->hip_path, n);
        goto out;
    }
    if (n > MXA_MAX_DEVICES_PER_BACKEND) { /* a broken runtime said 2^31-1: probing each would never end */
        MXA_LOG_W("hip: the HIP runtime (%s) reports %d devices; probing only the first %d", api->hip_path, n,
                  MXA_MAX_DEVICES_PER_BACKEND);
        n = MXA_MAX_DEVICES_PER_BACKEND;
    }
    for (int i = 0; i < n && found < max_devices; i++) {
        st = mxa_hip_probe_device(api, i, &devices[found]);
        if (st == MXA_OK) {
            found++;
            continue;
        }
        if (st != MXA_ERR_UNSUPPORTED) break;
        snprintf(reason, reason_size, "%s", mxa_last_error_message()); /* skipped, and why */
        mxa_text_sanitize(reason);
        MXA_LOG_W("%s", reason);
        st = MXA_OK;
    }
    if (st) {
        for (int i = 0; i < found; i++) {
            mxa_hip_api_release(((mxa_hip_probe *)devices[i].probe_data)->api);
            free(devices[i].probe_data);
        }
        found = 0;
        goto out;
    }
    if (found > 0) snprintf(reason, reason_size, "%d AMD GPU(s) through %s", found, api->hip_path);
out:
    *count = found;
    mxa_hip_api_release(api);
    return st;
}

static void hip_release(mxa_probed_device *devices, int count)
{
    for (int i = 0; i < count; i++) {
        mxa_hip_probe *data = devices[i].probe_data;
        if (!data) continue;
        mxa_hip_api_release(data->api);
        free(data);
        devices[i].probe_data = NULL;
    }
}

/* Every call selects the device first (a handle may move between threads) and gives
 * the thread its previous device back after: an application's thread is not moved. */
mxa_status mxa_hip_enter(mxa_hip_device *dev, int *previous)
{
    if (dev->api->hipGetDevice(previous) != MXA_HIP_SUCCESS) *previous = -1;
    hipError_t e = *previous == dev->ordinal ? MXA_HIP_SUCCESS : dev->api->hipSetDevice(dev->ordinal);
    return e == MXA_HIP_SUCCESS ? MXA_OK : mxa_hip_fail(dev->api, e, "hipSetDevice");
}

void mxa_hip_leave(mxa_hip_device *dev, int previous)
{
    if (previous >= 0 && previous != dev->ordinal) dev->api->hipSetDevice(previous);
}

/* Frees what open created, then gives the thread its `previous` device back. Waits for
 * the device's last call first: its scratch and modules may still be in use on an
 * application's stream. */
static void device_free(mxa_hip_device *dev, int previous)
{
    mxa_hip_api *api = dev->api;
    if (dev->done_recorded) api->hipEventSynchronize(dev->done);
    mxa_hip_free(dev, dev->scratch);
    if (dev->start) api->hipEventDestroy(dev->start);
    if (dev->done) api->hipEventDestroy(dev->done);
    if (dev->stream) api->hipStreamDestroy(dev->stream);
    for (int i = 0; i < dev->kernel_count; i++) api->hipModuleUnload(dev->kernels[i].module);
    mxa_hip_leave(dev, previous);
    free(dev->kernels);
    free(dev);
    mxa_hip_api_release(api);
}

static mxa_status hip_open(const mxa_probed_device *device, void **impl)
{
    const mxa_hip_probe *data = device->probe_data;
    mxa_hip_device *dev = calloc(1, sizeof *dev);
    if (!dev) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "hip: out of memory");
    mxa_hip_api_retain(data->api);
    dev->api = data->api;
    dev->ordinal = data->ordinal;
    dev->arch = data->arch;
    dev->choice = data->choice;
    int previous = -1;
    mxa_status st = mxa_hip_enter(dev, &previous);
    const mxa_hip_api *api = dev->api;
    hipError_t e;
    if (!st && (e = api->hipStreamCreate(&dev->stream)) != MXA_HIP_SUCCESS) st = mxa_hip_fail(api, e, "hipStreamCreate");
    if (!st && (e = api->hipEventCreate(&dev->start)) != MXA_HIP_SUCCESS) st = mxa_hip_fail(api, e, "hipEventCreate");
    if (!st && (e = api->hipEventCreate(&dev->done)) != MXA_HIP_SUCCESS) st = mxa_hip_fail(api, e, "hipEventCreate");
    if (st) {
        device_free(dev, previous);
        return st;
    }
    mxa_hip_leave(dev, previous);
    *impl = dev;
    return MXA_OK;
}

/* Closing completes a submitted call (its host outputs are written) and waits for the last one. */
static void hip_close(void *impl)
{
    mxa_hip_device *dev = impl;
    if (!dev) return;
    int previous = -1;
    if (mxa_hip_enter(dev, &previous) != MXA_OK) mxa_clear_error();
    mxa_hip_complete_pending(dev);
    device_free(dev, previous);
}

static mxa_status hip_buffer_create(void *impl, size_t bytes, void **buffer)
{
    mxa_hip_device *dev = impl;
    mxa_hip_buffer *buf = calloc(1, sizeof *buf);
    if (!buf) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "hip: out of memory");
    int previous;
    mxa_status st = mxa_hip_enter(dev, &previous);
    if (!st) {
        mxa_hip_complete_pending(dev);
        st = mxa_hip_alloc(dev, bytes, &buf->ptr);
        mxa_hip_leave(dev, previous);
    }
    if (st) {
        free(buf);
        return st;
    }
    *buffer = buf;
    return MXA_OK;
}

static void hip_buffer_destroy(void *impl, void *buffer)
{
    mxa_hip_device *dev = impl;
    mxa_hip_buffer *buf = buffer;
    if (!buf) return;
    int previous;
    if (mxa_hip_enter(dev, &previous) == MXA_OK) {
        mxa_hip_complete_pending(dev);
        if (!buf->wrapped) mxa_hip_free(dev, buf->ptr);
        mxa_hip_leave(dev, previous);
    }
    free(buf);
}

static mxa_status hip_buffer_upload(void *impl, void *buffer, size_t offset, const void *src, size_t bytes)
{
    mxa_hip_device *dev = impl;
    int previous;
    mxa_status st = mxa_hip_enter(dev, &previous);
    if (st) return st;
    mxa_hip_complete_pending(dev);
    hipError_t e = dev->api->hipMemcpyHtoD(mxa_hip_buffer_at(buffer, offset), src, bytes);
    mxa_hip_leave(dev, previous);
    return e == MXA_HIP_SUCCESS ? MXA_OK : mxa_hip_fail(dev->api, e, "hipMemcpyHtoD");
}

static mxa_status hip_buffer_download(void *impl, void *buffer, size_t offset, void *dst, size_t bytes)
{
    mxa_hip_device *dev = impl;
    int previous;
    mxa_status st = mxa_hip_enter(dev, &previous);
    if (st) return st;
    mxa_hip_complete_pending(dev);
    hipError_t e = dev->api->hipMemcpyDtoH(dst, mxa_hip_buffer_at(buffer, offset), bytes);
    mxa_hip_leave(dev, previous);
    return e == MXA_HIP_SUCCESS ? MXA_OK : mxa_hip_fail(dev->api, e, "hipMemcpyDtoH");
}

mxa_status mxa_hip_buffer_wrap_handle(mxa_hip_device *dev, void *ptr, size_t size, void **handle)
{
    const mxa_hip_api *api = dev->api;
    if (api->hipPointerGetAttribute) { /* else the runtime cannot tell, and neither can we */
        int ordinal = -1;
        void *start = NULL;
        size_t range = 0;
        hipError_t e = api->hipPointerGetAttribute(&ordinal, MXA_HIP_POINTER_DEVICE_ORDINAL, ptr);
        if (e != MXA_HIP_SUCCESS)
            return mxa_fail(MXA_ERR_INVALID_ARGUMENT,
                            "mxa_hip_buffer_wrap: %p is not device memory the HIP runtime knows (hipPointerGetAttribute: %s (%d))",
                            ptr, api->hipGetErrorString(e) ? api->hipGetErrorString(e) : "?", e);
        if (ordinal != dev->ordinal)
            return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_hip_buffer_wrap: %p is memory of HIP device %d, not of device %d",
                            ptr, ordinal, dev->ordinal);
        if (api->hipPointerGetAttribute(&start, MXA_HIP_POINTER_RANGE_START, ptr) == MXA_HIP_SUCCESS &&
            api->hipPointerGetAttribute(&range, MXA_HIP_POINTER_RANGE_SIZE, ptr) == MXA_HIP_SUCCESS && start &&
            ((size_t)((char *)ptr - (char *)start) > range || size > range - (size_t)((char *)ptr - (char *)start)))
            return mxa_fail(MXA_ERR_INVALID_ARGUMENT,
                            "mxa_hip_buffer_wrap: %zu bytes at %p run past the end of its %zu-byte allocation at %p", size,
                            ptr, range, start);
    }
    mxa_hip_buffer *buf = calloc(1, sizeof *buf);
    if (!buf) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_hip_buffer_wrap: out of memory");
    buf->ptr = ptr;
    buf->wrapped = 1;
    *handle = buf;
    return MXA_OK;
}

static mxa_status hip_quantize(void *impl, const mxa_array *x, mxa_rule rule, uint8_t *codes, uint8_t *scales)
{
    mxa_hip_device *dev = impl;
    const mxa_hip_kernel *prep = NULL;
    void *src = NULL, *owned = NULL, *dcodes = NULL, *dscales = NULL;
    const long long rows = x->b * x->h * x->n;
    const int nblocks = (int)((x->d + 31) / 32);
    const long long blocks = rows * nblocks;
    int previous;
    mxa_status st = mxa_hip_enter(dev, &previous);
    if (st) return st;
    mxa_hip_complete_pending(dev);
    if ((st = mxa_hip_prep_kernels(dev, &prep))) goto out;
    if (blocks / MXA_HIP_QUANT_THREADS + 1 > 0x7fffffffLL) {
        st = mxa_fail(MXA_ERR_UNSUPPORTED, "hip: %lld blocks is more than one launch covers", blocks);
        goto out;
    }
    if ((st = mxa_hip_array_ptr(dev, x, &src, &owned)) || (st = mxa_hip_alloc(dev, (size_t)blocks * 16, &dcodes)) ||
        (st = mxa_hip_alloc(dev, (size_t)blocks, &dscales)))
        goto out;
    mxa_hip_quant_args args = {(unsigned long long)(uintptr_t)src, (unsigned long long)(uintptr_t)dcodes,
                               (unsigned long long)(uintptr_t)dscales, rows, (int)x->d, nblocks,
                               rule.kind == MXA_RULE_CEIL, rule.q};
    const unsigned groups = (unsigned)((blocks + MXA_HIP_QUANT_THREADS - 1) / MXA_HIP_QUANT_THREADS);
    if ((st = mxa_hip_launch(dev, NULL, prep->fn_a, "mxa_quantize_rows", groups, 1, 1, MXA_HIP_QUANT_THREADS, &args)))
        goto out;
    hipError_t e = dev->api->hipMemcpyDtoH(codes, dcodes, (size_t)blocks * 16);
    if (e == MXA_HIP_SUCCESS) e = dev->api->hipMemcpyDtoH(scales, dscales, (size_t)blocks);
    if (e != MXA_HIP_SUCCESS) st = mxa_hip_fail(dev->api, e, "hipMemcpyDtoH (quantized codes)");
out:
    mxa_hip_free(dev, owned);
    mxa_hip_free(dev, dcodes);
    mxa_hip_free(dev, dscales);
    mxa_hip_leave(dev, previous);
    return st;
}

const mxa_backend_ops mxa_hip_backend = {
    .name = "hip",
    .extras = MXA_EXTRA_BIAS | MXA_EXTRA_MASK | MXA_EXTRA_KEY_LENGTHS | MXA_EXTRA_CAUSAL_TOP_LEFT | MXA_EXTRA_OUT_HALF |
              MXA_EXTRA_LSE_BUFFER | MXA_EXTRA_KV,
    .probe = hip_probe,
    .release = hip_release,
    .open = hip_open,
    .close = hip_close,
    .buffer_create = hip_buffer_create,
    .buffer_destroy = hip_buffer_destroy,
    .buffer_upload = hip_buffer_upload,
    .buffer_download = hip_buffer_download,
    .quantize = hip_quantize,
    .attention = mxa_hip_attention,
    .attention_submit = mxa_hip_attention_submit,
    .attention_wait = mxa_hip_attention_wait,
};
