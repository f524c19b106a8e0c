/*
 * A test double of libvulkan.so.1 (the loader), chosen by environment
 * variables read at each call:
 *   FAKE_VK_NULL=1         vkGetInstanceProcAddr returns NULL for every name
 *   FAKE_VK_OMIT=name      ... and for this one name only
 * One CPU-type Vulkan 1.2 device whose name, driver name and driver info are
 * garbage bytes (control characters, invalid UTF-8); vkCreateDevice fails.
 * Entry points it does not implement come back as a function that aborts:
 * non-NULL, as from a real loader, and fatal if mxa ever calls one.
 * Built a second time with FAKE_NO_GIPA: no vkGetInstanceProcAddr at all.
 */
#define VK_NO_PROTOTYPES
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan_core.h>

#define EXPORT __attribute__((visibility("default")))

#ifdef FAKE_NO_GIPA
EXPORT int fake_vulkan_without_gipa;
int fake_vulkan_without_gipa;
#else

/* A name with a tab, an escape sequence, a lone continuation byte, a truncated
 * 2-byte sequence, an overlong '/', a valid "é" and DEL. */
static const char garbage_name[] = "Fake\tGPU \x1b[31m\x80\xc3 \xc0\xaf caf\xc3\xa9\x7f";

static int dummy_instance, dummy_physical;

static VKAPI_ATTR void VKAPI_CALL unimplemented(void)
{
    abort();
}

static VKAPI_ATTR VkResult VKAPI_CALL create_instance(const VkInstanceCreateInfo *ci, const VkAllocationCallbacks *a,
                                                      VkInstance *out)
{
    (void)ci, (void)a;
    *out = (VkInstance)(void *)&dummy_instance;
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL destroy_instance(VkInstance inst, const VkAllocationCallbacks *a)
{
    (void)inst, (void)a;
}

static VKAPI_ATTR VkResult VKAPI_CALL enumerate_version(uint32_t *v)
{
    *v = VK_API_VERSION_1_2;
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL enumerate_physical(VkInstance inst, uint32_t *n, VkPhysicalDevice *out)
{
    (void)inst;
    if (out && *n >= 1) out[0] = (VkPhysicalDevice)(void *)&dummy_physical;
    *n = 1;
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL properties(VkPhysicalDevice pd, VkPhysicalDeviceProperties *p)
{
    (void)pd;
    memset(p, 0, sizeof *p);
    p->apiVersion = VK_API_VERSION_1_2;
    p->vendorID = 0x1234;
    p->deviceType = VK_PHYSICAL_DEVICE_TYPE_CPU;
    memcpy(p->deviceName, garbage_name, sizeof garbage_name);
    p->limits.maxComputeSharedMemorySize = 32768;
}

static VKAPI_ATTR void VKAPI_CALL properties2(VkPhysicalDevice pd, VkPhysicalDeviceProperties2 *p2)
{
    properties(pd, &p2->properties);
    for (VkBaseOutStructure *s = p2->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES) {
            VkPhysicalDeviceDriverProperties *d = (VkPhysicalDeviceDriverProperties *)s;
            memcpy(d->driverName, garbage_name, sizeof garbage_name);
            memcpy(d->driverInfo, garbage_name, sizeof garbage_name);
        }
}

static VKAPI_ATTR void VKAPI_CALL features2(VkPhysicalDevice pd, VkPhysicalDeviceFeatures2 *f)
{
    (void)pd, (void)f; /* nothing supported: every chained structure stays zero */
}

static VKAPI_ATTR VkResult VKAPI_CALL device_extensions(VkPhysicalDevice pd, const char *layer, uint32_t *n,
                                                        VkExtensionProperties *p)
{
    (void)pd, (void)layer, (void)p;
    *n = 0;
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL queue_families(VkPhysicalDevice pd, uint32_t *n, VkQueueFamilyProperties *q)
{
    (void)pd;
    if (q && *n >= 1) q[0] = (VkQueueFamilyProperties){.queueFlags = VK_QUEUE_COMPUTE_BIT, .queueCount = 1};
    *n = 1;
}

static VKAPI_ATTR void VKAPI_CALL memory_properties(VkPhysicalDevice pd, VkPhysicalDeviceMemoryProperties *m)
{
    (void)pd;
    memset(m, 0, sizeof *m);
    m->memoryHeapCount = 1;
    m->memoryHeaps[0] = (VkMemoryHeap){1u << 30, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT};
    m->memoryTypeCount = 1;
    m->memoryTypes[0] = (VkMemoryType){VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0};
}

static VKAPI_ATTR VkResult VKAPI_CALL create_device(VkPhysicalDevice pd, const VkDeviceCreateInfo *ci,
                                                    const VkAllocationCallbacks *a, VkDevice *out)
{
    (void)pd, (void)ci, (void)a;
    *out = VK_NULL_HANDLE;
    return VK_ERROR_INITIALIZATION_FAILED;
}

EXPORT PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance inst, const char *name);

PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance inst, const char *name)
{
    static const struct {
        const char *name;
        PFN_vkVoidFunction fn;
    } table[] = {
        {"vkCreateInstance", (PFN_vkVoidFunction)create_instance},
        {"vkDestroyInstance", (PFN_vkVoidFunction)destroy_instance},
        {"vkEnumerateInstanceVersion", (PFN_vkVoidFunction)enumerate_version},
        {"vkEnumeratePhysicalDevices", (PFN_vkVoidFunction)enumerate_physical},
        {"vkGetPhysicalDeviceProperties", (PFN_vkVoidFunction)properties},
        {"vkGetPhysicalDeviceProperties2", (PFN_vkVoidFunction)properties2},
        {"vkGetPhysicalDeviceFeatures2", (PFN_vkVoidFunction)features2},
        {"vkEnumerateDeviceExtensionProperties", (PFN_vkVoidFunction)device_extensions},
        {"vkGetPhysicalDeviceQueueFamilyProperties", (PFN_vkVoidFunction)queue_families},
        {"vkGetPhysicalDeviceMemoryProperties", (PFN_vkVoidFunction)memory_properties},
        {"vkCreateDevice", (PFN_vkVoidFunction)create_device},
    };
    (void)inst;
    const char *omit = getenv("FAKE_VK_OMIT");
    if (getenv("FAKE_VK_NULL") || (omit && strcmp(omit, name) == 0)) return NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0) return table[i].fn;
    /* the instance-less global functions a loader must answer are all in the table */
    return inst ? (PFN_vkVoidFunction)unimplemented : NULL;
}
#endif
