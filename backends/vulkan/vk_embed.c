/*
 * The embedding API (include/mxa/mxa_vulkan.h): an mxa device over an application's
 * VkDevice, buffers over its VkBuffers, attention recorded into its command buffers,
 * exportable memory. The features counted are only those the application enabled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_common.h"
#include "mxa/mxa_vulkan.h"
#include "../../runtime/handles.h"
#include "../../runtime/runtime_internal.h"
#include "../../runtime/status.h"

static int listed(const mxa_vulkan_context *ctx, const char *name)
{
    for (uint32_t i = 0; i < ctx->enabled_extension_count; i++)
        if (ctx->enabled_extensions && ctx->enabled_extensions[i] && strcmp(ctx->enabled_extensions[i], name) == 0) return 1;
    return 0;
}

/* The MXA_VK_F_* features of the application's pNext chain (a feature of an extension
 * counts when the extension is enabled or the API version has it in core). */
static void enabled_of(const mxa_vulkan_context *ctx, vk_enabled *en)
{
    const uint32_t api = ctx->api_version ? ctx->api_version : VK_API_VERSION_1_1;
    const int v12 = api >= VK_API_VERSION_1_2, v13 = api >= VK_API_VERSION_1_3;
    const int e_f16i8 = v12 || listed(ctx, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    const int e_s8 = v12 || listed(ctx, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    const int e_dot = v13 || listed(ctx, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    const int e_sgc = v13 || listed(ctx, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    const int e_khr = listed(ctx, MXA_VK_KHR_COOPMAT_NAME);
    uint32_t f = 0;
    for (const VkBaseInStructure *s = ctx->enabled_features; s; s = s->pNext) {
        switch ((int)s->sType) {
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES: {
            const VkPhysicalDeviceVulkan11Features *x = (const void *)s;
            if (x->storageBuffer16BitAccess) f |= MXA_VK_F_STORAGE16;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
            const VkPhysicalDeviceVulkan12Features *x = (const void *)s;
            if (x->shaderFloat16) f |= MXA_VK_F_FP16;
            if (x->shaderInt8) f |= MXA_VK_F_INT8;
            if (x->storageBuffer8BitAccess) f |= MXA_VK_F_STORAGE8;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES: {
            const VkPhysicalDeviceVulkan13Features *x = (const void *)s;
            if (x->subgroupSizeControl && x->computeFullSubgroups) f |= MXA_VK_F_SUBGROUP_CTRL;
            if (x->shaderIntegerDotProduct) f |= MXA_VK_F_INT_DOT;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES: {
            const VkPhysicalDevice16BitStorageFeatures *x = (const void *)s;
            if (x->storageBuffer16BitAccess) f |= MXA_VK_F_STORAGE16;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES: {
            const VkPhysicalDeviceShaderFloat16Int8Features *x = (const void *)s;
            if (e_f16i8 && x->shaderFloat16) f |= MXA_VK_F_FP16;
            if (e_f16i8 && x->shaderInt8) f |= MXA_VK_F_INT8;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES: {
            const VkPhysicalDevice8BitStorageFeatures *x = (const void *)s;
            if (e_s8 && x->storageBuffer8BitAccess) f |= MXA_VK_F_STORAGE8;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES: {
            const VkPhysicalDeviceShaderIntegerDotProductFeatures *x = (const void *)s;
            if (e_dot && x->shaderIntegerDotProduct) f |= MXA_VK_F_INT_DOT;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES: {
            const VkPhysicalDeviceSubgroupSizeControlFeatures *x = (const void *)s;
            if (e_sgc && x->subgroupSizeControl && x->computeFullSubgroups) f |= MXA_VK_F_SUBGROUP_CTRL;
            break;
        }
        case MXA_VK_STYPE_COOPMAT_FEATURES_KHR: {
            const mxa_vk_coopmat_features_khr *x = (const void *)s;
            if (e_khr && x->cooperativeMatrix) f |= MXA_VK_F_COOPMAT_KHR;
            break;
        }
        default: break;
        }
    }
    memset(en, 0, sizeof *en);
    en->flags = f;
    en->push_descriptor = listed(ctx, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    en->external_fd = listed(ctx, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
    en->queue_family = ctx->queue_family;
}

mxa_status mxa_vulkan_device_create(mxa_runtime *rt, const mxa_vulkan_context *ctx, mxa_device **out)
{
    if (!rt || !ctx || !out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_device_create: NULL argument");
    *out = NULL;
    if (!ctx->instance || !ctx->physical_device || !ctx->device || !ctx->queue)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_device_create: instance, physical_device, device and queue are required");
    if (ctx->api_version && ctx->api_version < VK_API_VERSION_1_1)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "mxa_vulkan_device_create: mxa's kernels need Vulkan 1.1 (the instance has %u.%u)",
                        VK_API_VERSION_MAJOR(ctx->api_version), VK_API_VERSION_MINOR(ctx->api_version));
    char reason[MXA_REASON_LEN];
    if (vk_loader_adopt_instance(ctx->instance, reason, sizeof reason))
        return mxa_fail(MXA_ERR_NOT_FOUND, "mxa_vulkan_device_create: %s", reason);
    if (ctx->get_instance_proc_addr && ctx->get_instance_proc_addr != vkGetInstanceProcAddr &&
        ctx->get_instance_proc_addr(ctx->instance, "vkCreateDevice") != vkGetInstanceProcAddr(ctx->instance, "vkCreateDevice"))
        return mxa_fail(MXA_ERR_UNSUPPORTED,
                        "mxa_vulkan_device_create: the application's vkGetInstanceProcAddr is not the loader mxa loaded (%s)",
                        vk_loader_path());
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(ctx->physical_device, &props);
    if (props.apiVersion < VK_API_VERSION_1_1)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "mxa_vulkan_device_create: %s supports only Vulkan %u.%u (mxa needs 1.1)",
                        props.deviceName, VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion));
    vk_enabled en;
    enabled_of(ctx, &en);
    mxa_probed_device *probed = calloc(1, sizeof *probed);
    vk_probe_data *data = calloc(1, sizeof *data);
    vk_device *dev = calloc(1, sizeof *dev);
    mxa_status st = MXA_OK;
    if (!probed || !data || !dev) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_vulkan_device_create: out of memory");
        goto fail;
    }
    if ((st = vk_probe_physical(ctx->instance, ctx->physical_device, data, &probed->info, &en))) goto fail;
    if (data->queue_family != ctx->queue_family) {
        st = mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_device_create: queue family %u has no compute", ctx->queue_family);
        goto fail;
    }
    probed->probe_data = data;
    dev->probe = data;
    dev->adopted = 1;
    dev->instance = ctx->instance;
    dev->physical = ctx->physical_device;
    dev->device = ctx->device;
    dev->queue = ctx->queue;
    dev->push_descriptors = data->has_push_descriptor;
    dev->external_fd = data->has_external_fd;
    if ((st = vk_device_setup(dev, ctx->pipeline_cache))) goto fail_dev;
    if ((data->caps.flags & MXA_VK_F_COOPMAT_KHR) && vk_khr_fragment_map_on(data, dev)) {
        const size_t len = strlen(probed->info.capabilities);
        snprintf(probed->info.capabilities + len, sizeof probed->info.capabilities - len, " quad-layout");
    }
    vk_describe_variant(data, &probed->info);
    snprintf(probed->info.id, sizeof probed->info.id, "vulkan:app");
    return mxa_device_adopt(rt, &mxa_vulkan_backend, probed, dev, out); /* owns probed and dev from here */
fail_dev:
    probed->probe_data = NULL;
    vk_device_close(dev);
    dev = NULL;
fail:
    free(dev);
    free(data);
    free(probed);
    return st;
}

/* A live buffer of an open Vulkan device, or NULL after one error line. */
static vk_buffer *vulkan_buffer(const mxa_buffer *buf, const char *fn, mxa_device **dev)
{
    if (!buf || !mxa_handle_live(buf, MXA_HANDLE_BUFFER)) {
        mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: not a live buffer", fn);
        return NULL;
    }
    if (!buf->dev || buf->dev->ops != &mxa_vulkan_backend) {
        mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: not a buffer of an open Vulkan device", fn);
        return NULL;
    }
    if (dev) *dev = buf->dev;
    return (vk_buffer *)buf->handle;
}

static mxa_status vulkan_device(mxa_device *dev, const char *fn)
{
    return mxa_device_check_backend(dev, &mxa_vulkan_backend, "a Vulkan", fn);
}

mxa_status mxa_vulkan_buffer_wrap(mxa_device *dev, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size, mxa_buffer **out)
{
    mxa_status st = vulkan_device(dev, "mxa_vulkan_buffer_wrap");
    if (st) return st;
    if (!out || !buffer) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_buffer_wrap: NULL argument");
    *out = NULL;
    if (size == 0 || offset % 4 || size > SIZE_MAX)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_buffer_wrap: size %llu must be > 0 and offset %llu a multiple of 4",
                        (unsigned long long)size, (unsigned long long)offset);
    vk_buffer *b = calloc(1, sizeof *b);
    if (!b) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_vulkan_buffer_wrap: out of memory");
    *b = (vk_buffer){.buffer = buffer, .base = offset, .size = size, .borrowed = 1};
    return mxa_buffer_adopt(dev, b, (size_t)size, out);
}

mxa_status mxa_vulkan_buffer_handle(const mxa_buffer *buf, VkBuffer *buffer, VkDeviceSize *offset)
{
    const vk_buffer *b = vulkan_buffer(buf, "mxa_vulkan_buffer_handle", NULL);
    if (!b) return MXA_ERR_INVALID_ARGUMENT;
    if (buffer) *buffer = b->buffer;
    if (offset) *offset = b->base;
    return MXA_OK;
}

mxa_status mxa_vulkan_workspace_size(mxa_device *dev, const mxa_attention_desc *desc, const mxa_tensor *q,
                                     const mxa_tensor *k, const mxa_tensor *v, const mxa_tensor *o, const mxa_tensor *lse,
                                     size_t *bytes)
{
    mxa_status st = vulkan_device(dev, "mxa_vulkan_workspace_size");
    if (st) return st;
    if (!bytes) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_workspace_size: NULL argument");
    mxa_attention_call call;
    if ((st = mxa_attention_call_device(dev, "mxa_vulkan_workspace_size", desc, q, k, v, (mxa_tensor *)o, (mxa_tensor *)lse,
                                        &call)))
        return st;
    return vk_attention_workspace((const vk_device *)dev->impl, &call, bytes);
}

mxa_status mxa_vulkan_workspace_reserve(mxa_device *dev, size_t bytes)
{
    mxa_status st = vulkan_device(dev, "mxa_vulkan_workspace_reserve");
    if (st) return st;
    if (bytes == 0) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_workspace_reserve: size is 0");
    vk_device *vd = dev->impl;
    pthread_mutex_lock(&dev->lock);
    if (vd->record_workspace.size < bytes) {
        vk_buffer_free(vd, &vd->record_workspace);
        st = vk_buffer_alloc(vd, bytes, 0, &vd->record_workspace);
    }
    pthread_mutex_unlock(&dev->lock);
    return st;
}

mxa_status mxa_vulkan_attention_record(mxa_device *dev, VkCommandBuffer cmd, const mxa_attention_desc *desc,
                                       const mxa_tensor *q, const mxa_tensor *k, const mxa_tensor *v, mxa_tensor *o,
                                       mxa_tensor *lse, mxa_buffer *workspace)
{
    static const char fn[] = "mxa_vulkan_attention_record";
    mxa_status st = vulkan_device(dev, fn);
    if (st) return st;
    if (!cmd) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: the command buffer is NULL", fn);
    mxa_attention_call call;
    if ((st = mxa_attention_call_device(dev, fn, desc, q, k, v, o, lse, &call))) return st;
    if (call.desc.format == MXA_FORMAT_NVFP4)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "%s: the NVFP4 baseline runs on the \"cpu\" device only", fn);
    vk_device *vd = dev->impl;
    const vk_buffer *ws = &vd->record_workspace;
    if (workspace) {
        mxa_device *owner = NULL;
        if (!(ws = vulkan_buffer(workspace, fn, &owner))) return MXA_ERR_INVALID_ARGUMENT;
        if (owner != dev) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: the workspace belongs to another device", fn);
    }
    pthread_mutex_lock(&dev->lock);
    st = vk_attention_record(vd, cmd, &call, ws->buffer ? ws : NULL, (size_t)ws->size);
    pthread_mutex_unlock(&dev->lock);
    return st;
}

mxa_status mxa_vulkan_buffer_create_exportable(mxa_device *dev, size_t bytes, mxa_buffer **out)
{
    mxa_status st = vulkan_device(dev, "mxa_vulkan_buffer_create_exportable");
    if (st) return st;
    if (!out || bytes == 0) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_buffer_create_exportable: NULL output or size 0");
    *out = NULL;
    vk_buffer *b = calloc(1, sizeof *b);
    if (!b) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_vulkan_buffer_create_exportable: out of memory");
    pthread_mutex_lock(&dev->lock);
    st = vk_buffer_alloc_exportable(dev->impl, bytes, b);
    pthread_mutex_unlock(&dev->lock);
    if (st) {
        free(b);
        return st;
    }
    return mxa_buffer_adopt(dev, b, bytes, out);
}

mxa_status mxa_vulkan_buffer_export_fd(mxa_buffer *buf, int *fd, uint64_t *allocation_size)
{
    mxa_device *dev = NULL;
    vk_buffer *b = vulkan_buffer(buf, "mxa_vulkan_buffer_export_fd", &dev);
    if (!b) return MXA_ERR_INVALID_ARGUMENT;
    if (!fd) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_buffer_export_fd: fd is NULL");
    if (!b->exportable)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_buffer_export_fd: the buffer was not made by mxa_vulkan_buffer_create_exportable");
    vk_device *vd = dev->impl;
    VkMemoryGetFdInfoKHR gi = {.sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
                               .memory = b->memory,
                               .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkResult r = vd->get_memory_fd(vd->device, &gi, fd);
    if (r != VK_SUCCESS) return mxa_fail(MXA_ERR_BACKEND, "mxa_vulkan_buffer_export_fd: vkGetMemoryFdKHR failed: %s", vk_result_name(r));
    if (allocation_size) *allocation_size = b->alloc_size;
    return MXA_OK;
}
