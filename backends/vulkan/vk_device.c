/*
 * Opening a device: a fresh instance, the physical device matched by UUID, a
 * logical device with exactly the features the kernels use (enabled only
 * where the probe found extension AND feature bit), one compute queue, and
 * the pipeline cache loaded from the shared on-disk cache.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_common.h"
#include "../../runtime/env.h"
#include "../../runtime/cache.h"
#include "../../runtime/log.h"
#include "../../runtime/status.h"

#define VK_SETS_PER_BATCH 32

static mxa_status vk_check(VkResult r, const char *call)
{
    if (r == VK_SUCCESS) return MXA_OK;
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY)
        return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan: %s failed: %s", call, vk_result_name(r));
    return mxa_fail(MXA_ERR_BACKEND, "vulkan: %s failed: %s", call, vk_result_name(r));
}

static mxa_status find_physical(vk_device *dev)
{
    uint32_t n = 0;
    VkResult r = vkEnumeratePhysicalDevices(dev->instance, &n, NULL);
    if (r != VK_SUCCESS || n == 0) return mxa_fail(MXA_ERR_NOT_FOUND, "vulkan: the device is gone (no physical devices)");
    VkPhysicalDevice *pds = calloc(n, sizeof *pds);
    if (!pds) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
    vkEnumeratePhysicalDevices(dev->instance, &n, pds);
    for (uint32_t i = 0; i < n && !dev->physical; i++) {
        VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &id};
        vkGetPhysicalDeviceProperties2(pds[i], &p2);
        if (memcmp(id.deviceUUID, dev->probe->uuid, VK_UUID_SIZE) == 0) dev->physical = pds[i];
    }
    free(pds);
    if (!dev->physical) return mxa_fail(MXA_ERR_NOT_FOUND, "vulkan: the probed device is no longer present");
    return MXA_OK;
}

static mxa_status create_logical(vk_device *dev)
{
    const vk_probe_data *p = dev->probe;
    const int v12 = p->caps.api_version >= VK_API_VERSION_1_2;
    const int v13 = p->caps.api_version >= VK_API_VERSION_1_3;
    const char *exts[10];
    uint32_t next = 0;
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    mxa_vk_coopmat_features_khr khr = {.sType = MXA_VK_STYPE_COOPMAT_FEATURES_KHR};
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeatures sgc = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pex = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    void **tail = &f2.pNext;
    if (p->caps.flags & MXA_VK_F_STORAGE16) {
        s16.storageBuffer16BitAccess = VK_TRUE;
        *tail = &s16;
        tail = &s16.pNext;
    }
    if (p->caps.flags & (MXA_VK_F_FP16 | MXA_VK_F_INT8)) {
        f16.shaderFloat16 = (p->caps.flags & MXA_VK_F_FP16) ? VK_TRUE : VK_FALSE;
        f16.shaderInt8 = (p->caps.flags & MXA_VK_F_INT8) ? VK_TRUE : VK_FALSE;
        *tail = &f16;
        tail = &f16.pNext;
        if (!v12) exts[next++] = VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
    }
    if (p->caps.flags & MXA_VK_F_COOPMAT_KHR) {
        khr.cooperativeMatrix = VK_TRUE;
        *tail = &khr;
        tail = &khr.pNext;
        exts[next++] = MXA_VK_KHR_COOPMAT_NAME;
    }
    if (p->caps.flags & MXA_VK_F_INT_DOT) {
        dot.shaderIntegerDotProduct = VK_TRUE;
        *tail = &dot;
        tail = &dot.pNext;
        if (!v13) exts[next++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
    }
    if (p->caps.flags & MXA_VK_F_SUBGROUP_CTRL) { /* kernels that need 32 lanes ask for them */
        sgc.subgroupSizeControl = VK_TRUE;
        sgc.computeFullSubgroups = VK_TRUE;
        *tail = &sgc;
        tail = &sgc.pNext;
        if (!v13) exts[next++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
    }
    if (p->has_push_descriptor) exts[next++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    if (p->has_external_fd) exts[next++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
    if ((p->caps.flags & MXA_VK_F_PIPELINE_STATS) && mxa_log_enabled(MXA_LOG_DEBUG) && vkGetPipelineExecutableStatisticsKHR) {
        /* only when someone reads them, and only if the loader has the entry point */
        pex.pipelineExecutableInfo = VK_TRUE;
        *tail = &pex;
        exts[next++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
        dev->pipeline_stats = 1;
    }
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = p->queue_family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &f2,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci,
                              .enabledExtensionCount = next,
                              .ppEnabledExtensionNames = exts};
    mxa_status st = vk_check(vkCreateDevice(dev->physical, &dci, NULL, &dev->device), "vkCreateDevice");
    if (st) return st;
    vkGetDeviceQueue(dev->device, p->queue_family, 0, &dev->queue);
    return MXA_OK;
}

void vk_cache_key(const vk_probe_data *p, char *key, size_t size)
{
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", p->cache_uuid[i]);
    snprintf(key, size, "vendor=%04x device=%04x driver=%08x cache=%s shaders=%016llx", p->caps.vendor_id, p->caps.device_id,
             p->caps.driver_version, uuid, (unsigned long long)vk_shader_hash());
}

/* Loads the VkPipelineCache; a missing or rejected cache file just means an empty cache. */
static mxa_status create_cache(vk_device *dev)
{
    void *data = NULL;
    size_t size = 0;
    vk_cache_key(dev->probe, dev->cache_key, sizeof dev->cache_key);
    if (mxa_cache_load("vulkan-pipeline", dev->cache_key, &data, &size) != MXA_OK) size = 0;
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = size,
                                    .pInitialData = size ? data : NULL};
    VkResult r = vkCreatePipelineCache(dev->device, &ci, NULL, &dev->cache);
    if (r != VK_SUCCESS && size) { /* a driver may reject data it does not like: start empty */
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = vkCreatePipelineCache(dev->device, &ci, NULL, &dev->cache);
    }
    free(data);
    mxa_clear_error();
    return vk_check(r, "vkCreatePipelineCache");
}

static void save_cache(vk_device *dev)
{
    size_t size = 0;
    if (!dev->cache || !dev->cache_dirty) return;
    if (vkGetPipelineCacheData(dev->device, dev->cache, &size, NULL) != VK_SUCCESS || size == 0) return;
    void *data = malloc(size);
    if (!data) return;
    if (vkGetPipelineCacheData(dev->device, dev->cache, &size, data) == VK_SUCCESS)
        (void)mxa_cache_store("vulkan-pipeline", dev->cache_key, data, size);
    free(data);
}

static mxa_status create_layouts(vk_device *dev)
{
    VkDescriptorSetLayoutBinding b[VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < VK_MAX_BINDINGS; i++)
        b[i] = (VkDescriptorSetLayoutBinding){i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo lci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = dev->push_descriptors ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0,
        .bindingCount = VK_MAX_BINDINGS,
        .pBindings = b};
    mxa_status st = vk_check(vkCreateDescriptorSetLayout(dev->device, &lci, NULL, &dev->set_layout),
                             "vkCreateDescriptorSetLayout");
    if (st) return st;
    VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
    VkPipelineLayoutCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &dev->set_layout,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &range};
    if ((st = vk_check(vkCreatePipelineLayout(dev->device, &pci, NULL, &dev->layout), "vkCreatePipelineLayout")))
        return st;
    if (dev->push_descriptors) return MXA_OK; /* no sets to allocate */
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_SETS_PER_BATCH * VK_MAX_BINDINGS};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = VK_SETS_PER_BATCH,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &ps};
    return vk_check(vkCreateDescriptorPool(dev->device, &dpi, NULL, &dev->desc_pool), "vkCreateDescriptorPool");
}

int vk_wait_spins(uint32_t device_type, const char *setting)
{
    if (setting && !strcmp(setting, "spin")) return 1;
    if (setting && !strcmp(setting, "block")) return 0;
    if (setting) mxa_env_warn_once("MXA_VULKAN_WAIT", "MXA_VULKAN_WAIT=%s: expected spin or block; ignored", setting);
    return device_type != VK_PHYSICAL_DEVICE_TYPE_CPU;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause(); /* the spin-wait hint: leaves the core's resources to its sibling */
#endif
}

VkResult vk_wait_fence(vk_device *dev)
{
    VkResult r;
    if (dev->spin_wait)
        while ((r = vkGetFenceStatus(dev->device, dev->fence)) == VK_NOT_READY) cpu_relax();
    else
        r = vkWaitForFences(dev->device, 1, &dev->fence, VK_TRUE, UINT64_MAX);
    vkResetFences(dev->device, 1, &dev->fence);
    return r;
}

static mxa_status create_commands(vk_device *dev)
{
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = dev->probe->queue_family};
    mxa_status st = vk_check(vkCreateCommandPool(dev->device, &pci, NULL, &dev->pool), "vkCreateCommandPool");
    if (st) return st;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = dev->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    if ((st = vk_check(vkAllocateCommandBuffers(dev->device, &ai, &dev->cmd), "vkAllocateCommandBuffers"))) return st;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((st = vk_check(vkCreateFence(dev->device, &fci, NULL, &dev->fence), "vkCreateFence"))) return st;
    dev->spin_wait = vk_wait_spins(dev->probe->caps.device_type, mxa_env_string("MXA_VULKAN_WAIT"));
    if (dev->probe->timestamp_bits > 0) {
        VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                     .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                     .queryCount = VK_MAX_TIMESTAMPS};
        if (vkCreateQueryPool(dev->device, &qci, NULL, &dev->timestamps) != VK_SUCCESS)
            dev->timestamps = VK_NULL_HANDLE; /* timing is optional */
    }
    return MXA_OK;
}

static void pick_memory_types(vk_device *dev)
{
    vkGetPhysicalDeviceMemoryProperties(dev->physical, &dev->mem_props);
    dev->memory_device_local = dev->memory_host_visible = UINT32_MAX;
    for (uint32_t i = 0; i < dev->mem_props.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = dev->mem_props.memoryTypes[i].propertyFlags;
        if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && dev->memory_device_local == UINT32_MAX)
            dev->memory_device_local = i;
        if ((f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) &&
            dev->memory_host_visible == UINT32_MAX)
            dev->memory_host_visible = i;
    }
}

/* What an open device (mxa's or the application's) needs of its own: entry points of the
 * extensions it enabled, a command buffer and fence, descriptor and pipeline layouts, the
 * pipeline cache (the application's if it lent one), memory types. */
mxa_status vk_device_setup(vk_device *dev, VkPipelineCache lent_cache)
{
    mxa_status st;
    dev->storage_align = dev->probe->storage_align ? dev->probe->storage_align : 4;
    if (dev->push_descriptors) {
        PFN_vkVoidFunction f = vkGetDeviceProcAddr(dev->device, "vkCmdPushDescriptorSetKHR");
        memcpy(&dev->push_descriptor_set, &f, sizeof f);
        if (!dev->push_descriptor_set) dev->push_descriptors = 0; /* the pool path then */
    }
    if (dev->external_fd) {
        PFN_vkVoidFunction f = vkGetDeviceProcAddr(dev->device, "vkGetMemoryFdKHR");
        memcpy(&dev->get_memory_fd, &f, sizeof f);
        if (!dev->get_memory_fd) dev->external_fd = 0;
    }
    if ((st = create_commands(dev)) || (st = create_layouts(dev))) return st;
    if (lent_cache) {
        dev->cache = lent_cache;
        dev->cache_lent = 1;
    } else if ((st = create_cache(dev))) {
        return st;
    }
    pick_memory_types(dev);
    if (dev->memory_host_visible == UINT32_MAX)
        return mxa_fail(MXA_ERR_BACKEND, "vulkan: the device has no host-visible coherent memory");
    if (dev->memory_device_local == UINT32_MAX) dev->memory_device_local = dev->memory_host_visible;
    return MXA_OK;
}

mxa_status vk_device_open(const vk_probe_data *probe, vk_device **out)
{
    char reason[MXA_REASON_LEN];
    mxa_status st;
    *out = NULL;
    vk_device *dev = calloc(1, sizeof *dev);
    if (!dev) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan: out of memory");
    dev->probe = probe;
    if ((st = vk_instance_create(&dev->instance, reason, sizeof reason))) {
        st = mxa_fail(st, "vulkan: %s", reason);
        goto out;
    }
    dev->push_descriptors = probe->has_push_descriptor;
    dev->external_fd = probe->has_external_fd;
    if ((st = find_physical(dev)) || (st = create_logical(dev)) || (st = vk_device_setup(dev, VK_NULL_HANDLE))) goto out;
    *out = dev;
out:
    if (st) vk_device_close(dev);
    return st;
}

void vk_device_close(vk_device *dev)
{
    if (!dev) return;
    if (dev->device) {
        vk_complete_inflight(dev);
        if (!dev->adopted) vkDeviceWaitIdle(dev->device); /* never on the application's device */
        if (!dev->cache_lent) save_cache(dev);
        for (int i = 0; i < 16; i++) vk_buffer_free(dev, &dev->scratch[i]);
        vk_buffer_free(dev, &dev->staging);
        vk_buffer_free(dev, &dev->record_workspace);
        vk_pipelines_destroy(dev);
        if (dev->cache && !dev->cache_lent) vkDestroyPipelineCache(dev->device, dev->cache, NULL);
        if (dev->desc_pool) vkDestroyDescriptorPool(dev->device, dev->desc_pool, NULL);
        if (dev->layout) vkDestroyPipelineLayout(dev->device, dev->layout, NULL);
        if (dev->set_layout) vkDestroyDescriptorSetLayout(dev->device, dev->set_layout, NULL);
        if (dev->timestamps) vkDestroyQueryPool(dev->device, dev->timestamps, NULL);
        if (dev->fence) vkDestroyFence(dev->device, dev->fence, NULL);
        if (dev->pool) vkDestroyCommandPool(dev->device, dev->pool, NULL);
        if (!dev->adopted) vkDestroyDevice(dev->device, NULL);
    }
    if (dev->instance && !dev->adopted) vkDestroyInstance(dev->instance, NULL);
    free(dev);
}
