/*
 * A minimal Vulkan "application" for the embedding tests: its own loader handle, instance,
 * device (with the features and extensions it chooses), queue, buffers and command
 * buffers, none of mxa's internals. tests/vulkan/test_vulkan_embed.c and
 * tests/gpu/vk_record_overhead.c lend it to mxa through <mxa/mxa_vulkan.h>.
 */
#ifndef MXA_TESTS_VK_APP_H
#define MXA_TESTS_VK_APP_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "mxa/mxa_vulkan.h"

typedef struct vk_app_fns {
#define VK_APP_FN(name) PFN_##name name;
#define VK_APP_FNS(X)                                                                                                      \
    X(vkCreateInstance) X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)            \
    X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkEnumerateDeviceExtensionProperties) X(vkGetPhysicalDeviceFeatures2) \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice) X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer)   \
    X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory)       \
    X(vkMapMemory) X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer)   \
    X(vkEndCommandBuffer) X(vkResetCommandBuffer) X(vkCmdCopyBuffer) X(vkCmdPipelineBarrier) X(vkCmdWriteTimestamp)     \
    X(vkCmdResetQueryPool) X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkGetQueryPoolResults) X(vkCreateFence)         \
    X(vkDestroyFence) X(vkResetFences) X(vkQueueSubmit) X(vkWaitForFences) X(vkDeviceWaitIdle)
    VK_APP_FNS(VK_APP_FN)
#undef VK_APP_FN
} vk_app_fns;

typedef struct vk_app_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize size;
    void *mapped; /* host-visible buffers only */
} vk_app_buffer;

typedef struct vk_app {
    void *lib;
    PFN_vkGetInstanceProcAddr gipa;
    vk_app_fns f;
    uint32_t api;
    VkInstance instance;
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties props;
    uint32_t family;
    VkDevice device;
    VkQueue queue;
    VkCommandPool pool;
    VkFence fence;
    VkPhysicalDeviceMemoryProperties mem;
    /* what vkCreateDevice was given (lent to mxa as is) */
    const char *exts[8];
    uint32_t ext_count;
    VkPhysicalDeviceFeatures2 f2;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceVulkan12Features f12;
    VkPhysicalDeviceVulkan13Features f13;
    struct {
        VkStructureType sType;
        void *pNext;
        VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
    } fkhr;
} vk_app;

/* Loads the system loader and creates an instance; 0 on success, else -1 with `why` (no
 * Vulkan: the caller skips). */
int vk_app_instance(vk_app *app, char *why, size_t why_size);
/* Creates the device on the first physical device with a compute queue. `full`: every
 * feature and extension mxa can use that the device has (what an engine that wants mxa's
 * fastest path enables); 0: none of them (plain Vulkan 1.1). 0 on success. */
int vk_app_device(vk_app *app, int full, char *why, size_t why_size);
/* The context that lends the device to mxa. */
mxa_vulkan_context vk_app_context(const vk_app *app);
int vk_app_has_extension(const vk_app *app, const char *name);
/* A storage + transfer buffer; host_visible: mapped, else device-local. 0 on success. */
int vk_app_buffer_create(vk_app *app, VkDeviceSize size, int host_visible, vk_app_buffer *out);
void vk_app_buffer_destroy(vk_app *app, vk_app_buffer *b);
/* A primary command buffer from the app's pool, begun. */
VkCommandBuffer vk_app_begin(vk_app *app);
/* Ends, submits and waits for cmd; 0 on success. */
int vk_app_submit_wait(vk_app *app, VkCommandBuffer cmd);
/* A full memory barrier between transfer/compute stages (what the app owes around mxa). */
void vk_app_barrier(vk_app *app, VkCommandBuffer cmd);
void vk_app_destroy(vk_app *app);

#endif
