/*
 * The HIP backend's pre-load check: the runtime is dlopened only where
 * /dev/kfd exists and the KFD topology lists a GPU node (issue 15: loading
 * ROCm's LLVM on a machine without an AMD GPU took down processes that then
 * loaded another driver's LLVM). Fake sysfs trees in a temp dir, plus a
 * probe with the test double on LD_LIBRARY_PATH as libamdhip64.so (ctest
 * sets it) that must not get loaded without /dev/kfd.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/hip/hip_api.h"
#include "fstree.h"
#include "hip_fake_util.h"

#define NODES "sys/class/kfd/kfd/topology/nodes"

static int check(const char *root, char *reason)
{
    return mxa_hip_kfd_gpu(root, reason, MXA_REASON_LEN);
}

static void test_no_kfd(void **state)
{
    (void)state;
    char reason[MXA_REASON_LEN], want[600];
    const char *root = fst_begin();
    assert_non_null(root);
    assert_int_equal(fst_write(NODES "/1/properties", "simd_count 304\n"), 0); /* topology alone is not enough */
    assert_int_equal(check(root, reason), 0);
    snprintf(want, sizeof want, "no AMD GPU kernel driver (%s/dev/kfd)", root);
    assert_string_equal(reason, want);
    fst_end();
}

static void test_topology(void **state)
{
    (void)state;
    static const struct {
        const char *node0, *node1, *gpu_id1;
        int gpu;
    } cases[] = {
        {NULL, NULL, NULL, 0},                                                    /* no topology at all */
        {"cpu_cores_count 64\nsimd_count 0\n", NULL, NULL, 0},                   /* a CPU node only */
        {"cpu_cores_count 64\nsimd_count 0\n", "simd_count 0\n", "0\n", 0},      /* two CPU nodes */
        {"cpu_cores_count 64\nsimd_count 0\n", "cpu_cores_count 0\nsimd_count 1216\n", "0\n", 1},
        {"simd_count 0\n", "array_count 4\n", "43521\n", 1},                     /* gpu_id, no simd_count line */
        {"simd_count 0\n", "garbage\n", "junk\n", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char reason[MXA_REASON_LEN] = "";
        const char *root = fst_begin();
        assert_non_null(root);
        assert_int_equal(fst_write("dev/kfd", ""), 0);
        if (cases[i].node0) assert_int_equal(fst_write(NODES "/0/properties", cases[i].node0), 0);
        if (cases[i].node1) assert_int_equal(fst_write(NODES "/1/properties", cases[i].node1), 0);
        if (cases[i].gpu_id1) assert_int_equal(fst_write(NODES "/1/gpu_id", cases[i].gpu_id1), 0);
        const int got = check(root, reason);
        if (got != cases[i].gpu) fail_msg("case %zu: got %d (%s)", i, got, reason);
        if (!got && !strstr(reason, "/dev/kfd present but the KFD topology"))
            fail_msg("case %zu: reason '%s'", i, reason);
        fst_end();
    }
}

/* Without MXA_HIP_LIBRARY and without /dev/kfd the runtime is never loaded,
 * even though a libamdhip64.so is on the library path. */
static void test_probe_loads_nothing(void **state)
{
    (void)state;
    if (access("/dev/kfd", F_OK) == 0) skip(); /* a real AMD GPU machine: the check passes */
    use_fake(FAKE_HIP_PATH);
    unsetenv("MXA_HIP_LIBRARY");
    unsetenv("MXA_HIPRTC_LIBRARY");
    mxa_backend_info b;
    mxa_runtime *rt = probe(&b, NULL);
    assert_false(b.present);
    assert_string_equal(b.reason, "no AMD GPU kernel driver (/dev/kfd)");
    mxa_runtime_destroy(rt);
    assert_null(dlopen("libamdhip64.so", RTLD_NOW | RTLD_NOLOAD));
    /* control: the double is reachable under that name, so a load would have been seen */
    void *h = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) fail_msg("the test double is not on LD_LIBRARY_PATH as libamdhip64.so: %s", dlerror());
    dlclose(h);
    /* an explicit MXA_HIP_LIBRARY skips the check */
    use_fake(FAKE_HIP_PATH);
    rt = probe(&b, NULL);
    assert_true(b.present);
    mxa_runtime_destroy(rt);
}

int main(void)
{
    if (fake_begin()) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_kfd),
        cmocka_unit_test(test_topology),
        cmocka_unit_test(test_probe_loads_nothing),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fake_end();
    return failed;
}
