/* Helpers of the HIP host-side tests: the test double's environment and log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hip_fake_util.h"

char fake_tmpdir[256], fake_logpath[300];

static const char *const fake_vars[] = {"FAKE_HIP_DEVICES", "FAKE_HIP_ARCH", "FAKE_HIP_NAME", "FAKE_HIP_WAVE",
                                        "FAKE_HIP_RUNTIME_VERSION", "FAKE_HIP_INIT_ERROR", "FAKE_HIP_OOM",
                                        "FAKE_HIPRTC_FAIL", "MXA_KERNEL", "MXA_DISABLE_COOPMAT",
                                        "MXA_DISABLE_NATIVE_FP4", "MXA_DISABLE", "MXA_DEVICE"};

/* Points the backend at the double (or `lib`), with a fresh log and cache. */
void use_fake(const char *lib)
{
    for (size_t i = 0; i < sizeof fake_vars / sizeof fake_vars[0]; i++) unsetenv(fake_vars[i]);
    setenv("MXA_HIP_LIBRARY", lib, 1);
    setenv("MXA_HIPRTC_LIBRARY", FAKE_HIP_PATH, 1);
    setenv("MXA_CACHE_DIR", fake_tmpdir, 1);
    setenv("FAKE_HIP_LOG", fake_logpath, 1);
    FILE *f = fopen(fake_logpath, "w");
    if (f) fclose(f);
}

int log_count(const char *prefix)
{
    FILE *f = fopen(fake_logpath, "r");
    char line[1024];
    int n = 0;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, prefix, strlen(prefix)) == 0) n++;
    fclose(f);
    return n;
}

int log_has(const char *text)
{
    FILE *f = fopen(fake_logpath, "r");
    char line[1024];
    int found = 0;
    if (!f) return 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, text) != NULL;
    fclose(f);
    return found;
}

void hip_info(mxa_runtime *rt, mxa_backend_info *info)
{
    int n = 0;
    assert_int_equal(mxa_backend_count(rt, &n), MXA_OK);
    for (int i = 0; i < n; i++) {
        assert_int_equal(mxa_backend_get_info(rt, i, info), MXA_OK);
        if (strcmp(info->name, "hip") == 0) return;
    }
    fail_msg("no hip backend slot");
}

/* Probes and returns the hip backend's info (and first device's, if any). */
mxa_runtime *probe(mxa_backend_info *b, mxa_device_info *d)
{
    mxa_runtime *rt = NULL;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    hip_info(rt, b);
    assert_true(b->built);
    if (d) {
        int n = 0;
        memset(d, 0, sizeof *d);
        assert_int_equal(mxa_device_count(rt, &n), MXA_OK);
        for (int i = 0; i < n; i++) {
            assert_int_equal(mxa_device_get_info(rt, i, d), MXA_OK);
            if (strcmp(d->backend, "hip") == 0) break;
        }
    }
    return rt;
}

/* Runs a small attention on hip:0; returns the status. */
mxa_status run_attention(mxa_recipe recipe, int bc, mxa_attention_info *info, float *out)
{
    enum { B = 1, H = 2, HKV = 1, NQ = 40, NK = 70, D = 64 };
    static float q[B * H * NQ * D], k[B * HKV * NK * D], v[B * HKV * NK * D], lse[B * H * NQ];
    for (int i = 0; i < B * H * NQ * D; i++) q[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < B * HKV * NK * D; i++) k[i] = v[i] = (float)((i * 11) % 13) / 13.0f - 0.5f;
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_attention_desc desc;
    mxa_tensor tq, tk, tv, to, tl;
    mxa_status st = mxa_runtime_create(NULL, &rt);
    if (st || (st = mxa_device_open(rt, "hip:0", &dev))) goto out;
    mxa_attention_desc_init(&desc, recipe);
    desc.bc = bc;
    mxa_tensor_init(&tq, MXA_F32, B, H, NQ, D, q);
    mxa_tensor_init(&tk, MXA_F32, B, HKV, NK, D, k);
    mxa_tensor_init(&tv, MXA_F32, B, HKV, NK, D, v);
    mxa_tensor_init(&to, MXA_F32, B, H, NQ, D, out);
    mxa_tensor_init(&tl, MXA_F32, B, H, NQ, 1, lse);
    st = mxa_attention(dev, &desc, &tq, &tk, &tv, &to, &tl, info);
out:
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    return st;
}

int fake_begin(void)
{
    snprintf(fake_tmpdir, sizeof fake_tmpdir, "/tmp/mxa-hip-test-XXXXXX");
    if (!mkdtemp(fake_tmpdir)) return 1;
    snprintf(fake_logpath, sizeof fake_logpath, "%s/fake.log", fake_tmpdir);
    return 0;
}

void fake_end(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fake_tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", fake_tmpdir);
}
