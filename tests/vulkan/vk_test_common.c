/* Opening the Vulkan device under test once per test program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_test_common.h"

static mxa_runtime *g_rt;
static mxa_device *g_dev;

int vkt_required(void)
{
    const char *e = getenv("MXA_TEST_REQUIRE_VULKAN");
    return e && strcmp(e, "1") == 0;
}

int vkt_open(mxa_runtime **rt, mxa_device **dev)
{
    if (!g_rt && mxa_runtime_create(NULL, &g_rt) != MXA_OK) return 0;
    if (!g_dev) {
        const char *id = getenv("MXA_TEST_VULKAN_DEVICE");
        if (mxa_device_open(g_rt, id ? id : "vulkan:0", &g_dev) != MXA_OK) {
            fprintf(stderr, "vulkan device unavailable: %s\n", mxa_last_error_message());
            return 0;
        }
        mxa_device_info info;
        mxa_device_info_of(g_dev, &info);
        fprintf(stderr, "testing %s: %s [%s] variant %s (%s)\n", info.id, info.name, info.capabilities,
                info.variant, info.variant_reason);
    }
    *rt = g_rt;
    *dev = g_dev;
    return 1;
}

void vkt_close(void)
{
    mxa_device_close(g_dev);
    mxa_runtime_destroy(g_rt);
    g_dev = NULL;
    g_rt = NULL;
}
