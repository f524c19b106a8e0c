/*
 * HIP backend against the test double: hiprtc failures reach the caller with
 * the compiler's log, out-of-memory is a clean MXA_ERR_OUT_OF_MEMORY, the
 * code-object cache is hit, missed, and survives corruption, quantize launches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hip_fake_util.h"

static float out[2 * 40 * 64];

static void test_compile_failure(void **state)
{
    (void)state;
    mxa_attention_info info;
    use_fake(FAKE_HIP_PATH);
    setenv("FAKE_HIPRTC_FAIL", "1", 1);
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) out[i] = 7.0f;
    assert_int_equal(run_attention(MXA_RECIPE_MXATTENTION, 64, &info, out), MXA_ERR_BACKEND);
    const char *msg = mxa_last_error_message();
    if (!strstr(msg, "fake failure for the test") || !strstr(msg, "mxa_prep") || !strstr(msg, "gfx942"))
        fail_msg("message lacks the compiler log: %s", msg);
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) assert_true(out[i] == 7.0f); /* untouched */
    assert_int_equal(log_count("launch"), 0);
}

static void test_out_of_memory(void **state)
{
    (void)state;
    mxa_attention_info info;
    use_fake(FAKE_HIP_PATH);
    setenv("FAKE_HIP_OOM", "1", 1);
    assert_int_equal(run_attention(MXA_RECIPE_MXATTENTION, 64, &info, out), MXA_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(mxa_last_error_message(), "hipMalloc"));
    assert_int_equal(log_count("launch"), 0);

    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_buffer *buf = NULL;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "hip:0", &dev), MXA_OK);
    assert_int_equal(mxa_buffer_create(dev, 1 << 20, &buf), MXA_ERR_OUT_OF_MEMORY);
    assert_null(buf);
    assert_non_null(strstr(mxa_last_error_message(), "1048576 bytes"));
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
}

/* The cache files of the HIP backend in the test's cache directory. */
static int cache_files(char paths[][512], int max)
{
    DIR *d = opendir(fake_tmpdir);
    struct dirent *e;
    int n = 0;
    if (!d) return 0;
    while ((e = readdir(d)) && n < max)
        if (strncmp(e->d_name, "hip-code-object-", 16) == 0)
            snprintf(paths[n++], 512, "%s/%s", fake_tmpdir, e->d_name);
    closedir(d);
    return n;
}

static void remove_cache(void)
{
    char paths[16][512];
    int n = cache_files(paths, 16);
    for (int i = 0; i < n; i++) remove(paths[i]);
}

static void test_cache(void **state)
{
    (void)state;
    mxa_attention_info info;
    char paths[16][512];
    use_fake(FAKE_HIP_PATH);
    remove_cache();
    /* Miss: both programs compiled and stored. */
    assert_int_equal(run_attention(MXA_RECIPE_MXATTENTION, 64, &info, out), MXA_OK);
    assert_int_equal(log_count("compile"), 2);
    assert_int_equal(cache_files(paths, 16), 2);
    /* Hit: a new runtime loads both from disk, compiling nothing. */
    use_fake(FAKE_HIP_PATH);
    assert_int_equal(run_attention(MXA_RECIPE_MXATTENTION, 64, &info, out), MXA_OK);
    assert_int_equal(log_count("compile"), 0);
    assert_int_equal(log_count("load"), 2);
    /* Another tile size is another code object; the prep one is shared. */
    use_fake(FAKE_HIP_PATH);
    assert_int_equal(run_attention(MXA_RECIPE_MXATTENTION, 128, &info, out), MXA_OK);
    assert_int_equal(log_count("compile"), 1);
    assert_int_equal(cache_files(paths, 16), 3);
    /* Another architecture: nothing from the cache applies. */
    use_fake(FAKE_HIP_PATH);
    setenv("FAKE_HIP_ARCH", "gfx90a", 1);
    assert_int_equal(run_attention(MXA_RECIPE_MXATTENTION, 64, &info, out), MXA_OK);
    assert_int_equal(log_count("compile"), 2);
    /* Corruption: flip a byte in the middle and truncate another; both are rebuilt. */
    remove_cache();
    use_fake(FAKE_HIP_PATH);
    assert_int_equal(run_attention(MXA_RECIPE_MXATTENTION, 64, &info, out), MXA_OK);
    int n = cache_files(paths, 16);
    assert_int_equal(n, 2);
    FILE *f = fopen(paths[0], "r+b");
    assert_non_null(f);
    fseek(f, -3, SEEK_END);
    int c = fgetc(f);
    fseek(f, -3, SEEK_END);
    fputc(c ^ 0x5a, f);
    fclose(f);
    f = fopen(paths[1], "r+b");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_int_equal(truncate(paths[1], size / 2), 0);
    use_fake(FAKE_HIP_PATH);
    assert_int_equal(run_attention(MXA_RECIPE_MXATTENTION, 64, &info, out), MXA_OK);
    assert_int_equal(log_count("compile"), 2);
    /* ... and stored again: the next run hits. */
    use_fake(FAKE_HIP_PATH);
    assert_int_equal(run_attention(MXA_RECIPE_MXATTENTION, 64, &info, out), MXA_OK);
    assert_int_equal(log_count("compile"), 0);
}

static void test_quantize(void **state)
{
    (void)state;
    enum { ROWS = 3, COLS = 100, NB = 4 };
    static float x[ROWS * COLS];
    uint8_t codes[ROWS * NB * 16], scales[ROWS * NB];
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_tensor t;
    use_fake(FAKE_HIP_PATH);
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "hip:0", &dev), MXA_OK);
    mxa_tensor_init(&t, MXA_F32, 1, 1, ROWS, COLS, x);
    assert_int_equal(mxa_quantize(dev, &t, mxa_rule_uos(), codes, scales), MXA_OK);
    assert_true(log_has("launch mxa_quantize_rows 1 1 1 64 args")); /* 12 blocks, one workgroup */
    assert_int_equal(log_count("malloc"), 3);                       /* input, codes, scales */
    assert_int_equal(log_count("free"), 3);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
}

int main(void)
{
    if (fake_begin()) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compile_failure),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_quantize),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fake_end();
    return failed;
}
