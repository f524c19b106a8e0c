/*
 * The Vulkan backend's vtable: probe (absent with a reason when there is no
 * loader, driver or device), open/close, buffers, quantize, attention.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_common.h"
#include "../../runtime/status.h"

static mxa_status vkb_probe(mxa_probed_device *devices, int max_devices, int *count, char *reason, size_t reason_size)
{
    VkInstance inst = VK_NULL_HANDLE;
    VkPhysicalDevice *pds = NULL;
    mxa_status st = MXA_OK;
    *count = 0;
    if (vk_instance_create(&inst, reason, reason_size) != MXA_OK) return MXA_OK; /* absent: reason is set */
    uint32_t n = 0;
    VkResult r = vkEnumeratePhysicalDevices(inst, &n, NULL);
    if (r != VK_SUCCESS || n == 0) {
        snprintf(reason, reason_size, "the Vulkan loader found no device (%s)", r == VK_SUCCESS ? "no driver" : vk_result_name(r));
        goto out;
    }
    pds = calloc(n, sizeof *pds);
    if (!pds) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan probe: out of memory");
        goto out;
    }
    if (vkEnumeratePhysicalDevices(inst, &n, pds) < 0) n = 0;
    for (uint32_t i = 0; i < n && *count < max_devices; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(pds[i], &p);
        if (p.apiVersion < VK_API_VERSION_1_1) continue; /* the kernels need Vulkan 1.1 */
        vk_probe_data *data = calloc(1, sizeof *data);
        if (!data) {
            st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan probe: out of memory");
            goto out;
        }
        mxa_probed_device *dev = &devices[*count];
        memset(dev, 0, sizeof *dev);
        if (vk_probe_physical(inst, pds[i], data, &dev->info, NULL) != MXA_OK) {
            free(data);
            continue;
        }
        dev->probe_data = data;
        (*count)++;
    }
    if (*count == 0) snprintf(reason, reason_size, "no Vulkan 1.1 device with a compute queue");
    else snprintf(reason, reason_size, "%d device(s)", *count);
out:
    if (st) {
        for (int i = 0; i < *count; i++) free(devices[i].probe_data);
        *count = 0;
    }
    free(pds);
    vkDestroyInstance(inst, NULL);
    return st;
}

static void vkb_release(mxa_probed_device *devices, int count)
{
    for (int i = 0; i < count; i++) {
        free(devices[i].probe_data);
        devices[i].probe_data = NULL;
    }
}

static mxa_status vkb_open(const mxa_probed_device *device, void **impl)
{
    return vk_device_open((const vk_probe_data *)device->probe_data, (vk_device **)impl);
}

static void vkb_close(void *impl)
{
    vk_device_close((vk_device *)impl);
}

static mxa_status vkb_buffer_create(void *impl, size_t bytes, void **buffer)
{
    vk_buffer *b = calloc(1, sizeof *b);
    if (!b) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
    mxa_status st = vk_buffer_alloc((vk_device *)impl, bytes, 0, b);
    if (st) {
        free(b);
        return st;
    }
    *buffer = b;
    return MXA_OK;
}

static void vkb_buffer_destroy(void *impl, void *buffer)
{
    if (!buffer) return;
    vk_buffer_free((vk_device *)impl, (vk_buffer *)buffer);
    free(buffer);
}

static mxa_status vkb_upload(void *impl, void *buffer, size_t offset, const void *src, size_t bytes)
{
    return vk_buffer_write((vk_device *)impl, (vk_buffer *)buffer, offset, src, bytes);
}

static mxa_status vkb_download(void *impl, void *buffer, size_t offset, void *dst, size_t bytes)
{
    return vk_buffer_read((vk_device *)impl, (const vk_buffer *)buffer, offset, dst, bytes);
}

static mxa_status vkb_quantize(void *impl, const mxa_array *x, mxa_rule rule, uint8_t *codes, uint8_t *scales)
{
    return vk_quantize((vk_device *)impl, x, rule, codes, scales);
}

static mxa_status vkb_quantize_mxfp8(void *impl, const mxa_array *x, uint8_t *codes, uint8_t *scales)
{
    return vk_quantize_mxfp8((vk_device *)impl, x, codes, scales);
}

static mxa_status vkb_attention(void *impl, const mxa_attention_call *call, mxa_attention_info *info)
{
    return vk_attention((vk_device *)impl, call, info);
}

static mxa_status vkb_attention_submit(void *impl, const mxa_attention_call *call, mxa_pending *pending)
{
    return vk_attention_submit((vk_device *)impl, call, pending);
}

static void vkb_attention_wait(void *impl, mxa_pending *pending)
{
    vk_device *dev = impl;
    if (dev->inflight.pending == pending) vk_complete_inflight(dev);
}

const mxa_backend_ops mxa_vulkan_backend = {
    .name = "vulkan",
    .extras = MXA_EXTRA_BIAS | MXA_EXTRA_MASK | MXA_EXTRA_KEY_LENGTHS | MXA_EXTRA_CAUSAL_TOP_LEFT | MXA_EXTRA_OUT_HALF |
              MXA_EXTRA_LSE_BUFFER | MXA_EXTRA_KV | MXA_EXTRA_PV_MXFP8 | MXA_EXTRA_IN_HALF,
    .probe = vkb_probe,
    .release = vkb_release,
    .open = vkb_open,
    .close = vkb_close,
    .buffer_create = vkb_buffer_create,
    .buffer_destroy = vkb_buffer_destroy,
    .buffer_upload = vkb_upload,
    .buffer_download = vkb_download,
    .quantize = vkb_quantize,
    .attention = vkb_attention,
    .attention_submit = vkb_attention_submit,
    .attention_wait = vkb_attention_wait,
    .quantize_mxfp8 = vkb_quantize_mxfp8,
};
