/* A minimal Vulkan application for the embedding tests (see vk_app.h). */
#include "vk_app.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KHR_COOPMAT_FEATURES ((VkStructureType)1000506000)

int vk_app_instance(vk_app *app, char *why, size_t why_size)
{
    memset(app, 0, sizeof *app);
    app->lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!app->lib) {
        snprintf(why, why_size, "no libvulkan.so.1");
        return -1;
    }
    void *sym = dlsym(app->lib, "vkGetInstanceProcAddr");
    memcpy(&app->gipa, &sym, sizeof app->gipa);
    PFN_vkEnumerateInstanceVersion version = (PFN_vkEnumerateInstanceVersion)app->gipa(NULL, "vkEnumerateInstanceVersion");
    app->f.vkCreateInstance = (PFN_vkCreateInstance)app->gipa(NULL, "vkCreateInstance");
    app->api = VK_API_VERSION_1_0;
    if (version) version(&app->api);
    if (app->api > VK_API_VERSION_1_3) app->api = VK_API_VERSION_1_3;
    if (app->api < VK_API_VERSION_1_1 || !app->f.vkCreateInstance) {
        snprintf(why, why_size, "the loader has no Vulkan 1.1");
        return -1;
    }
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "vk_app", .apiVersion = app->api};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &ai};
    if (app->f.vkCreateInstance(&ci, NULL, &app->instance) != VK_SUCCESS) {
        snprintf(why, why_size, "vkCreateInstance failed (no driver?)");
        return -1;
    }
#define VK_APP_LOAD(name) app->f.name = (PFN_##name)app->gipa(app->instance, #name);
    VK_APP_FNS(VK_APP_LOAD)
#undef VK_APP_LOAD
    uint32_t n = 0;
    app->f.vkEnumeratePhysicalDevices(app->instance, &n, NULL);
    if (n == 0) {
        snprintf(why, why_size, "no Vulkan device");
        return -1;
    }
    VkPhysicalDevice pds[16];
    if (n > 16) n = 16;
    app->f.vkEnumeratePhysicalDevices(app->instance, &n, pds);
    app->physical = pds[0];
    app->f.vkGetPhysicalDeviceProperties(app->physical, &app->props);
    if (app->props.apiVersion < app->api) app->api = app->props.apiVersion;
    return 0;
}

int vk_app_has_extension(const vk_app *app, const char *name)
{
    uint32_t n = 0;
    app->f.vkEnumerateDeviceExtensionProperties(app->physical, NULL, &n, NULL);
    VkExtensionProperties *p = calloc(n ? n : 1, sizeof *p);
    int found = 0;
    if (p && app->f.vkEnumerateDeviceExtensionProperties(app->physical, NULL, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

int vk_app_device(vk_app *app, int full, char *why, size_t why_size)
{
    uint32_t nqf = 0;
    VkQueueFamilyProperties qf[16];
    app->f.vkGetPhysicalDeviceQueueFamilyProperties(app->physical, &nqf, NULL);
    if (nqf > 16) nqf = 16;
    app->f.vkGetPhysicalDeviceQueueFamilyProperties(app->physical, &nqf, qf);
    app->family = UINT32_MAX;
    for (uint32_t i = 0; i < nqf && app->family == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) app->family = i;
    if (app->family == UINT32_MAX) {
        snprintf(why, why_size, "no compute queue");
        return -1;
    }
    app->f2 = (VkPhysicalDeviceFeatures2){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    app->ext_count = 0;
    if (full) { /* everything the device has of what mxa uses */
        const int v13 = app->api >= VK_API_VERSION_1_3;
        app->f11 = (VkPhysicalDeviceVulkan11Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
        app->f12 = (VkPhysicalDeviceVulkan12Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
        app->f13 = (VkPhysicalDeviceVulkan13Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
        app->fkhr.sType = KHR_COOPMAT_FEATURES;
        const int khr = vk_app_has_extension(app, "VK_KHR_cooperative_matrix");
        app->f2.pNext = &app->f11;
        app->f11.pNext = app->api >= VK_API_VERSION_1_2 ? &app->f12 : NULL;
        app->f12.pNext = v13 ? &app->f13 : NULL;
        if (khr) *(v13 ? &app->f13.pNext : &app->f12.pNext) = &app->fkhr;
        app->f.vkGetPhysicalDeviceFeatures2(app->physical, &app->f2); /* enable what is there */
        app->f2.features = (VkPhysicalDeviceFeatures){0};
        app->fkhr.cooperativeMatrixRobustBufferAccess = VK_FALSE;
        static const char *const wanted[] = {"VK_KHR_push_descriptor", "VK_KHR_external_memory_fd",
                                             "VK_KHR_cooperative_matrix"};
        for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
            if (vk_app_has_extension(app, wanted[i])) app->exts[app->ext_count++] = wanted[i];
    }
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = app->family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &app->f2,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci,
                              .enabledExtensionCount = app->ext_count,
                              .ppEnabledExtensionNames = app->exts};
    if (app->f.vkCreateDevice(app->physical, &dci, NULL, &app->device) != VK_SUCCESS) {
        snprintf(why, why_size, "vkCreateDevice failed");
        return -1;
    }
    app->f.vkGetDeviceQueue(app->device, app->family, 0, &app->queue);
    app->f.vkGetPhysicalDeviceMemoryProperties(app->physical, &app->mem);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = app->family};
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (app->f.vkCreateCommandPool(app->device, &pci, NULL, &app->pool) != VK_SUCCESS ||
        app->f.vkCreateFence(app->device, &fci, NULL, &app->fence) != VK_SUCCESS) {
        snprintf(why, why_size, "no command pool or fence");
        return -1;
    }
    return 0;
}

mxa_vulkan_context vk_app_context(const vk_app *app)
{
    return (mxa_vulkan_context){.instance = app->instance,
                                .physical_device = app->physical,
                                .device = app->device,
                                .queue = app->queue,
                                .queue_family = app->family,
                                .api_version = app->api,
                                .enabled_extensions = app->exts,
                                .enabled_extension_count = app->ext_count,
                                .enabled_features = &app->f2,
                                .get_instance_proc_addr = app->gipa};
}

int vk_app_buffer_create(vk_app *app, VkDeviceSize size, int host_visible, vk_app_buffer *out)
{
    memset(out, 0, sizeof *out);
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    if (app->f.vkCreateBuffer(app->device, &bci, NULL, &out->buffer) != VK_SUCCESS) return -1;
    VkMemoryRequirements req;
    app->f.vkGetBufferMemoryRequirements(app->device, out->buffer, &req);
    const VkMemoryPropertyFlags want = host_visible
                                           ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                           : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < app->mem.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (app->mem.memoryTypes[i].propertyFlags & want) == want) type = i;
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size, .memoryTypeIndex = type};
    if (type == UINT32_MAX || app->f.vkAllocateMemory(app->device, &mai, NULL, &out->memory) != VK_SUCCESS ||
        app->f.vkBindBufferMemory(app->device, out->buffer, out->memory, 0) != VK_SUCCESS)
        return -1;
    if (host_visible && app->f.vkMapMemory(app->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped) != VK_SUCCESS) return -1;
    out->size = size;
    return 0;
}

void vk_app_buffer_destroy(vk_app *app, vk_app_buffer *b)
{
    if (b->buffer) app->f.vkDestroyBuffer(app->device, b->buffer, NULL);
    if (b->memory) app->f.vkFreeMemory(app->device, b->memory, NULL);
    memset(b, 0, sizeof *b);
}

VkCommandBuffer vk_app_begin(vk_app *app)
{
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = app->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    if (app->f.vkAllocateCommandBuffers(app->device, &ai, &cmd) != VK_SUCCESS) return VK_NULL_HANDLE;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    app->f.vkBeginCommandBuffer(cmd, &bi);
    return cmd;
}

int vk_app_submit_wait(vk_app *app, VkCommandBuffer cmd)
{
    if (app->f.vkEndCommandBuffer(cmd) != VK_SUCCESS) return -1;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    VkResult r = app->f.vkQueueSubmit(app->queue, 1, &si, app->fence);
    if (r == VK_SUCCESS) r = app->f.vkWaitForFences(app->device, 1, &app->fence, VK_TRUE, UINT64_MAX);
    app->f.vkResetFences(app->device, 1, &app->fence);
    return r == VK_SUCCESS ? 0 : -1;
}

void vk_app_barrier(vk_app *app, VkCommandBuffer cmd)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_HOST_READ_BIT};
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    app->f.vkCmdPipelineBarrier(cmd, stages, stages | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

void vk_app_destroy(vk_app *app)
{
    if (app->device) {
        app->f.vkDeviceWaitIdle(app->device);
        if (app->fence) app->f.vkDestroyFence(app->device, app->fence, NULL);
        if (app->pool) app->f.vkDestroyCommandPool(app->device, app->pool, NULL);
        app->f.vkDestroyDevice(app->device, NULL);
    }
    if (app->instance) app->f.vkDestroyInstance(app->instance, NULL);
    if (app->lib) dlclose(app->lib);
    memset(app, 0, sizeof *app);
}
