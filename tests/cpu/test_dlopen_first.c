/* mxa_dlopen_first: the first name that loads, or the first name's dlerror text
 * (on the H200 machine the Vulkan reason printed freed memory: the text was read
 * after the next dlopen had replaced it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <string.h>

#include "runtime/sysprobe.h"

static void test_none_loads(void **state)
{
    (void)state;
    static const char *const names[] = {"/nonexistent/first.so", "/nonexistent/second-with-a-longer-name.so",
                                        "libnonexistent-mxa.so.9", NULL};
    char path[64] = "untouched", why[200];
    assert_null(mxa_dlopen_first(names, path, sizeof path, why, sizeof why));
    assert_string_equal(path, "untouched");
    if (!strstr(why, "/nonexistent/first.so") || strstr(why, "second")) fail_msg("why: '%s'", why);
    for (const char *p = why; *p; p++) assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
}

static void test_second_loads(void **state)
{
    (void)state;
    static const char *const names[] = {"/nonexistent/first.so", "libc.so.6", NULL};
    char path[64], why[200];
    void *h = mxa_dlopen_first(names, path, sizeof path, why, sizeof why);
    assert_non_null(h);
    assert_string_equal(path, "libc.so.6");
    dlclose(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_none_loads), cmocka_unit_test(test_second_loads)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
