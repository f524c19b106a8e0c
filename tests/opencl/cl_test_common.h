/* Helpers for the OpenCL backend tests: open an OpenCL device running a given variant. */
#ifndef MXA_TESTS_CL_TEST_COMMON_H
#define MXA_TESTS_CL_TEST_COMMON_H

#include "mxa/mxa.h"

/* The attention variants of the OpenCL backend, best first. */
extern const char *const clt_variants[2];

/* Creates a runtime with MXA_KERNEL=variant (NULL: unset) and opens the OpenCL
 * device MXA_CL_TEST_DEVICE (default opencl:0). Returns 1 when the device runs
 * `variant`; 0 (and nothing open) when the backend is absent or the device
 * cannot run it, after printing why. */
int clt_open(const char *variant, mxa_runtime **rt, mxa_device **dev);

void clt_close(mxa_runtime *rt, mxa_device *dev);

#endif
