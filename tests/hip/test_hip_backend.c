/*
 * Host-side tests of the HIP backend against the test double (fake_hip.c):
 * loading, probing, variant selection, hiprtc failures, out-of-memory, the
 * code-object cache, and what gets launched. No AMD GPU is involved: the
 * double's kernels do nothing, so these tests check the host logic only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/hip/hip_arch.h"
#include "runtime/speed.h"
#include "hip_fake_util.h"
#include "runtime/env.h"

static void expect_absent(const char *fragment)
{
    mxa_backend_info b;
    mxa_runtime *rt = probe(&b, NULL);
    if (b.present || !strstr(b.reason, fragment)) fail_msg("present=%d reason '%s' (wanted '%s')", b.present, b.reason, fragment);
    mxa_runtime_destroy(rt);
}

static void test_absent_library(void **state)
{
    (void)state;
    use_fake("/nonexistent/libamdhip64.so");
    expect_absent("HIP runtime not found");
    use_fake(FAKE_HIP_PATH);
    setenv("MXA_HIPRTC_LIBRARY", "/nonexistent/libhiprtc.so", 1);
    expect_absent("hiprtc not found");
}

static void test_missing_symbol(void **state)
{
    (void)state;
    use_fake(FAKE_HIP_NOLAUNCH_PATH);
    expect_absent("lacks hipModuleLaunchKernel");
}

static void test_no_devices(void **state)
{
    (void)state;
    use_fake(FAKE_HIP_PATH);
    setenv("FAKE_HIP_DEVICES", "0", 1);
    expect_absent("reports 0 devices");
    setenv("FAKE_HIP_DEVICES", "1", 1);
    setenv("FAKE_HIP_INIT_ERROR", "100", 1);
    expect_absent("no AMD GPU");
    setenv("FAKE_HIP_INIT_ERROR", "3", 1);
    expect_absent("failed to start");
}

static int warnings, cap_warnings;
static void count_warnings(mxa_log_level level, const char *line, void *user)
{
    (void)user;
    if (level != MXA_LOG_WARN) return;
    warnings++;
    cap_warnings += strstr(line, "reports 2147483647 devices; probing only the first 16") != NULL;
}

/* A runtime claiming 2^31-1 devices: one warning, at most 16 probed (it hung every command). */
static void test_device_count_cap(void **state)
{
    (void)state;
    static const struct {
        const char *arch;
        int present, max_warnings;
    } cases[] = {{"gfx942", 1, 1}, {"sm_90", 0, 1 + 16}}; /* unusable devices: one line each, for 16 */
    mxa_log_set_callback(count_warnings, NULL);
    alarm(60); /* before the cap this never ended: fail instead of hanging */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        use_fake(FAKE_HIP_PATH);
        setenv("FAKE_HIP_DEVICES", "2147483647", 1);
        setenv("FAKE_HIP_ARCH", cases[i].arch, 1);
        warnings = cap_warnings = 0;
        mxa_backend_info b;
        mxa_runtime *rt = probe(&b, NULL);
        assert_int_equal(b.present, cases[i].present);
        assert_int_equal(b.device_count, cases[i].present ? 16 : 0);
        assert_int_equal(cap_warnings, 1);
        if (warnings > cases[i].max_warnings) fail_msg("case %zu: %d warnings", i, warnings);
        mxa_runtime_destroy(rt);
    }
    alarm(0);
    mxa_log_set_callback(NULL, NULL);
    use_fake(FAKE_HIP_PATH);
    setenv("FAKE_HIP_DEVICES", "-5", 1);
    expect_absent("reports -5 devices");
}

static void test_version_check(void **state)
{
    (void)state;
    use_fake(FAKE_HIP_PATH);
    setenv("FAKE_HIP_RUNTIME_VERSION", "50200000", 1);
    expect_absent("older than");
}

static void test_bad_arch_name(void **state)
{
    (void)state;
    use_fake(FAKE_HIP_PATH);
    setenv("FAKE_HIP_ARCH", "sm_90", 1);
    expect_absent("gcnArchName");
}

static void test_probe_archs(void **state)
{
    (void)state;
    static const struct {
        const char *lib, *arch, *variant;
        int wave, native, coop, score; /* the estimate (runtime/speed.h) for the fake's 304 CUs */
    } cases[] = {
        {FAKE_HIP_PATH, "gfx950:sramecc+:xnack-", "hip-mfma-fp4", 64, 1, 1, 355588},
        {FAKE_HIP_PATH, "gfx942:sramecc+:xnack-", "hip-mfma-i8", 64, 0, 1, 355588},
        {FAKE_HIP_OLDPROPS_PATH, "gfx90a:xnack-", "hip-mfma-i8", 64, 0, 1, 355588},
        {FAKE_HIP_PATH, "gfx1100", "hip-scalar", 32, 0, 1, 2105},
        {FAKE_HIP_PATH, "gfx1030", "hip-scalar", 32, 0, 0, 2105},
    };
    for (int v = MXA_HIP_SCALAR; v <= MXA_HIP_MFMA_FP4; v++) /* each variant has a reference rate */
        assert_true(mxa_speed_reference_rate(mxa_hip_variant_name((mxa_hip_variant)v)) > 0.0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        use_fake(cases[i].lib);
        setenv("FAKE_HIP_ARCH", cases[i].arch, 1);
        char wave[8];
        snprintf(wave, sizeof wave, "%d", cases[i].wave);
        setenv("FAKE_HIP_WAVE", wave, 1);
        mxa_backend_info b;
        mxa_device_info d;
        mxa_runtime *rt = probe(&b, &d);
        assert_true(b.present);
        assert_int_equal(b.device_count, 1);
        assert_string_equal(d.id, "hip:0");
        assert_string_equal(d.variant, cases[i].variant);
        assert_int_equal((d.caps & MXA_CAP_NATIVE_FP4) != 0, cases[i].native);
        assert_int_equal((d.caps & MXA_CAP_COOPMAT) != 0, cases[i].coop);
        assert_int_equal(d.score, cases[i].score);
        assert_non_null(strstr(d.score_reason, cases[i].variant));
        assert_non_null(strstr(d.capabilities, cases[i].arch)); /* the full gcnArchName reached us */
        assert_int_equal(d.compute_units, 304);
        assert_int_equal(d.subgroup_min, (uint32_t)cases[i].wave);
        assert_true(d.memory_bytes > 0);
        assert_true(d.default_bc > 0 && d.default_bc % 32 == 0);
        assert_true(d.variant_reason[0] != '\0');
        if (cases[i].wave == 32 && cases[i].coop) assert_non_null(strstr(d.capabilities, "wmma"));
        mxa_runtime_destroy(rt);
    }
}

static void test_env_switches(void **state)
{
    (void)state;
    static const struct {
        const char *arch, *var, *value, *variant, *reason;
    } cases[] = {
        {"gfx950", "MXA_DISABLE_NATIVE_FP4", "1", "hip-mfma-i8", "MXA_DISABLE_NATIVE_FP4"},
        {"gfx950", "MXA_DISABLE_COOPMAT", "1", "hip-scalar", "MXA_DISABLE_COOPMAT"},
        {"gfx942", "MXA_DISABLE_COOPMAT", "1", "hip-scalar", "MXA_DISABLE_COOPMAT"},
        {"gfx950", "MXA_KERNEL", "hip-scalar", "hip-scalar", "forced by MXA_KERNEL"},
        {"gfx950", "MXA_KERNEL", "mfma-i8", "hip-mfma-i8", "forced by MXA_KERNEL"},
        {"gfx942", "MXA_KERNEL", "hip-mfma-fp4", "hip-mfma-i8", "not supported on gfx942"},
        {"gfx942", "MXA_KERNEL", "vulkan-coopmat", "hip-mfma-i8", "int8 MFMA"},
        {"gfx950", "MXA_DISABLE", "hip", NULL, "disabled by MXA_DISABLE"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        use_fake(FAKE_HIP_PATH);
        setenv("FAKE_HIP_ARCH", cases[i].arch, 1);
        setenv(cases[i].var, cases[i].value, 1);
        mxa_backend_info b;
        mxa_device_info d;
        mxa_runtime *rt = probe(&b, &d);
        if (!cases[i].variant) {
            assert_false(b.present);
            assert_non_null(strstr(b.reason, cases[i].reason));
        } else {
            assert_string_equal(d.variant, cases[i].variant);
            if (!strstr(d.variant_reason, cases[i].reason)) fail_msg("case %zu: reason '%s'", i, d.variant_reason);
        }
        mxa_runtime_destroy(rt);
    }
}

/* Every HIP variant is a name MXA_KERNEL accepts (runtime/env.c lists them all). */
static void test_kernel_names_listed(void **state)
{
    (void)state;
    static const mxa_hip_variant all[] = {MXA_HIP_SCALAR, MXA_HIP_MFMA_I8, MXA_HIP_MFMA_FP4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        setenv("MXA_KERNEL", mxa_hip_variant_name(all[i]), 1);
        if (!mxa_env_kernel()) fail_msg("%s is not in mxa_env_kernel's list", mxa_hip_variant_name(all[i]));
    }
    unsetenv("MXA_KERNEL");
}

/* Garbage bytes from the runtime reach mxa_device_info (and mxa probe) as '?'. */
static void test_garbage_name(void **state)
{
    (void)state;
    use_fake(FAKE_HIP_PATH);
    setenv("FAKE_HIP_NAME", "MI\x1b]0;pwned\x07 \xff\xfe\xc3 \xc3\xa9", 1);
    setenv("FAKE_HIP_ARCH", "gfx942:\x1b[2J", 1);
    mxa_backend_info b;
    mxa_device_info d;
    mxa_runtime *rt = probe(&b, &d);
    assert_true(b.present);
    assert_string_equal(d.name, "MI?]0;pwned? ??? \xc3\xa9");
    assert_non_null(strstr(d.capabilities, "gfx942:?[2J"));
    mxa_runtime_destroy(rt);
}

static void test_attention_launches(void **state)
{
    (void)state;
    static float out[2 * 40 * 64];
    mxa_attention_info info;
    use_fake(FAKE_HIP_PATH);
    setenv("FAKE_HIP_ARCH", "gfx950:sramecc+:xnack-", 1);
    assert_int_equal(run_attention(MXA_RECIPE_MXATTENTION, 0, &info, out), MXA_OK);
    assert_string_equal(info.variant, "hip-mfma-fp4");
    assert_int_equal(info.bc, 128);
    assert_true(log_has("compile mxa_prep --gpu-architecture=gfx950:sramecc+:xnack- -O3"));
    assert_true(log_has("-ffp-contract=off"));
    assert_true(log_has("-DMXA_D=64 -DMXA_BC=128 -DMXA_VARIANT=2 -DMXA_MFMA_K16=1"));
    assert_true(log_has("-DMXA_EXTRAS=0 -DMXA_OUT=0")); /* the usual call: the build without the extras' loads */
    assert_true(log_has("launch mxa_prep_qk 80 1 1 64 args"));  /* one workgroup per Q row: 1*2*40 */
    assert_true(log_has("launch mxa_prep_qk 70 1 1 64 args"));  /* K rows: 1*1*70 */
    assert_true(log_has("launch mxa_prep_v 3 1 1 64 args"));    /* 64 columns x 3 token blocks / 64 */
    assert_true(log_has("launch mxa_attention 2 2 1 64 args")); /* ceil(40/32) x heads x batch */
    assert_int_equal(log_count("malloc"), log_count("free"));   /* no device memory leaks */

    /* fp32 recipe: the matrix-core variants cannot run it; the scalar one does, one row per workgroup. */
    use_fake(FAKE_HIP_PATH);
    setenv("FAKE_HIP_ARCH", "gfx950", 1);
    assert_int_equal(run_attention(MXA_RECIPE_FP32, 96, &info, out), MXA_OK);
    assert_string_equal(info.variant, "hip-scalar");
    assert_int_equal(info.bc, 96);
    assert_true(log_has("-DMXA_D=64 -DMXA_BC=96 -DMXA_VARIANT=0"));
    assert_true(log_has("launch mxa_attention 40 2 1 64 args"));

    /* bc above the MFMA tile: scalar too. */
    use_fake(FAKE_HIP_PATH);
    assert_int_equal(run_attention(MXA_RECIPE_MXATTENTION, 512, &info, out), MXA_OK);
    assert_string_equal(info.variant, "hip-scalar");

    /* gfx90a: int8 MFMA with K = 8. */
    use_fake(FAKE_HIP_PATH);
    setenv("FAKE_HIP_ARCH", "gfx90a", 1);
    assert_int_equal(run_attention(MXA_RECIPE_OCP_DIRECT, 64, &info, out), MXA_OK);
    assert_string_equal(info.variant, "hip-mfma-i8");
    assert_true(log_has("-DMXA_D=64 -DMXA_BC=64 -DMXA_VARIANT=1 -DMXA_MFMA_K16=0"));
}

int main(void)
{
    if (fake_begin()) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent_library), cmocka_unit_test(test_missing_symbol),
        cmocka_unit_test(test_no_devices),     cmocka_unit_test(test_device_count_cap),
        cmocka_unit_test(test_version_check),
        cmocka_unit_test(test_bad_arch_name),  cmocka_unit_test(test_probe_archs),
        cmocka_unit_test(test_env_switches),   cmocka_unit_test(test_attention_launches),
        cmocka_unit_test(test_kernel_names_listed),
        cmocka_unit_test(test_garbage_name),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fake_end();
    return failed;
}
