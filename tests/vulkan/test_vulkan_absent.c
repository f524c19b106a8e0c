/* Run with VK_DRIVER_FILES pointing at nothing: the Vulkan backend is absent,
 * says why, and the runtime (CPU) still works. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mxa/mxa.h"
#include "testutil.h"

static void test_absent(void **state)
{
    (void)state;
    mxa_runtime *rt = NULL;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    int n = 0, found = 0;
    assert_int_equal(mxa_backend_count(rt, &n), MXA_OK);
    for (int i = 0; i < n; i++) {
        mxa_backend_info bi;
        assert_int_equal(mxa_backend_get_info(rt, i, &bi), MXA_OK);
        if (strcmp(bi.name, "vulkan") != 0) continue;
        found = 1;
        assert_true(bi.built);
        assert_false(bi.present);
        assert_int_equal(bi.device_count, 0);
        assert_true(strlen(bi.reason) > 0);
        print_message("vulkan absent: %s\n", bi.reason);
    }
    assert_true(found);
    mxa_device *dev = NULL;
    assert_int_equal(mxa_device_open(rt, "vulkan:0", &dev), MXA_ERR_NOT_FOUND);
    assert_null(dev);
    /* "auto" still opens a device (the CPU) and attention works */
    assert_int_equal(mxa_device_open(rt, "auto", &dev), MXA_OK);
    assert_int_equal(tu_small_attention(dev, 7), MXA_OK);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
}

int main(void)
{
    /* the loader reads these at the first vkCreateInstance: no driver can be found */
    setenv("VK_DRIVER_FILES", "/nonexistent/icd.json", 1);
    setenv("VK_ICD_FILENAMES", "/nonexistent/icd.json", 1);
    unsetenv("VK_ADD_DRIVER_FILES");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_absent)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
