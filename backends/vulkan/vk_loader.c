/*
 * Loading Vulkan at run time through volk, and creating instances.
 * A missing loader or a loader without any driver is not an error of mxa:
 * the backend is simply absent, with the reason recorded for `mxa probe`.
 *
 * Before anything is dlopened, a driver manifest must exist where the Vulkan
 * loader looks for one (a loader without drivers finds no device, and loading
 * drivers can pull in an LLVM that clashes with another driver's). The loader
 * library is ours to dlopen (MXA_VULKAN_LIBRARY names one explicitly and skips
 * the manifest check), so a library without vkGetInstanceProcAddr, or one
 * whose vkGetInstanceProcAddr gives NULL for a function mxa calls, makes the
 * backend absent instead of crashing in volk.
 */
#define VOLK_IMPLEMENTATION
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "vk_common.h"
#include "../../runtime/env.h"
#include "../../runtime/log.h"
#include "../../runtime/status.h"
#include "../../runtime/sysprobe.h"

/* Every entry point mxa calls unconditionally; optional ones (cooperative
 * matrix, pipeline statistics, vkEnumerateInstanceVersion) are checked where used. */
#define VK_REQUIRED(X)                                                                                              \
    X(vkAllocateCommandBuffers) X(vkAllocateDescriptorSets) X(vkAllocateMemory) X(vkBeginCommandBuffer)             \
    X(vkBindBufferMemory) X(vkCmdBindDescriptorSets) X(vkCmdBindPipeline) X(vkCmdCopyBuffer) X(vkCmdDispatch)        \
    X(vkCmdUpdateBuffer) X(vkGetDeviceProcAddr)                                                                      \
    X(vkCmdFillBuffer) X(vkCmdPipelineBarrier) X(vkCmdPushConstants) X(vkCmdResetQueryPool) X(vkCmdWriteTimestamp)   \
    X(vkCreateBuffer) X(vkCreateCommandPool) X(vkCreateComputePipelines) X(vkCreateDescriptorPool)                   \
    X(vkCreateDescriptorSetLayout) X(vkCreateDevice) X(vkCreateFence) X(vkCreatePipelineCache)                       \
    X(vkCreatePipelineLayout) X(vkCreateQueryPool) X(vkCreateShaderModule) X(vkDestroyBuffer)                        \
    X(vkDestroyCommandPool) X(vkDestroyDescriptorPool) X(vkDestroyDescriptorSetLayout) X(vkDestroyDevice)            \
    X(vkDestroyFence) X(vkDestroyInstance) X(vkDestroyPipeline) X(vkDestroyPipelineCache) X(vkDestroyPipelineLayout) \
    X(vkDestroyQueryPool) X(vkDestroyShaderModule) X(vkDeviceWaitIdle) X(vkEndCommandBuffer)                         \
    X(vkEnumerateDeviceExtensionProperties) X(vkEnumeratePhysicalDevices) X(vkFreeMemory) X(vkGetFenceStatus)       \
    X(vkGetBufferMemoryRequirements) X(vkGetDeviceQueue) X(vkGetPhysicalDeviceFeatures2)                             \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceProperties) X(vkGetPhysicalDeviceProperties2)        \
    X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkGetPipelineCacheData) X(vkGetQueryPoolResults) X(vkMapMemory)    \
    X(vkQueueSubmit) X(vkResetCommandBuffer) X(vkResetDescriptorPool) X(vkResetFences) X(vkUpdateDescriptorSets)     \
    X(vkWaitForFences)

/* Loader state, written under loader_lock only. The instance-level pointers
 * are loaded once, from the first instance: they are the loader's trampolines,
 * valid for every instance and device, and reloading them while another
 * thread calls through them was a data race. */
static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;
static int loader_state;    /* 0 not loaded, 1 loaded (a failure is retried: the checks are cheap) */
static int instance_state;  /* 0 not loaded, 1 loaded, -1 an entry point is missing (instance_reason) */
static char loader_path[160], instance_reason[MXA_REASON_LEN];

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

/* Whether `list` (':'-separated manifest files or directories of *.json) names a manifest. */
static int list_has_manifest(const char *list)
{
    return mxa_path_list_has_file(list, NULL, ".json", 1);
}

int vk_driver_manifest_found(const char *root, char *reason, size_t reason_size)
{
    static const char *const fixed[] = {"/etc/xdg", "/usr/local/etc", "/etc", "/usr/local/share", "/usr/share"};
    const char *only = mxa_env_string("VK_DRIVER_FILES");
    const char *only_name = "VK_DRIVER_FILES";
    if (!only) only = mxa_env_string("VK_ICD_FILENAMES"), only_name = "VK_ICD_FILENAMES";
    if (list_has_manifest(mxa_env_string("VK_ADD_DRIVER_FILES"))) return 1;
    if (only) { /* replaces the search, as in the Vulkan loader */
        if (list_has_manifest(only)) return 1;
        snprintf(reason, reason_size, "no Vulkan driver manifest (vulkan/icd.d/*.json) found: %s=%s names none", only_name,
                 only);
        return 0;
    }
    const char *home = mxa_env_string("HOME");
    const char *vars[] = {"XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME", "XDG_DATA_DIRS"};
    const char *home_defaults[] = {".config", NULL, ".local/share", NULL};
    for (int i = 0; i < 4; i++) {
        char dflt[1024];
        const char *list = mxa_env_string(vars[i]);
        if (!list && home_defaults[i] && home && snprintf(dflt, sizeof dflt, "%s/%s", home, home_defaults[i]) < (int)sizeof dflt)
            list = dflt;
        if (mxa_path_list_has_file(list, "vulkan/icd.d", ".json", 0)) return 1;
    }
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        char dir[1024];
        if (snprintf(dir, sizeof dir, "%s%s/vulkan/icd.d", root, fixed[i]) < (int)sizeof dir && mxa_dir_has_file(dir, ".json"))
            return 1;
    }
    snprintf(reason, reason_size, "no Vulkan driver manifest (vulkan/icd.d/*.json) found");
    return 0;
}

/* dlopens the loader and hands volk its vkGetInstanceProcAddr; under loader_lock. */
static mxa_status load_library(char *reason, size_t reason_size)
{
    const char *named = mxa_env_string("MXA_VULKAN_LIBRARY");
    const char *const names[] = {named ? named : "libvulkan.so.1", named ? NULL : "libvulkan.so", NULL};
    if (!named && !vk_driver_manifest_found("", reason, reason_size)) return MXA_ERR_NOT_FOUND;
    char why[200];
    void *lib = mxa_dlopen_first(names, loader_path, sizeof loader_path, why, sizeof why);
    if (!lib) {
        snprintf(reason, reason_size, "no Vulkan loader (%s) could be loaded: %s", names[0], why);
        return MXA_ERR_NOT_FOUND;
    }
    void *sym = dlsym(lib, "vkGetInstanceProcAddr");
    PFN_vkGetInstanceProcAddr gipa = NULL;
    memcpy(&gipa, &sym, sizeof gipa); /* POSIX: object -> function pointer */
    if (!gipa) {
        snprintf(reason, reason_size, "%s lacks vkGetInstanceProcAddr (not a Vulkan loader)", loader_path);
        dlclose(lib);
        return MXA_ERR_NOT_FOUND;
    }
    volkInitializeCustom(gipa);
    if (!vkCreateInstance) {
        snprintf(reason, reason_size, "%s: vkGetInstanceProcAddr gives no vkCreateInstance", loader_path);
        return MXA_ERR_NOT_FOUND; /* volk's pointers stay set: the library is kept, never called */
    }
    MXA_LOG_D("vulkan: loaded %s", loader_path);
    return MXA_OK;
}

/* Loads the Vulkan loader once per process. */
mxa_status vk_loader_init(char *reason, size_t reason_size)
{
    mxa_status st = MXA_OK;
    pthread_mutex_lock(&loader_lock);
    if (loader_state == 0 && (st = load_library(reason, reason_size)) == MXA_OK) loader_state = 1;
    pthread_mutex_unlock(&loader_lock);
    if (st) MXA_LOG_I("vulkan: %s", reason);
    return st;
}

/* Loads volk's instance-level pointers from the first instance and checks
 * them; under loader_lock. */
static void load_instance_functions(VkInstance inst)
{
    volkLoadInstance(inst);
    const char *missing = NULL;
#define VK_CHECK_MISSING(f) if (!missing && !f) missing = #f;
    VK_REQUIRED(VK_CHECK_MISSING)
#undef VK_CHECK_MISSING
    instance_state = missing ? -1 : 1;
    if (missing)
        snprintf(instance_reason, sizeof instance_reason, "%s: vkGetInstanceProcAddr gives no %s", loader_path, missing);
}

mxa_status vk_loader_adopt_instance(VkInstance inst, char *reason, size_t reason_size)
{
    mxa_status st = vk_loader_init(reason, reason_size);
    if (st) return st;
    pthread_mutex_lock(&loader_lock);
    if (instance_state == 0) load_instance_functions(inst); /* trampolines: valid for every instance */
    const int ok = instance_state > 0;
    if (!ok) snprintf(reason, reason_size, "%s", instance_reason);
    pthread_mutex_unlock(&loader_lock);
    return ok ? MXA_OK : MXA_ERR_NOT_FOUND;
}

const char *vk_loader_path(void)
{
    return loader_path;
}

/* Creates an instance (API 1.1 or newer, as the loader allows); the first one
 * also loads and checks the instance-level entry points. */
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
    if (instance_state == 0) load_instance_functions(inst);
    const int ok = instance_state > 0;
    if (!ok) snprintf(reason, reason_size, "%s", instance_reason);
    pthread_mutex_unlock(&loader_lock);
    if (!ok) {
        if (vkDestroyInstance) vkDestroyInstance(inst, NULL);
        MXA_LOG_I("vulkan: %s", reason);
        return MXA_ERR_NOT_FOUND;
    }
    *out = inst;
    return MXA_OK;
}
