/*
 * Without an OpenCL library or ICD the backend is absent with a reason and
 * the runtime still works. ctest runs this once with OCL_ICD_VENDORS pointing
 * nowhere; the test itself also points MXA_OPENCL_LIBRARY nowhere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mxa/mxa.h"

static void expect_absent(void)
{
    mxa_runtime *rt;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    int nb = 0, found = 0;
    mxa_backend_count(rt, &nb);
    for (int i = 0; i < nb; i++) {
        mxa_backend_info bi;
        assert_int_equal(mxa_backend_get_info(rt, i, &bi), MXA_OK);
        if (strcmp(bi.name, "opencl") != 0) continue;
        found = 1;
        printf("# opencl: built %d, present %d, reason: %s\n", bi.built, bi.present, bi.reason);
        assert_int_equal(bi.present, 0);
        assert_int_equal(bi.device_count, 0);
        assert_true(strlen(bi.reason) > 0);
    }
    assert_true(found);
    mxa_device *dev;
    assert_int_equal(mxa_device_open(rt, "opencl:0", &dev), MXA_ERR_NOT_FOUND);
    assert_int_equal(mxa_device_open(rt, "auto", &dev), MXA_OK);
    float x[64] = {1.0f, 2.0f};
    uint8_t codes[32], scales[2];
    mxa_tensor t;
    mxa_tensor_init(&t, MXA_F32, 1, 1, 1, 64, x);
    assert_int_equal(mxa_quantize(dev, &t, mxa_rule_uos(), codes, scales), MXA_OK);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
}

static void test_no_icd(void **state)
{
    (void)state;
    if (!getenv("OCL_ICD_VENDORS") || strcmp(getenv("OCL_ICD_VENDORS"), "/nonexistent") != 0) skip();
    expect_absent();
}

static void test_no_library(void **state)
{
    (void)state;
    setenv("MXA_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1", 1);
    expect_absent();
    unsetenv("MXA_OPENCL_LIBRARY");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_library),
        cmocka_unit_test(test_no_icd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
