/*
 * Environment switches with bad values (issue 15, defect 11): each warns once
 * per process, naming the variable and what is done instead; good values
 * warn nothing. Warnings are captured through mxa_log_set_callback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/env.h"
#include "runtime/log.h"
#include "testutil.h"

static char lines[64][600];
static int nlines;

static void capture(mxa_log_level level, const char *line, void *user)
{
    (void)user;
    if (level == MXA_LOG_WARN && nlines < 64) snprintf(lines[nlines++], sizeof lines[0], "%s", line);
}

/* Lines captured since the last call that contain every one of up to 3 fragments. */
static int count(const char *a, const char *b, const char *c)
{
    int n = 0;
    for (int i = 0; i < nlines; i++)
        n += strstr(lines[i], a) && (!b || strstr(lines[i], b)) && (!c || strstr(lines[i], c));
    return n;
}

static void fresh(void)
{
    nlines = 0;
    mxa_env_reset_warnings();
}

/* First: nothing has read MXA_LOG before this test. */
static void test_log_level(void **state)
{
    (void)state;
    setenv("MXA_LOG", "bogus", 1);
    fresh();
    assert_false(mxa_log_enabled(MXA_LOG_INFO)); /* the default level: warn */
    assert_true(mxa_log_enabled(MXA_LOG_WARN));
    MXA_LOG_W("something else");
    assert_int_equal(count("MXA_LOG=bogus", "error|warn|info|debug", "using warn"), 1);
    assert_int_equal(nlines, 2);
    unsetenv("MXA_LOG");
}

static void test_flags(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        int expect;
    } good[] = {{"1", 1}, {"on", 1}, {"true", 1}, {"yes", 1}, {"ON", 1}, {"True", 1},
                {"0", 0}, {"off", 0}, {"false", 0}, {"no", 0}, {"", 0}};
    fresh();
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("MXA_DISABLE_COOPMAT", good[i].value, 1);
        if (mxa_env_flag("MXA_DISABLE_COOPMAT") != good[i].expect) fail_msg("'%s'", good[i].value);
    }
    unsetenv("MXA_DISABLE_COOPMAT");
    assert_int_equal(mxa_env_flag("MXA_DISABLE_COOPMAT"), 0);
    assert_int_equal(nlines, 0);
    static const char *const flags[] = {"MXA_DISABLE_COOPMAT", "MXA_DISABLE_INT_DOT", "MXA_DISABLE_NATIVE_FP4",
                                        "MXA_OPENCL_NO_ASYNC"};
    static const char *const bad[] = {"bogus", "2", "y", "onn", " 1"};
    for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            char want[80];
            fresh();
            setenv(flags[f], bad[b], 1);
            for (int rep = 0; rep < 3; rep++) assert_int_equal(mxa_env_flag(flags[f]), 0);
            snprintf(want, sizeof want, "%s=%s is not one of", flags[f], bad[b]);
            if (count(want, "1/0/on/off/true/false/yes/no", "ignored (off)") != 1 || nlines != 1)
                fail_msg("%s=%s: %d lines, first '%s'", flags[f], bad[b], nlines, nlines ? lines[0] : "");
            unsetenv(flags[f]);
        }
}

static void test_integers(void **state)
{
    (void)state;
    static const char *const bad[] = {"0", "-1", "100000", "abc", "4x", " 4", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[80];
        fresh();
        setenv("MXA_NUM_THREADS", bad[i], 1);
        for (int rep = 0; rep < 3; rep++) assert_int_equal(mxa_env_long("MXA_NUM_THREADS", 1, 256, 7), 7);
        snprintf(want, sizeof want, "MXA_NUM_THREADS=%s is not an integer in [1, 256]; using 7", bad[i]);
        if (count(want, NULL, NULL) != 1 || nlines != 1) fail_msg("'%s': %d lines", bad[i], nlines);
    }
    fresh();
    setenv("MXA_NUM_THREADS", "256", 1);
    assert_int_equal(mxa_env_long("MXA_NUM_THREADS", 1, 256, 7), 256);
    setenv("MXA_NUM_THREADS", "1", 1);
    assert_int_equal(mxa_env_long("MXA_NUM_THREADS", 1, 256, 7), 1);
    unsetenv("MXA_NUM_THREADS");
    assert_int_equal(mxa_env_long("MXA_NUM_THREADS", 1, 256, 7), 7);
    assert_int_equal(nlines, 0);
}

/* MXA_COOPMAT_SHAPE: MxNxK with each side 1..64; anything else warns once and is ignored. */
static void test_coopmat_shape(void **state)
{
    (void)state;
    static const char *const good[] = {"16x16x32", "16x8x32", "8x16x16", "64x64x64"};
    static const char *const bad[] = {"16x16", "16x16x32x", "16x16x0", "16x16x65", "axbxc", "16 x 16 x 32", "-16x16x16"};
    fresh();
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("MXA_COOPMAT_SHAPE", good[i], 1);
        assert_string_equal(mxa_env_coopmat_shape(), good[i]);
    }
    assert_int_equal(nlines, 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fresh();
        setenv("MXA_COOPMAT_SHAPE", bad[i], 1);
        for (int rep = 0; rep < 3; rep++)
            if (mxa_env_coopmat_shape()) fail_msg("'%s' accepted", bad[i]);
        assert_int_equal(count("MXA_COOPMAT_SHAPE=", "not MxNxK", "ignored"), 1);
        assert_int_equal(nlines, 1);
    }
    unsetenv("MXA_COOPMAT_SHAPE");
    fresh();
    assert_null(mxa_env_coopmat_shape());
    assert_int_equal(nlines, 0);
}

static void test_kernel(void **state)
{
    (void)state;
    static const char *const known[] = {"scalar", "intdot", "coopmat-khr-i8", "coopmat-khr-f16", "coopmat-khr-i8-smem", "coopmat-khr-f16-smem",
                                        "cl-mma-ptx", "cl-tiled", "hip-mfma-fp4", "hip-mfma-i8", "hip-scalar",
                                        "mfma-i8"};
    fresh();
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        setenv("MXA_KERNEL", known[i], 1);
        assert_string_equal(mxa_env_kernel(), known[i]);
        assert_non_null(strstr(mxa_env_kernel_names(), known[i]));
    }
    assert_int_equal(nlines, 0);
    setenv("MXA_KERNEL", "nonexistent", 1);
    for (int rep = 0; rep < 3; rep++) assert_null(mxa_env_kernel());
    mxa_env_check_switches();
    assert_int_equal(count("MXA_KERNEL=nonexistent names no kernel variant", "cl-tiled", "chosen automatically"), 1);
    assert_int_equal(count("coopmat-khr-i8", "hip-mfma-fp4", NULL), 1);
    assert_int_equal(nlines, 1);
    unsetenv("MXA_KERNEL");
}

/* Through the API on the CPU: MXA_NUM_THREADS and MXA_CPU_ISA warn once each,
 * however many devices open, and attention still runs. */
static void test_cpu_device(void **state)
{
    (void)state;
    fresh();
    setenv("MXA_DISABLE", "vulkan,opencl,hip,bogus", 1);
    setenv("MXA_NUM_THREADS", "abc", 1);
    setenv("MXA_CPU_ISA", "bogus", 1);
    setenv("MXA_KERNEL", "nonexistent", 1); /* the CPU never reads it: the runtime checks it */
    setenv("MXA_CPU_FUSED", "maybe", 1);
    for (int rep = 0; rep < 2; rep++) {
        mxa_runtime *rt = NULL;
        mxa_device *dev = NULL;
        assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
        assert_int_equal(mxa_device_open(rt, "cpu", &dev), MXA_OK);
        assert_int_equal(tu_small_attention(dev, 3), MXA_OK);
        mxa_device_close(dev);
        mxa_runtime_destroy(rt);
    }
    assert_int_equal(count("MXA_NUM_THREADS=abc is not an integer in [1, 256]; using", NULL, NULL), 1);
    assert_int_equal(count("MXA_CPU_ISA=bogus unknown (amx|avx512|avx2|portable); using", NULL, NULL), 1);
    assert_int_equal(count("MXA_DISABLE: 'bogus' is not a backend", NULL, NULL), 1);
    assert_int_equal(count("MXA_KERNEL=nonexistent names no kernel variant", NULL, NULL), 1);
    assert_int_equal(count("MXA_CPU_FUSED=maybe is not one of", "ignored (on)", NULL), 1);
    unsetenv("MXA_KERNEL");
    unsetenv("MXA_CPU_FUSED");
    unsetenv("MXA_NUM_THREADS");
    unsetenv("MXA_CPU_ISA");
    unsetenv("MXA_DISABLE");
}

int main(void)
{
    mxa_log_set_callback(capture, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_level), cmocka_unit_test(test_flags),      cmocka_unit_test(test_integers),
        cmocka_unit_test(test_kernel),    cmocka_unit_test(test_coopmat_shape),    cmocka_unit_test(test_cpu_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
