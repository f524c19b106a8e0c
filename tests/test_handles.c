/*
 * Handles used wrongly get an error, not a crash (a device used after close,
 * closed twice, used after its runtime was destroyed; a buffer outliving its
 * device), and backends load lazily: a runtime that only opens "cpu" maps no
 * GPU runtime into the process. Every device present here (cpu, and lavapipe
 * / PoCL where installed) runs the misuse sequence.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

/* 1 if a library whose file name contains `name` is mapped into this process. */
static int mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

static int log_warnings;
static void count_warnings(mxa_log_level level, const char *msg, void *user)
{
    (void)msg;
    (void)user;
    log_warnings += level == MXA_LOG_WARN;
}

/* Runs first: nothing else in this process has touched a GPU backend yet. */
static void test_cpu_loads_no_gpu_runtime(void **state)
{
    (void)state;
    assert_false(mapped("libvulkan"));
    assert_false(mapped("libOpenCL"));
    mxa_runtime *rt;
    mxa_device *dev;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "cpu", &dev), MXA_OK);
    float q[64 * 32], k[64 * 32], v[64 * 32], o[64 * 32];
    tu_rng rng = {3};
    tu_fill_attention(&rng, q, k, v, 1, 1, 1, 64, 64, 32);
    mxa_tensor tq = tu_tensor(q, 1, 1, 64, 32), tk = tu_tensor(k, 1, 1, 64, 32), tv = tu_tensor(v, 1, 1, 64, 32),
               to = tu_tensor(o, 1, 1, 64, 32);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, NULL), MXA_OK);
    mxa_backend_info info;
    assert_int_equal(mxa_backend_get_info(rt, 3, &info), MXA_OK); /* cpu: probing it loads nothing either */
    assert_string_equal(info.name, "cpu");
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    assert_false(mapped("libvulkan"));
    assert_false(mapped("libOpenCL"));
    assert_false(mapped("libamdhip64"));
}

/* MXA_DISABLE is honoured before any load, "all" included. */
static void test_disable_all(void **state)
{
    (void)state;
    mxa_runtime_options opts = {"all"};
    mxa_runtime *rt;
    int n = -1;
    assert_int_equal(mxa_runtime_create(&opts, &rt), MXA_OK);
    assert_int_equal(mxa_device_count(rt, &n), MXA_OK);
    assert_int_equal(n, 1); /* the CPU only */
    for (int i = 0; i < 3; i++) {
        mxa_backend_info info;
        assert_int_equal(mxa_backend_get_info(rt, i, &info), MXA_OK);
        assert_false(info.present);
        if (info.built) assert_string_equal(info.reason, "disabled by MXA_DISABLE");
    }
    mxa_runtime_destroy(rt);
    assert_false(mapped("libvulkan"));
    assert_false(mapped("libOpenCL"));
}

/* Expects `call` to fail with MXA_ERR_INVALID_ARGUMENT and a message containing `text`. */
#define EXPECT_INVALID(call, text)                                                     \
    do {                                                                               \
        assert_int_equal((call), MXA_ERR_INVALID_ARGUMENT);                            \
        if (!strstr(mxa_last_error_message(), (text)))                                 \
            fail_msg("message '%s' lacks '%s'", mxa_last_error_message(), (text));     \
    } while (0)

/* The misuse sequence on one device id; skipped when the device is absent. */
static void misuse(const char *id)
{
    mxa_runtime *rt;
    mxa_device *dev;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    if (mxa_device_open(rt, id, &dev) != MXA_OK) {
        mxa_runtime_destroy(rt);
        print_message("(%s absent: %s)\n", id, mxa_last_error_message());
        return;
    }
    float x[32 * 32] = {0}, o[32 * 32];
    mxa_tensor t = tu_tensor(x, 1, 1, 32, 32), to = tu_tensor(o, 1, 1, 32, 32);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    mxa_buffer *keep, *gone;
    assert_int_equal(mxa_buffer_create(dev, sizeof x, &keep), MXA_OK);
    assert_int_equal(mxa_buffer_create(dev, sizeof x, &gone), MXA_OK);
    mxa_buffer_destroy(gone);
    EXPECT_INVALID(mxa_buffer_upload(gone, 0, x, 4), "not a live buffer");
    mxa_buffer_destroy(gone); /* twice: a warning, nothing else */

    mxa_device_close(dev);
    EXPECT_INVALID(mxa_attention(dev, &desc, &t, &t, &t, &to, NULL, NULL), "not an open device");
    uint8_t codes[32 * 16], scales[32];
    EXPECT_INVALID(mxa_quantize(dev, &t, mxa_rule_uos(), codes, scales), "not an open device");
    mxa_buffer *b = NULL;
    EXPECT_INVALID(mxa_buffer_create(dev, 64, &b), "not an open device");
    mxa_device_info info;
    EXPECT_INVALID(mxa_device_info_of(dev, &info), "not an open device");
    /* the buffer outlived its device: usable as a handle, refused as memory, destroyable */
    EXPECT_INVALID(mxa_buffer_upload(keep, 0, x, 4), "device was closed");
    EXPECT_INVALID(mxa_buffer_download(keep, 0, x, 4), "device was closed");
    log_warnings = 0;
    mxa_log_set_callback(count_warnings, NULL);
    mxa_device_close(dev); /* twice */
    assert_int_equal(log_warnings, 1);
    mxa_log_set_callback(NULL, NULL);
    mxa_buffer_destroy(keep);

    /* destroying the runtime closes what is still open; the handles then fail cleanly */
    assert_int_equal(mxa_device_open(rt, id, &dev), MXA_OK);
    assert_int_equal(mxa_buffer_create(dev, sizeof x, &keep), MXA_OK);
    mxa_runtime_destroy(rt);
    EXPECT_INVALID(mxa_attention(dev, &desc, &t, &t, &t, &to, NULL, NULL), "not an open device");
    EXPECT_INVALID(mxa_buffer_upload(keep, 0, x, 4), "device was closed");
    mxa_buffer_destroy(keep);
    mxa_device_close(dev);
    int n;
    EXPECT_INVALID(mxa_device_count(rt, &n), "not a live runtime");
    EXPECT_INVALID(mxa_device_open(rt, "cpu", &dev), "not a live runtime");
    mxa_runtime_destroy(rt); /* twice */
}

static void test_misuse_cpu(void **state)
{
    (void)state;
    misuse("cpu");
}

static void test_misuse_vulkan(void **state)
{
    (void)state;
    misuse("vulkan:0");
}

static void test_misuse_opencl(void **state)
{
    (void)state;
    misuse("opencl:0");
}

/* A bad MXA_DEVICE is reported as MXA_DEVICE's, not the caller's "auto". */
static void test_bad_mxa_device(void **state)
{
    (void)state;
    mxa_runtime *rt;
    mxa_device *dev = NULL;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    setenv("MXA_DEVICE", "bogus:0", 1);
    EXPECT_INVALID(mxa_device_open(rt, "auto", &dev), "MXA_DEVICE");
    setenv("MXA_DEVICE", "cpu:x", 1);
    EXPECT_INVALID(mxa_device_open(rt, "auto", &dev), "MXA_DEVICE");
    unsetenv("MXA_DEVICE");
    mxa_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_loads_no_gpu_runtime), /* first: before anything loads a GPU runtime */
        cmocka_unit_test(test_disable_all),
        cmocka_unit_test(test_bad_mxa_device),
        cmocka_unit_test(test_misuse_cpu),
        cmocka_unit_test(test_misuse_vulkan),
        cmocka_unit_test(test_misuse_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
