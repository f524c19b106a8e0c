/* Shared by the Vulkan tests of internal kernels: the device under test, probed as the backend probes it. */
#ifndef MXA_TESTS_VK_TEST_PROBE_H
#define MXA_TESTS_VK_TEST_PROBE_H

#include <stddef.h>

#include "backends/vulkan/vk_common.h"

/* The device $MXA_TEST_VULKAN_DEVICE = vulkan:N names (the N-th Vulkan 1.1 device that probes,
 * as the backend counts them; default 0): 1 with *inst created, *probe filled and the device's
 * name in `name`; 0 with why in `reason` (*inst may still need destroying). */
int vkt_probe_device(VkInstance *inst, vk_probe_data *probe, char *name, size_t name_size, char *reason, size_t reason_size);

/* A test setup's answer when `what` cannot run for `why`: it says so, and fails (-1) where
 * MXA_TEST_REQUIRE_VULKAN=1 asks for a device, else skips (0). */
int vkt_no_device(const char *what, const char *why);

/* A test teardown: closes *dev (if opened) and destroys *inst (if created), both then reset. */
void vkt_release(VkInstance *inst, vk_device **dev);

#endif
