/*
 * The scores "auto" ranks devices by (runtime/speed.h): estimates from the reference
 * rates on fake device records (the H200 of issue 18 seen through Vulkan and OpenCL, an
 * integrated GPU, a CPU behind a GPU API, an unknown variant), cached measurements
 * replacing estimates but never a policy score, and mxa_device_measure end to end on the
 * CPU backend (a real call, cached, read back by the next runtime).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "mxa/mxa.h"
#include "runtime/cache.h"
#include "runtime/speed.h"

static char cache_dir[] = "/tmp/mxa_test_speed_XXXXXX";

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(cache_dir)) return -1;
    setenv("MXA_CACHE_DIR", cache_dir, 1);
    setenv("MXA_DISABLE", "all", 1); /* the runtime cases: the CPU backend alone */
    unsetenv("MXA_DEVICE");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static mxa_device_info fake(const char *backend, const char *variant, uint32_t units)
{
    mxa_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.backend, sizeof d.backend, "%s", backend);
    snprintf(d.id, sizeof d.id, "%s:0", backend);
    snprintf(d.name, sizeof d.name, "NVIDIA H200");
    snprintf(d.driver, sizeof d.driver, "580.00");
    snprintf(d.variant, sizeof d.variant, "%s", variant);
    d.compute_units = units;
    return d;
}

/* Issue 18: on the H200, Vulkan coopmat-khr-i8 measured 244.4 TFLOP/s and OpenCL
 * cl-mma-ptx 154.4; the old constant scores (100 and 120) picked OpenCL. */
static void test_h200_vulkan_beats_opencl(void **state)
{
    (void)state;
    mxa_device_info vk = fake("vulkan", "coopmat-khr-i8", 132), cl = fake("opencl", "cl-mma-ptx", 132);
    mxa_speed_estimate(&vk, MXA_SPEED_DISCRETE, vk.compute_units);
    mxa_speed_estimate(&cl, MXA_SPEED_DISCRETE, cl.compute_units);
    assert_int_equal(vk.score, 244400);
    assert_int_equal(cl.score, 154400);
    assert_true(vk.score > cl.score && cl.score > 0);
    assert_non_null(strstr(vk.score_reason, "estimate 244.4 TFLOP/s"));
    assert_non_null(strstr(cl.score_reason, "cl-mma-ptx"));
    /* Vulkan's record may lack the SM count: the reference's is assumed, and said */
    mxa_device_info vk0 = fake("vulkan", "coopmat-khr-i8", 0);
    mxa_speed_estimate(&vk0, MXA_SPEED_DISCRETE, 0);
    assert_int_equal(vk0.score, 244400);
    assert_non_null(strstr(vk0.score_reason, "assumed"));
    /* every variant ranks by its rate on the same device */
    const char *order[] = {"coopmat-khr-i8", "coopmat-khr-f16", "cl-mma-ptx", "coopmat-khr-f16-smem",
                           "coopmat-khr-i8-smem", "intdot", "cl-tiled", "scalar"};
    for (size_t i = 1; i < sizeof order / sizeof order[0]; i++)
        assert_true(mxa_speed_reference_rate(order[i - 1]) > mxa_speed_reference_rate(order[i]));
}

static void test_units_and_kinds(void **state)
{
    (void)state;
    /* a 28-SM GPU runs the same kernel slower than the 132-SM reference */
    mxa_device_info small = fake("vulkan", "coopmat-khr-i8", 28);
    mxa_speed_estimate(&small, MXA_SPEED_DISCRETE, 28);
    assert_int_equal(small.score, (int)(244.4 * 28 / 132 * 1000 + 0.5));
    /* an integrated GPU with no unit count is assumed small: below that discrete GPU */
    mxa_device_info igpu = fake("vulkan", "coopmat-khr-i8-smem", 0);
    mxa_speed_estimate(&igpu, MXA_SPEED_INTEGRATED, 0);
    assert_true(igpu.score > 0 && igpu.score < small.score);
    /* the host CPU behind a GPU API (lavapipe, PoCL) stays below the CPU backend's 0 */
    mxa_device_info host = fake("opencl", "cl-tiled", 2);
    mxa_speed_estimate(&host, MXA_SPEED_HOST_CPU, 2);
    assert_true(host.score < 0);
    assert_non_null(strstr(host.score_reason, "host CPU"));
    /* a variant without a reference rate: above the CPU backend, and said */
    mxa_device_info unknown = fake("vulkan", "some-new-kernel", 132);
    mxa_speed_estimate(&unknown, MXA_SPEED_DISCRETE, 132);
    assert_int_equal(unknown.score, 1);
    assert_non_null(strstr(unknown.score_reason, "some-new-kernel"));
}

static void store(const mxa_device_info *d, double tflops)
{
    mxa_speed_record rec = {tflops, 8, 16384, 128, 3};
    assert_int_equal(mxa_speed_store(d, &rec), MXA_OK);
}

static void test_measured_replaces_estimate(void **state)
{
    (void)state;
    mxa_device_info vk = fake("vulkan", "coopmat-khr-i8", 132), cl = fake("opencl", "cl-mma-ptx", 132);
    mxa_speed_estimate(&vk, MXA_SPEED_DISCRETE, 132);
    mxa_speed_estimate(&cl, MXA_SPEED_DISCRETE, 132);
    store(&cl, 300.0); /* suppose OpenCL measured faster here: the measurement wins */
    mxa_speed_apply_measured(&vk);
    mxa_speed_apply_measured(&cl);
    assert_int_equal(vk.score, 244400); /* not measured: the estimate */
    assert_int_equal(cl.score, 300000);
    assert_true(cl.score > vk.score);
    assert_non_null(strstr(cl.score_reason, "measured 300 TFLOP/s"));
    /* another variant on the same device is another key */
    mxa_device_info tiled = fake("opencl", "cl-tiled", 132);
    mxa_speed_estimate(&tiled, MXA_SPEED_DISCRETE, 132);
    mxa_speed_apply_measured(&tiled);
    assert_int_equal(tiled.score, 23100);
    /* a policy score is never replaced */
    mxa_device_info host = fake("vulkan", "intdot", 0);
    mxa_speed_estimate(&host, MXA_SPEED_HOST_CPU, 0);
    store(&host, 1000.0);
    mxa_speed_apply_measured(&host);
    assert_true(host.score < 0);
    /* an entry of the wrong size, or an absurd rate, is ignored */
    char key[512];
    mxa_device_info bad = fake("vulkan", "intdot", 132);
    mxa_speed_estimate(&bad, MXA_SPEED_DISCRETE, 132);
    mxa_speed_cache_key(&bad, key, sizeof key);
    assert_int_equal(mxa_cache_store("speed", key, "xx", 2), MXA_OK);
    mxa_speed_apply_measured(&bad);
    assert_int_equal(bad.score, 69600);
    store(&bad, -5.0);
    mxa_speed_apply_measured(&bad);
    assert_int_equal(bad.score, 69600);
}

/* A real measurement on the CPU backend: cached, and the next runtime scores by it. */
static void test_measure_cpu(void **state)
{
    (void)state;
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    mxa_device_info before;
    assert_int_equal(mxa_device_get_info(rt, 0, &before), MXA_OK);
    assert_string_equal(before.id, "cpu");
    assert_int_equal(before.score, 0);
    assert_non_null(strstr(before.score_reason, "unmeasured"));
    assert_int_equal(mxa_device_open(rt, "cpu", &dev), MXA_OK);
    double tflops = 0.0;
    assert_int_equal(mxa_device_measure(dev, &tflops), MXA_OK);
    assert_true(tflops > 0.0 && tflops < 1000.0);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    assert_int_equal(mxa_device_measure(NULL, NULL), MXA_ERR_INVALID_ARGUMENT);

    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    mxa_device_info after;
    assert_int_equal(mxa_device_get_info(rt, 0, &after), MXA_OK);
    const int expect = tflops * 1000.0 + 0.5 < 1.0 ? 1 : (int)(tflops * 1000.0 + 0.5);
    assert_int_equal(after.score, expect);
    assert_non_null(strstr(after.score_reason, "measured"));
    assert_int_equal(mxa_device_open(rt, "auto", &dev), MXA_OK);
    mxa_device_info opened;
    assert_int_equal(mxa_device_info_of(dev, &opened), MXA_OK);
    assert_int_equal(opened.score, expect);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h200_vulkan_beats_opencl),
        cmocka_unit_test(test_units_and_kinds),
        cmocka_unit_test(test_measured_replaces_estimate),
        cmocka_unit_test(test_measure_cpu),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
