/* The Vulkan device under test for the internal-kernel tests (vk_test_probe.h). */
#include <stdio.h>
#include <stdlib.h>

#include "vk_test_common.h"
#include "vk_test_probe.h"

int vkt_no_device(const char *what, const char *why)
{
    fprintf(stderr, "no Vulkan device for the %s test: %s\n", what, why);
    return vkt_required() ? -1 : 0;
}

void vkt_release(VkInstance *inst, vk_device **dev)
{
    vk_device_close(*dev);
    if (*inst) vkDestroyInstance(*inst, NULL);
    *dev = NULL;
    *inst = VK_NULL_HANDLE;
}

int vkt_probe_device(VkInstance *inst, vk_probe_data *probe, char *name, size_t name_size, char *reason, size_t reason_size)
{
    if (vk_loader_init(reason, reason_size) || vk_instance_create(inst, reason, reason_size)) return 0;
    uint32_t n = 0;
    VkPhysicalDevice pds[8];
    if (vkEnumeratePhysicalDevices(*inst, &n, NULL) != VK_SUCCESS || n == 0) {
        snprintf(reason, reason_size, "no physical device");
        return 0;
    }
    if (n > 8) n = 8;
    if (vkEnumeratePhysicalDevices(*inst, &n, pds) < 0) {
        snprintf(reason, reason_size, "vkEnumeratePhysicalDevices failed");
        return 0;
    }
    const char *id = getenv("MXA_TEST_VULKAN_DEVICE");
    int index = 0, seen = 0;
    if (!id || sscanf(id, "vulkan:%d", &index) != 1) index = 0;
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        mxa_device_info info;
        vkGetPhysicalDeviceProperties(pds[i], &p);
        if (p.apiVersion >= VK_API_VERSION_1_1 && vk_probe_physical(*inst, pds[i], probe, &info, NULL) == MXA_OK && seen++ == index) {
            snprintf(name, name_size, "%s", info.name);
            return 1;
        }
    }
    snprintf(reason, reason_size, "no Vulkan 1.1 device vulkan:%d with a compute queue", index);
    return 0;
}
