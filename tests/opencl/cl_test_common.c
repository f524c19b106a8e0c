/* Helpers for the OpenCL backend tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_test_common.h"

const char *const clt_variants[2] = {"cl-mma-ptx", "cl-tiled"};

int clt_open(const char *variant, mxa_runtime **rt, mxa_device **dev)
{
    *rt = NULL;
    *dev = NULL;
    if (variant) setenv("MXA_KERNEL", variant, 1);
    else unsetenv("MXA_KERNEL");
    if (mxa_runtime_create(NULL, rt) != MXA_OK) return 0;
    const char *id = getenv("MXA_CL_TEST_DEVICE") ? getenv("MXA_CL_TEST_DEVICE") : "opencl:0";
    mxa_device_info info;
    if (mxa_device_open(*rt, id, dev) != MXA_OK || mxa_device_info_of(*dev, &info) != MXA_OK) {
        printf("# %s: not available (%s)\n", id, mxa_last_error_message());
        clt_close(*rt, *dev);
        *rt = NULL;
        *dev = NULL;
        return 0;
    }
    if (variant && strcmp(info.variant, variant) != 0) {
        printf("# %s (%s): cannot run %s, skipped\n", id, info.name, variant);
        clt_close(*rt, *dev);
        *rt = NULL;
        *dev = NULL;
        return 0;
    }
    printf("# %s: %s, variant %s (%s)\n", id, info.name, info.variant, info.variant_reason);
    return 1;
}

void clt_close(mxa_runtime *rt, mxa_device *dev)
{
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    unsetenv("MXA_KERNEL");
}
