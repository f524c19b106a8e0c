/*
 * The CLI's shared helpers (tools/mxa/cli.c): how a library error is printed
 * (the place named once) and how integer and float options are parsed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/status.h"
#include "tools/mxa/cli.h"

/* Runs cli_library_error with the library's message `msg` and returns what it printed. */
static const char *library_error(const char *context, const char *msg)
{
    static char got[512];
    char path[] = "/tmp/mxa_test_cli_util_XXXXXX";
    const int fd = mkstemp(path), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0);
    fflush(stderr);
    dup2(fd, 2);
    mxa_fail(MXA_ERR_OUT_OF_MEMORY, "%s", msg);
    assert_int_equal(cli_library_error(context, MXA_ERR_OUT_OF_MEMORY), CLI_FAIL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    const ssize_t n = pread(fd, got, sizeof got - 1, 0);
    got[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return got;
}

static void test_library_error_names_the_place_once(void **state)
{
    (void)state;
    assert_string_equal(library_error("attention", "mxa_attention: out of memory"), "mxa: mxa_attention: out of memory\n");
    assert_string_equal(library_error("attention", "attention: scale -1 must be finite"),
                        "mxa: attention: scale -1 must be finite\n");
    assert_string_equal(library_error("attention", "attention (NVFP4): out of memory"),
                        "mxa: attention (NVFP4): out of memory\n");
    assert_string_equal(library_error("quantize", "mxa_quantize: out of memory"), "mxa: mxa_quantize: out of memory\n");
    assert_string_equal(library_error("runtime", "mxa_runtime_create: no memory"), "mxa: mxa_runtime_create: no memory\n");
    assert_string_equal(library_error("analyze: quantize", "mxa_quantize: out of memory"),
                        "mxa: analyze: mxa_quantize: out of memory\n");
    /* Different places: both said. */
    assert_string_equal(library_error("stats: fp32 attention", "mxa_attention: out of memory"),
                        "mxa: stats: fp32 attention: mxa_attention: out of memory\n");
    assert_string_equal(library_error("q.npy", "k: element 3 is NaN"), "mxa: q.npy: k: element 3 is NaN\n");
    assert_string_equal(library_error("attention", "attentions: x"), "mxa: attention: attentions: x\n");
    assert_string_equal(library_error("dequantize", "mxa_quantize: x"), "mxa: dequantize: mxa_quantize: x\n");
}

static void test_int_and_float_options(void **state)
{
    (void)state;
    long v = 0;
    float f = 0.0f;
    assert_int_equal(cli_int("--bc", "64", 32, 4096, 32, &v), CLI_OK);
    assert_int_equal(v, 64);
    /* Blanks on either side are refused alike (strtol skipped leading ones only). */
    const char *blanks[] = {" 64", "64 ", "\t64", "64\n", " 64 "};
    for (size_t i = 0; i < sizeof blanks / sizeof blanks[0]; i++) {
        assert_int_equal(cli_int("--bc", blanks[i], 32, 4096, 32, &v), CLI_USAGE);
        assert_int_equal(cli_positive_float("--scale", blanks[i], &f), CLI_USAGE);
    }
    /* A positive float32 subnormal is a positive scale. */
    assert_int_equal(cli_positive_float("--scale", "1e-40", &f), CLI_OK);
    assert_true(f > 0.0f && f < 1.2e-38f && fpclassify(f) == FP_SUBNORMAL);
    assert_int_equal(cli_positive_float("--scale", "1.401298464324817e-45", &f), CLI_OK);
    assert_true(f > 0.0f);
    assert_int_equal(cli_positive_float("--scale", "1e-50", &f), CLI_USAGE); /* rounds to 0 */
    assert_int_equal(cli_positive_float("--scale", "1e39", &f), CLI_USAGE);
    assert_int_equal(cli_positive_float("--scale", "-1e-40", &f), CLI_USAGE);
    assert_int_equal(cli_positive_float("--scale", "0.125", &f), CLI_OK);
    assert_true(f == 0.125f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_library_error_names_the_place_once),
        cmocka_unit_test(test_int_and_float_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
