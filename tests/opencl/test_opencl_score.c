/*
 * The OpenCL score "auto" ranks by (mxa_cl_score, runtime/speed.h) on fake device
 * records: the H200's cl-mma-ptx estimates the 154.4 TFLOP/s it measured there, below
 * Vulkan's 244.4 on the same GPU (issue 18; the old constant 120 beat Vulkan's 100); an
 * OpenCL CPU device (PoCL) stays below the native CPU backend; no variant, far below.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "backends/opencl/cl_internal.h"
#include "runtime/speed.h"

static mxa_device_info scored(cl_device_type type, const char *variant, uint32_t units)
{
    cl_device_desc dd;
    mxa_device_info info;
    memset(&dd, 0, sizeof dd);
    memset(&info, 0, sizeof info);
    dd.type = type;
    snprintf(info.variant, sizeof info.variant, "%s", variant);
    info.compute_units = units;
    mxa_cl_score(&dd, &info);
    return info;
}

static void test_scores(void **state)
{
    (void)state;
    for (int v = 0; v < CL_VARIANT_COUNT; v++) assert_true(mxa_speed_reference_rate(mxa_cl_variant_names[v]) > 0.0);
    const mxa_device_info h200 = scored(CL_DEVICE_TYPE_GPU, "cl-mma-ptx", 132);
    assert_int_equal(h200.score, 154400);
    assert_true(h200.score < (int)(mxa_speed_reference_rate("coopmat-khr-i8") * 1000.0));
    assert_non_null(strstr(h200.score_reason, "cl-mma-ptx"));
    const mxa_device_info tiled = scored(CL_DEVICE_TYPE_GPU, "cl-tiled", 132);
    assert_true(tiled.score > 0 && tiled.score < h200.score);
    const mxa_device_info accel = scored(CL_DEVICE_TYPE_ACCELERATOR, "cl-tiled", 66);
    assert_int_equal(accel.score, 11550);
    const mxa_device_info pocl = scored(CL_DEVICE_TYPE_CPU, "cl-tiled", 2);
    assert_true(pocl.score < 0);
    const mxa_device_info none = scored(CL_DEVICE_TYPE_GPU, "none", 132);
    assert_true(none.score < pocl.score);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_scores)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
