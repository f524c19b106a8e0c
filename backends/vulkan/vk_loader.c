/*
 * Loading Vulkan at run time through volk, and creating instances.
 * A missing loader or a loader without any driver is not an error of mxa:
 * the backend is simply absent, with the reason recorded for `mxa probe`.
 */
#define VOLK_IMPLEMENTATION
#include <pthread.h>
#include <stdio.h>

#include "vk_common.h"
#include "../../runtime/status.h"

static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;
static int loader_state; /* 0 untried, 1 loaded, -1 no loader */

const char *vk_result_name(VkResult r)
{
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult (other)";
    }
}

/* Loads the system Vulkan loader once per process (volk dlopens libvulkan). */
mxa_status vk_loader_init(char *reason, size_t reason_size)
{
    pthread_mutex_lock(&loader_lock);
    if (loader_state == 0) loader_state = volkInitialize() == VK_SUCCESS ? 1 : -1;
    int state = loader_state;
    pthread_mutex_unlock(&loader_lock);
    if (state < 0) {
        snprintf(reason, reason_size, "no Vulkan loader (libvulkan.so.1) could be loaded");
        return MXA_ERR_NOT_FOUND;
    }
    return MXA_OK;
}

/* Creates an instance (API 1.1 or newer, as the loader allows) and loads the
 * instance-level entry points. volk's global pointers are the loader's
 * trampolines, valid for every instance and device, so reloading them for a
 * second instance changes nothing for users of the first. */
mxa_status vk_instance_create(VkInstance *out, char *reason, size_t reason_size)
{
    mxa_status st = vk_loader_init(reason, reason_size);
    if (st) return st;
    uint32_t api = VK_API_VERSION_1_0;
    if (vkEnumerateInstanceVersion) vkEnumerateInstanceVersion(&api);
    if (api < VK_API_VERSION_1_1) {
        snprintf(reason, reason_size, "the Vulkan loader supports only API %u.%u (mxa needs 1.1)",
                 VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));
        return MXA_ERR_NOT_FOUND;
    }
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "mxa",
        .pEngineName = "mxa",
        .apiVersion = api >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : api,
    };
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance inst = VK_NULL_HANDLE;
    VkResult r = vkCreateInstance(&ci, NULL, &inst);
    if (r != VK_SUCCESS) {
        snprintf(reason, reason_size, "vkCreateInstance failed: %s (no Vulkan driver installed?)", vk_result_name(r));
        return MXA_ERR_NOT_FOUND;
    }
    pthread_mutex_lock(&loader_lock);
    volkLoadInstance(inst);
    pthread_mutex_unlock(&loader_lock);
    *out = inst;
    return MXA_OK;
}
