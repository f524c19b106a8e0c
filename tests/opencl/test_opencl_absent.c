/*
 * Without an OpenCL library or ICD the backend is absent with a reason and
 * the runtime still works. ctest runs this once with OCL_ICD_VENDORS pointing
 * nowhere; the test itself also points MXA_OPENCL_LIBRARY nowhere. The ICD
 * pre-check (no ICD registered: libOpenCL is not even loaded) is tested on
 * fake vendor directories.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <unistd.h>

#include "backends/opencl/cl_internal.h"
#include "runtime/env.h"
#include "fstree.h"
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
    /* refused before any dlopen: the ICD loader was never mapped */
    assert_null(dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD));
}

static const char *const icd_vars[] = {"OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "OPENCL_VENDOR_PATH"};

/* mxa_cl_icd_registered on a fake tree: vendors/ is the default directory. */
static void test_icd_check(void **state)
{
    (void)state;
    char saved[3][512];
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(icd_vars[i]);
        snprintf(saved[i], sizeof saved[i], "%s", v ? v : "");
    }
    const char *root = fst_begin();
    assert_non_null(root);
    assert_int_equal(fst_mkdir("vendors"), 0);
    assert_int_equal(fst_write("empty/readme.txt", "no icd here"), 0);
    assert_int_equal(fst_mkdir("fake.icd"), 0); /* a directory named like an ICD registers nothing */
    assert_int_equal(fst_write("other/pocl.icd", "libpocl.so.2\n"), 0);
    assert_int_equal(symlink("/nonexistent/x.so", fst_path("empty/dangling.icd")), 0);
    char vendors[512], reason[MXA_REASON_LEN], want[700];
    snprintf(vendors, sizeof vendors, "%s", fst_path("vendors"));
    static const struct {
        const char *file;    /* written into vendors/ first, or NULL */
        int var;             /* index into icd_vars, or -1 */
        const char *value;   /* "@rel" is a path inside the tree */
        int expect;
    } cases[] = {
        {NULL, -1, NULL, 0},
        {"readme.txt", -1, NULL, 0},
        {"nvidia.icd", -1, NULL, 1},
        {NULL, 0, "@other", 1},
        {NULL, 0, "@empty", 0},             /* replaces vendors/, even though vendors/ has an .icd below */
        {NULL, 0, "@other/pocl.icd", 1},
        {NULL, 0, "@fake.icd", 0},
        {NULL, 0, "/nonexistent", 0},
        {NULL, 0, "/nonexistent/x.icd", 0},
        {NULL, 0, "missing.icd", 0},
        {NULL, 0, "libpocl.so.2", 1},       /* a bare library name: only dlopen could tell */
        {NULL, 1, "/opt/x/libfoo.so", 1},
        {NULL, 2, "@empty:@other", 1},
        {NULL, 2, "@empty", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int v = 0; v < 3; v++) unsetenv(icd_vars[v]);
        if (cases[i].file) {
            char rel[64];
            snprintf(rel, sizeof rel, "vendors/%s", cases[i].file);
            assert_int_equal(fst_write(rel, "lib.so\n"), 0);
        }
        char value[1100] = "";
        if (cases[i].var >= 0) {
            for (const char *p = cases[i].value; *p;) { /* expand each '@rel' of a ':' list */
                size_t n = strcspn(p, ":");
                char part[256];
                snprintf(part, sizeof part, "%.*s", (int)n, p);
                size_t len = strlen(value);
                snprintf(value + len, sizeof value - len, "%s%s", len ? ":" : "", part[0] == '@' ? fst_path(part + 1) : part);
                p += n + (p[n] == ':');
            }
            setenv(icd_vars[cases[i].var], value, 1);
        }
        reason[0] = '\0';
        const int got = mxa_cl_icd_registered(vendors, reason, sizeof reason);
        if (got != cases[i].expect) fail_msg("case %zu (%s): got %d, reason '%s'", i, value, got, reason);
        if (!got && strncmp(reason, "no OpenCL ICD registered (", 26) != 0) fail_msg("case %zu: reason '%s'", i, reason);
        if (i == 0) {
            snprintf(want, sizeof want, "no OpenCL ICD registered (%s, OCL_ICD_VENDORS)", vendors);
            assert_string_equal(reason, want);
        }
        if (cases[i].file) unlink(fst_path("vendors/nvidia.icd")), unlink(fst_path("vendors/readme.txt"));
    }
    fst_end();
    for (int i = 0; i < 3; i++) {
        if (saved[i][0]) setenv(icd_vars[i], saved[i], 1);
        else unsetenv(icd_vars[i]);
    }
}

static void test_no_library(void **state)
{
    (void)state;
    setenv("MXA_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1", 1);
    expect_absent();
    unsetenv("MXA_OPENCL_LIBRARY");
}

/* Every OpenCL variant is a name MXA_KERNEL accepts (runtime/env.c lists them all). */
static void test_kernel_names_listed(void **state)
{
    (void)state;
    for (int v = 0; v < CL_VARIANT_COUNT; v++) {
        setenv("MXA_KERNEL", mxa_cl_variant_names[v], 1);
        if (!mxa_env_kernel()) fail_msg("%s is not in mxa_env_kernel's list", mxa_cl_variant_names[v]);
    }
    unsetenv("MXA_KERNEL");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_library),
        cmocka_unit_test(test_no_icd),
        cmocka_unit_test(test_icd_check),
        cmocka_unit_test(test_kernel_names_listed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
