/* Shared by the Vulkan tests: open the Vulkan device under test, or skip. */
#ifndef MXA_TESTS_VK_TEST_COMMON_H
#define MXA_TESTS_VK_TEST_COMMON_H

#include "mxa/mxa.h"

/* The runtime and device under test ($MXA_TEST_VULKAN_DEVICE, default vulkan:0),
 * opened once. Returns 0 (and prints why) when the Vulkan backend is absent:
 * the tests then skip, unless MXA_TEST_REQUIRE_VULKAN=1 makes that a failure. */
int vkt_open(mxa_runtime **rt, mxa_device **dev);
void vkt_close(void);
int vkt_required(void);

#endif
