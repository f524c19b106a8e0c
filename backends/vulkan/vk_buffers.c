/*
 * Device buffers: device-local storage buffers, filled and read through a
 * host-visible staging buffer (or mapped directly when the device-local
 * memory is itself host-visible, as on lavapipe and unified-memory devices).
 */
#include <string.h>

#include "vk_common.h"
#include "../../runtime/status.h"

#define VK_STAGING_MAX ((VkDeviceSize)64 << 20)

static uint32_t memory_type(const vk_device *dev, uint32_t bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < dev->mem_props.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (dev->mem_props.memoryTypes[i].propertyFlags & want) == want) return i;
    return UINT32_MAX;
}

static mxa_status alloc_buffer(vk_device *dev, VkDeviceSize size, int host_visible, int exportable, vk_buffer *out)
{
    memset(out, 0, sizeof *out);
    VkExternalMemoryBufferCreateInfo ext_buf = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                                .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkExportMemoryAllocateInfo ext_mem = {.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
                                          .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .pNext = exportable ? &ext_buf : NULL,
                              .size = (size + 3) & ~(VkDeviceSize)3, /* whole words: the kernels read bytes as words */
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(dev->device, &bci, NULL, &out->buffer);
    if (r != VK_SUCCESS) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan: vkCreateBuffer(%llu bytes) failed: %s",
                                         (unsigned long long)size, vk_result_name(r));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev->device, out->buffer, &req);
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = host_visible ? memory_type(dev, req.memoryTypeBits, hv)
                                 : memory_type(dev, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (type == UINT32_MAX) type = memory_type(dev, req.memoryTypeBits, 0);
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .pNext = exportable ? &ext_mem : NULL,
                                .allocationSize = req.size,
                                .memoryTypeIndex = type};
    r = vkAllocateMemory(dev->device, &mai, NULL, &out->memory);
    if (r != VK_SUCCESS) {
        vk_buffer_free(dev, out);
        return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan: vkAllocateMemory(%llu bytes) failed: %s",
                        (unsigned long long)req.size, vk_result_name(r));
    }
    if ((r = vkBindBufferMemory(dev->device, out->buffer, out->memory, 0)) != VK_SUCCESS) {
        vk_buffer_free(dev, out);
        return mxa_fail(MXA_ERR_BACKEND, "vulkan: vkBindBufferMemory failed: %s", vk_result_name(r));
    }
    if ((dev->mem_props.memoryTypes[type].propertyFlags & hv) == hv &&
        vkMapMemory(dev->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped) != VK_SUCCESS)
        out->mapped = NULL;
    out->size = size;
    out->exportable = exportable;
    if (exportable) out->base = 0, out->alloc_size = req.size;
    return MXA_OK;
}

mxa_status vk_buffer_alloc(vk_device *dev, VkDeviceSize size, int host_visible, vk_buffer *out)
{
    return alloc_buffer(dev, size, host_visible, 0, out);
}

mxa_status vk_buffer_alloc_exportable(vk_device *dev, VkDeviceSize size, vk_buffer *out)
{
    if (!dev->external_fd)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "vulkan: exportable memory needs VK_KHR_external_memory_fd%s",
                        dev->adopted ? " enabled on the device" : ", which this driver does not have");
    return alloc_buffer(dev, size, 0, 1, out);
}

void vk_buffer_free(vk_device *dev, vk_buffer *buf)
{
    if (buf->borrowed) {
        memset(buf, 0, sizeof *buf);
        return;
    }
    if (buf->buffer) vkDestroyBuffer(dev->device, buf->buffer, NULL);
    if (buf->memory) vkFreeMemory(dev->device, buf->memory, NULL); /* unmaps implicitly */
    memset(buf, 0, sizeof *buf);
}

vk_buffer vk_buffer_view(const vk_buffer *buf, VkDeviceSize offset, VkDeviceSize size)
{
    vk_buffer v = {.buffer = buf->buffer, .base = buf->base + offset, .size = size, .borrowed = 1};
    if (buf->mapped) v.mapped = (char *)buf->mapped + offset;
    return v;
}

uint32_t vk_elem_offset(const vk_device *dev, const vk_buffer *buf, size_t offset)
{
    return vk_elem_offset_of(dev, buf, offset, 4);
}

uint32_t vk_elem_offset_of(const vk_device *dev, const vk_buffer *buf, size_t offset, size_t esize)
{
    return (uint32_t)((buf->base % dev->storage_align + offset) / esize);
}

/* A scratch buffer of at least `size` bytes in slot `slot`, kept between calls. */
mxa_status vk_scratch(vk_device *dev, int slot, VkDeviceSize size, vk_buffer **out)
{
    vk_buffer *b = &dev->scratch[slot];
    if (size < 16) size = 16;
    if (b->size < size) {
        vk_complete_inflight(dev); /* it may still use the buffer freed here */
        vk_buffer_free(dev, b);
        mxa_status st = vk_buffer_alloc(dev, size, 0, b);
        if (st) return st;
    }
    *out = b;
    return MXA_OK;
}

static mxa_status staging(vk_device *dev, VkDeviceSize size)
{
    if (dev->staging.size >= size) return MXA_OK;
    vk_buffer_free(dev, &dev->staging);
    mxa_status st = vk_buffer_alloc(dev, size, 1, &dev->staging);
    if (!st && !dev->staging.mapped) {
        vk_buffer_free(dev, &dev->staging);
        st = mxa_fail(MXA_ERR_BACKEND, "vulkan: cannot map the staging buffer");
    }
    return st;
}

/* Copies between two buffers on the queue and waits. */
static mxa_status copy_now(vk_device *dev, VkBuffer src, VkDeviceSize src_off, VkBuffer dst, VkDeviceSize dst_off,
                           VkDeviceSize size)
{
    vk_complete_inflight(dev); /* the command buffer is the one an asynchronous call may hold */
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = vkResetCommandBuffer(dev->cmd, 0);
    if (r == VK_SUCCESS) r = vkBeginCommandBuffer(dev->cmd, &bi);
    if (r == VK_SUCCESS) {
        VkBufferCopy region = {src_off, dst_off, size};
        vkCmdCopyBuffer(dev->cmd, src, dst, 1, &region);
        r = vkEndCommandBuffer(dev->cmd);
    }
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &dev->cmd};
    if (r == VK_SUCCESS) r = vkQueueSubmit(dev->queue, 1, &si, dev->fence);
    if (r == VK_SUCCESS) r = vk_wait_fence(dev);
    else vkResetFences(dev->device, 1, &dev->fence);
    if (r != VK_SUCCESS) return mxa_fail(MXA_ERR_BACKEND, "vulkan: buffer copy failed: %s", vk_result_name(r));
    return MXA_OK;
}

mxa_status vk_buffer_write(vk_device *dev, vk_buffer *buf, VkDeviceSize offset, const void *src, size_t bytes)
{
    vk_complete_inflight(dev); /* it may still read this buffer */
    if (buf->mapped) {
        memcpy((char *)buf->mapped + offset, src, bytes);
        return MXA_OK;
    }
    VkDeviceSize chunk = bytes < VK_STAGING_MAX ? bytes : VK_STAGING_MAX;
    mxa_status st = staging(dev, chunk);
    for (size_t done = 0; !st && done < bytes; done += chunk) {
        size_t n = bytes - done < chunk ? bytes - done : chunk;
        memcpy(dev->staging.mapped, (const char *)src + done, n);
        st = copy_now(dev, dev->staging.buffer, 0, buf->buffer, buf->base + offset + done, n);
    }
    return st;
}

mxa_status vk_buffer_read(vk_device *dev, const vk_buffer *buf, VkDeviceSize offset, void *dst, size_t bytes)
{
    vk_complete_inflight(dev); /* it may still write this buffer */
    if (buf->mapped) {
        memcpy(dst, (const char *)buf->mapped + offset, bytes);
        return MXA_OK;
    }
    VkDeviceSize chunk = bytes < VK_STAGING_MAX ? bytes : VK_STAGING_MAX;
    mxa_status st = staging(dev, chunk);
    for (size_t done = 0; !st && done < bytes; done += chunk) {
        size_t n = bytes - done < chunk ? bytes - done : chunk;
        st = copy_now(dev, buf->buffer, buf->base + offset + done, dev->staging.buffer, 0, n);
        if (!st) memcpy((char *)dst + done, dev->staging.mapped, n);
    }
    return st;
}
