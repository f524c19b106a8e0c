/*
 * What reaches the driver's compiler, on a real driver (CI: PoCL): cached binaries and
 * MXA_OPENCL_OPTIONS. A cache entry whose payload was altered and then given a valid
 * checksum (as a user or a tool rewriting it would) must never make a run fail: a binary
 * that lacks a kernel is deleted and rebuilt from source (before, every later run failed
 * with CL_INVALID_KERNEL_NAME until the cache was cleared). Build options that change the
 * kernels' contract are refused with a warning (before, -DMXA_BC=7 silently gave zeros).
 * A binary that crashes the driver (PoCL 3.1 asserts or segfaults on a truncated one with a
 * valid checksum) can take down the run that hands it over, but not the next one.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cl_test_common.h"
#include "fstree.h"
#include "runtime/cache.h"
#include "testutil.h"

#define KIND "opencl-binary"

static char cache_dir[256];

static int setup(void **state)
{
    (void)state;
    const char *root = fst_begin();
    if (!root) return -1;
    snprintf(cache_dir, sizeof cache_dir, "%s", root);
    setenv("MXA_CACHE_DIR", cache_dir, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return fst_end();
}

/* One attention call on a fresh runtime and device, checked against the reference at the
 * device's Bc (the same bound as test_opencl_attention). Returns 0 when there is no device. */
static int attention_matches(void)
{
    mxa_runtime *rt;
    mxa_device *dev;
    if (!clt_open(NULL, &rt, &dev)) return 0;
    enum { H = 2, N = 80, D = 64, EL = H * N * D };
    float *q = malloc(EL * 4), *k = malloc(EL * 4), *v = malloc(EL * 4), *o = malloc(EL * 4), *ref = malloc(EL * 4);
    assert_true(q && k && v && o && ref);
    tu_rng r = {7};
    tu_fill_attention(&r, q, k, v, 1, H, H, N, N, D);
    mxa_tensor tq = tu_tensor(q, 1, H, N, D), tk = tu_tensor(k, 1, H, N, D), tv = tu_tensor(v, 1, H, N, D),
               to = tu_tensor(o, 1, H, N, D), tr = tu_tensor(ref, 1, H, N, D);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    mxa_attention_info info;
    const mxa_status st = mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, &info);
    if (st) printf("# error: %s\n", mxa_last_error_message());
    assert_int_equal(st, MXA_OK);
    assert_int_equal(mxa_reference_attention(&desc, info.bc, &tq, &tk, &tv, &tr, NULL, NULL), MXA_OK);
    const double e = tu_nmse(o, ref, EL);
    printf("# %s bc %d: nmse %.3g\n", info.variant, info.bc, e);
    assert_true(e <= 1e-5);
    free(q), free(k), free(v), free(o), free(ref);
    clt_close(rt, dev);
    return 1;
}

/* A cache entry read whole: its key and payload. */
typedef struct entry {
    char path[1200];
    char *key;
    unsigned char *payload;
    size_t size;
} entry;

/* The names of the cache's opencl-binary entries, listed once (rebuilds rename over them). */
static int list_entries(char names[][256], int max)
{
    DIR *d = opendir(cache_dir);
    assert_non_null(d);
    struct dirent *de;
    int n = 0;
    while (n < max && (de = readdir(d)))
        if (strncmp(de->d_name, KIND "-", sizeof KIND) == 0 && strstr(de->d_name, ".tmp") == NULL)
            snprintf(names[n++], 256, "%s", de->d_name);
    closedir(d);
    return n;
}

static void read_entry(const char *name, entry *e)
{
    snprintf(e->path, sizeof e->path, "%s/%.255s", cache_dir, name);
    FILE *f = fopen(e->path, "rb");
    assert_non_null(f);
    unsigned char hdr[32]; /* magic, version, key_len:u32 at 12, payload_size:u64 at 16, checksum */
    assert_int_equal(fread(hdr, 1, sizeof hdr, f), sizeof hdr);
    uint32_t key_len;
    uint64_t size;
    memcpy(&key_len, hdr + 12, 4);
    memcpy(&size, hdr + 16, 8);
    e->key = calloc(1, key_len + 1);
    e->payload = malloc((size_t)size);
    e->size = (size_t)size;
    assert_true(e->key && e->payload);
    assert_int_equal(fread(e->key, 1, key_len, f), key_len);
    assert_int_equal(fread(e->payload, 1, e->size, f), e->size);
    fclose(f);
}

static void free_entry(entry *e)
{
    free(e->key);
    free(e->payload);
}

/* Changes every occurrence of `name` in the payload (its last letter); 0 if none. */
static int rename_kernel(entry *e, const char *name)
{
    const size_t n = strlen(name);
    int hits = 0;
    for (size_t i = 0; i + n <= e->size; i++)
        if (memcmp(e->payload + i, name, n) == 0) {
            e->payload[i + n - 1] ^= 1;
            hits++;
        }
    return hits;
}

static const char *const kernels[] = {"mxa_attention_tiled", "mxa_attention_mma", "mxa_prep_qk", "mxa_prep_v",
                                      "mxa_prep_qk_i8", "mxa_prep_v_i8", "mxa_quantize_rows"};

/* Each kernel name renamed in turn inside its binary, with a valid checksum: the next run
 * still matches the reference, and the entry was replaced by a good one. */
static void test_binary_without_a_kernel_is_rebuilt(void **state)
{
    (void)state;
    if (!attention_matches()) skip(); /* fills the cache */
    char names[16][256];
    const int count = list_entries(names, 16);
    int tried = 0;
    for (int n = 0; n < count; n++)
        for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++) {
            entry forged;
            read_entry(names[n], &forged);
            if (!rename_kernel(&forged, kernels[k])) {
                free_entry(&forged);
                continue;
            }
            /* the cache's own store gives the altered payload a valid checksum */
            assert_int_equal(mxa_cache_store(KIND, forged.key, forged.payload, forged.size), MXA_OK);
            printf("# %s: %s renamed\n", names[n], kernels[k]);
            tried++;
            assert_true(attention_matches());
            assert_true(attention_matches()); /* and the run after it */
            void *data;
            size_t size;
            assert_int_equal(mxa_cache_load(KIND, forged.key, &data, &size), MXA_OK);
            assert_false(size == forged.size && memcmp(data, forged.payload, size) == 0);
            free(data);
            free_entry(&forged);
        }
    printf("# %d forged entries\n", tried);
    assert_true(tried >= 2); /* at least the attention and the prep kernels */
}

extern char **environ;

/* Runs one attention call in a child process (this program with --attention-child) and
 * says how it ended: the child may be killed by the driver. */
static void attention_in_child(void)
{
    char self[1024];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = '\0';
    char *argv[] = {self, "--attention-child", NULL};
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, self, NULL, NULL, argv, environ), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) printf("# the child was killed by signal %d\n", WTERMSIG(status));
    else printf("# the child exited with %d\n", WEXITSTATUS(status));
}

static void child_attention(void **state)
{
    (void)state;
    alarm(120);
    assert_true(attention_matches());
}

/* Each binary truncated to half, with a valid checksum: the run that reads it may crash in
 * the driver (in a child here), but the entry is gone by then, so the next run rebuilds it
 * and matches the reference (before, every later run crashed the same way). */
static void test_crashing_binary_is_dropped(void **state)
{
    (void)state;
    if (!attention_matches()) skip();
    char names[16][256];
    const int count = list_entries(names, 16);
    assert_true(count >= 2);
    for (int n = 0; n < count; n++) {
        entry forged;
        read_entry(names[n], &forged);
        forged.size /= 2;
        assert_int_equal(mxa_cache_store(KIND, forged.key, forged.payload, forged.size), MXA_OK);
        printf("# %s truncated to %zu bytes\n", names[n], forged.size);
        attention_in_child();
        assert_true(attention_matches());
        void *data;
        size_t size;
        assert_int_equal(mxa_cache_load(KIND, forged.key, &data, &size), MXA_OK); /* rebuilt */
        assert_false(size == forged.size && memcmp(data, forged.payload, size) == 0);
        free(data);
        free_entry(&forged);
    }
}

static struct {
    int warnings;
    char last[2048];
} logged;

static void capture(mxa_log_level level, const char *message, void *user)
{
    (void)user;
    if (level > MXA_LOG_WARN || !strstr(message, "MXA_OPENCL_OPTIONS")) return;
    logged.warnings++;
    snprintf(logged.last, sizeof logged.last, "%s", message);
}

/* Whether some cache entry was built with `option` (the key ends with the build options). */
static int entry_built_with(const char *option)
{
    char names[16][256];
    const int count = list_entries(names, 16);
    int found = 0;
    for (int n = 0; n < count; n++) {
        entry e;
        read_entry(names[n], &e);
        found |= strstr(e.key, option) != NULL;
        free_entry(&e);
    }
    return found;
}

/* Options that would change what the kernels compute are refused, naming the variable, and
 * attention still matches the reference; a known-safe option reaches the compiler. */
static void test_contract_options_refused(void **state)
{
    (void)state;
    /* each value and the option its warning must name */
    static const char *const refused[][2] = {
        {"-DMXA_BC=7", "-DMXA_BC=7"}, {"-UMXA_D", "-UMXA_D"}, {"-I.", "-I."},
        {"-cl-fast-relaxed-math", "-cl-fast-relaxed-math"}, {"-cl-opt-disable -DMXA_D=32", "-DMXA_D=32"},
        {"-cl-nv-maxrregcount=x", "-cl-nv-maxrregcount=x"}};
    mxa_log_set_callback(capture, NULL);
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        setenv("MXA_OPENCL_OPTIONS", refused[i][0], 1);
        logged.warnings = 0;
        printf("# MXA_OPENCL_OPTIONS=%s\n", refused[i][0]);
        const int ran = attention_matches();
        unsetenv("MXA_OPENCL_OPTIONS");
        if (!ran) {
            mxa_log_set_callback(NULL, NULL);
            skip();
        }
        if (logged.warnings != 1) fail_msg("expected one MXA_OPENCL_OPTIONS warning, got %d", logged.warnings);
        assert_non_null(strstr(logged.last, refused[i][1]));
        assert_false(entry_built_with(refused[i][1]));
    }
    setenv("MXA_OPENCL_OPTIONS", "-cl-opt-disable", 1);
    logged.warnings = 0;
    assert_true(attention_matches());
    unsetenv("MXA_OPENCL_OPTIONS");
    mxa_log_set_callback(NULL, NULL);
    assert_int_equal(logged.warnings, 0);
    assert_true(entry_built_with(" -cl-opt-disable"));
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--attention-child") == 0) {
        const struct CMUnitTest child[] = {cmocka_unit_test(child_attention)};
        return cmocka_run_group_tests(child, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_binary_without_a_kernel_is_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crashing_binary_is_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_contract_options_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
