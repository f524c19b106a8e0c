/*
 * Loading Vulkan (issue 15): the driver-manifest check made before anything
 * is dlopened (fake trees), and loaders that are not what they claim (test
 * doubles built from fake_vulkan.c): no vkGetInstanceProcAddr, one that
 * returns NULL for everything or for one entry point mxa calls. Each loader
 * scenario runs in a child process, because volk's pointers are per process
 * and because the defect was a crash: the parent sees a signal as a failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/vulkan/vk_common.h"
#include "fstree.h"
#include "mxa/mxa.h"
#include "runtime/env.h"

static const char *const vk_vars[] = {"VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES", "XDG_CONFIG_HOME",
                                      "XDG_CONFIG_DIRS", "XDG_DATA_HOME",    "XDG_DATA_DIRS",       "HOME"};
#define NVARS (sizeof vk_vars / sizeof vk_vars[0])

/* Sets `name` to `value` with each ':'-separated "@rel" made a path in the tree. */
static void set_tree_env(const char *name, const char *value)
{
    char out[2048] = "";
    for (const char *p = value; *p;) {
        const size_t n = strcspn(p, ":"), len = strlen(out);
        char part[256];
        snprintf(part, sizeof part, "%.*s", (int)n, p);
        snprintf(out + len, sizeof out - len, "%s%s", len ? ":" : "", part[0] == '@' ? fst_path(part + 1) : part);
        p += n + (p[n] == ':');
    }
    setenv(name, out, 1);
}

static void test_manifest_search(void **state)
{
    (void)state;
    static const struct {
        const char *files[2]; /* manifests (or other files) written into the tree */
        const char *env[2];   /* "NAME=value" */
        int expect;
        const char *reason;   /* expected reason when absent (tree paths not expanded) */
    } cases[] = {
        {{NULL}, {NULL}, 0, "no Vulkan driver manifest (vulkan/icd.d/*.json) found"},
        {{"usr/share/vulkan/icd.d/lvp_icd.x86_64.json"}, {NULL}, 1, NULL},
        {{"usr/local/share/vulkan/icd.d/a.json"}, {NULL}, 1, NULL},
        {{"etc/vulkan/icd.d/nvidia_icd.json"}, {NULL}, 1, NULL},
        {{"etc/xdg/vulkan/icd.d/a.json"}, {NULL}, 1, NULL},
        {{"usr/share/vulkan/icd.d/README.txt", "usr/share/vulkan/a.json"}, {NULL}, 0, "found"},
        {{"home/.local/share/vulkan/icd.d/a.json"}, {NULL}, 1, NULL},
        {{"home/.config/vulkan/icd.d/a.json"}, {NULL}, 1, NULL},
        {{"d/vulkan/icd.d/a.json"}, {"XDG_DATA_HOME=@d"}, 1, NULL},
        {{"c2/vulkan/icd.d/a.json"}, {"XDG_CONFIG_DIRS=@c1:@c2"}, 1, NULL},
        {{"s/vulkan/icd.d/a.json"}, {"XDG_DATA_DIRS=/nonexistent:@s"}, 1, NULL},
        {{"x/nv.json"}, {"VK_DRIVER_FILES=@x/nv.json"}, 1, NULL},
        {{"x/nv.json"}, {"VK_DRIVER_FILES=@x"}, 1, NULL},
        {{"usr/share/vulkan/icd.d/lvp.json"},
         {"VK_DRIVER_FILES=/nonexistent/icd.json"},
         0,
         "found: VK_DRIVER_FILES=/nonexistent/icd.json names none"},
        {{"usr/share/vulkan/icd.d/lvp.json"},
         {"VK_ICD_FILENAMES=/nonexistent/icd.json"},
         0,
         "found: VK_ICD_FILENAMES=/nonexistent/icd.json names none"},
        {{"x/nv.json"}, {"VK_DRIVER_FILES=/nonexistent/icd.json", "VK_ADD_DRIVER_FILES=@x/nv.json"}, 1, NULL},
    };
    char saved[NVARS][1024];
    int had[NVARS];
    for (size_t v = 0; v < NVARS; v++) {
        const char *s = getenv(vk_vars[v]);
        had[v] = s != NULL;
        snprintf(saved[v], sizeof saved[v], "%s", s ? s : "");
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *root = fst_begin();
        assert_non_null(root);
        for (size_t v = 0; v < NVARS; v++) unsetenv(vk_vars[v]);
        set_tree_env("HOME", "@home");
        for (int f = 0; f < 2 && cases[i].files[f]; f++) assert_int_equal(fst_write(cases[i].files[f], "{}\n"), 0);
        for (int e = 0; e < 2 && cases[i].env[e]; e++) {
            char name[64];
            const char *eq = strchr(cases[i].env[e], '=');
            snprintf(name, sizeof name, "%.*s", (int)(eq - cases[i].env[e]), cases[i].env[e]);
            set_tree_env(name, eq + 1);
        }
        char reason[MXA_REASON_LEN] = "";
        const int got = vk_driver_manifest_found(root, reason, sizeof reason);
        if (got != cases[i].expect) fail_msg("case %zu: got %d, reason '%s'", i, got, reason);
        if (!got && (strncmp(reason, "no Vulkan driver manifest (vulkan/icd.d/*.json) found", 53) != 0 ||
                     !strstr(reason, cases[i].reason)))
            fail_msg("case %zu: reason '%s'", i, reason);
        fst_end();
    }
    for (size_t v = 0; v < NVARS; v++) {
        if (had[v]) setenv(vk_vars[v], saved[v], 1);
        else unsetenv(vk_vars[v]);
    }
}

/* In a child: the Vulkan backend must be absent with `fragment` in its reason,
 * "vulkan:0" must not open, and (if no_loader) libvulkan.so.1 must not be mapped. */
static int child_expect_absent(const char *fragment, int no_loader)
{
    mxa_runtime *rt = NULL;
    int n = 0, ok = 0;
    if (mxa_runtime_create(NULL, &rt) != MXA_OK || mxa_backend_count(rt, &n) != MXA_OK) return 2;
    for (int i = 0; i < n; i++) {
        mxa_backend_info bi;
        if (mxa_backend_get_info(rt, i, &bi) != MXA_OK) return 3;
        if (strcmp(bi.name, "vulkan") != 0) continue;
        fprintf(stderr, "# vulkan: present %d, reason: %s\n", bi.present, bi.reason);
        ok = !bi.present && bi.device_count == 0 && strstr(bi.reason, fragment) != NULL;
    }
    mxa_device *dev = NULL;
    if (mxa_device_open(rt, "vulkan:0", &dev) != MXA_ERR_NOT_FOUND || dev) ok = 0;
    mxa_runtime_destroy(rt);
    if (no_loader && dlopen("libvulkan.so.1", RTLD_NOW | RTLD_NOLOAD)) {
        fprintf(stderr, "# libvulkan.so.1 was loaded\n");
        ok = 0;
    }
    return ok ? 0 : 1;
}

typedef struct scenario {
    const char *library; /* MXA_VULKAN_LIBRARY, or NULL */
    const char *omit;    /* FAKE_VK_OMIT */
    int null_gipa;       /* FAKE_VK_NULL */
    const char *driver_files;
    const char *fragment;
    int no_loader;
} scenario;

/* Runs one scenario in a child; 0 when it passed (every failure is printed, so one run shows them all). */
static int run_scenario(const scenario *s)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        /* cmocka catches crashes and carries on: the child must die of them */
        static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
        if (s->library) setenv("MXA_VULKAN_LIBRARY", s->library, 1);
        else unsetenv("MXA_VULKAN_LIBRARY");
        if (s->omit) setenv("FAKE_VK_OMIT", s->omit, 1);
        if (s->null_gipa) setenv("FAKE_VK_NULL", "1", 1);
        if (s->driver_files) setenv("VK_DRIVER_FILES", s->driver_files, 1);
        _exit(child_expect_absent(s->fragment, s->no_loader));
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    if (WIFSIGNALED(status)) print_error("'%s' (omit %s): killed by signal %d\n", s->fragment, s->omit, WTERMSIG(status));
    else print_error("'%s' (omit %s): exit %d\n", s->fragment, s->omit, WEXITSTATUS(status));
    return 1;
}

static void test_bad_loaders(void **state)
{
    (void)state;
    static const scenario cases[] = {
        {NULL, NULL, 0, "/nonexistent/icd.json", "no Vulkan driver manifest (vulkan/icd.d/*.json) found", 1},
        {"/nonexistent/libvulkan.so.1", NULL, 0, NULL, "no Vulkan loader (/nonexistent/libvulkan.so.1) could be loaded", 0},
        {FAKE_VULKAN_NOGIPA_PATH, NULL, 0, NULL, "lacks vkGetInstanceProcAddr (not a Vulkan loader)", 0},
        {FAKE_VULKAN_PATH, NULL, 1, NULL, "vkGetInstanceProcAddr gives no vkCreateInstance", 0},
        {FAKE_VULKAN_PATH, "vkCreateInstance", 0, NULL, "vkGetInstanceProcAddr gives no vkCreateInstance", 0},
        {FAKE_VULKAN_PATH, "vkEnumeratePhysicalDevices", 0, NULL, "gives no vkEnumeratePhysicalDevices", 0},
        {FAKE_VULKAN_PATH, "vkGetPhysicalDeviceProperties2", 0, NULL, "gives no vkGetPhysicalDeviceProperties2", 0},
        {FAKE_VULKAN_PATH, "vkCreateDevice", 0, NULL, "gives no vkCreateDevice", 0},
        {FAKE_VULKAN_PATH, "vkCmdDispatch", 0, NULL, "gives no vkCmdDispatch", 0},
        {FAKE_VULKAN_PATH, "vkWaitForFences", 0, NULL, "gives no vkWaitForFences", 0},
        {FAKE_VULKAN_PATH, "vkDestroyInstance", 0, NULL, "gives no vkDestroyInstance", 0},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) failed += run_scenario(&cases[i]);
    assert_int_equal(failed, 0);
}

/* Every variant the chooser returns, on a device with everything and on one
 * with nothing, forced or not, is a name MXA_KERNEL accepts (runtime/env.c). */
static void test_kernel_names_listed(void **state)
{
    (void)state;
    static const char *const forced[] = {NULL,          "scalar",          "intdot", "coopmat-khr-i8", "coopmat-khr-f16",
                                         "coopmat-khr-i8-smem", "coopmat-khr-f16-smem"};
    vk_probe_data full = {0}, none = {0};
    full.caps = (vk_caps){.flags = ~0u, .int_dot_accel = 1, .subgroup_size = 32, .subgroup_min = 32, .subgroup_max = 32,
                          .max_shared = 64 * 1024, .max_invocations = 1024, .n_khr = 2, .quad_ok = {1, 1}};
    full.caps.khr[0] = (vk_coopmat_shape){16, 16, 32, VK_CT_S8, VK_CT_S8, VK_CT_S32, VK_CT_S32, VK_SCOPE_SUBGROUP_VALUE, 0};
    full.caps.khr[1] = (vk_coopmat_shape){16, 16, 16, VK_CT_F16, VK_CT_F16, VK_CT_F32, VK_CT_F32, VK_SCOPE_SUBGROUP_VALUE, 0};
    const vk_probe_data *devices[] = {&full, &none};
    for (size_t d = 0; d < 2; d++)
        for (size_t f = 0; f < sizeof forced / sizeof forced[0]; f++) {
            char reason[MXA_REASON_LEN];
            if (forced[f]) setenv("MXA_KERNEL", forced[f], 1);
            else unsetenv("MXA_KERNEL");
            const char *name = vk_choose_variant(devices[d], NULL, reason, sizeof reason);
            setenv("MXA_KERNEL", name, 1);
            if (!mxa_env_kernel()) fail_msg("%s is not in mxa_env_kernel's list", name);
        }
    unsetenv("MXA_KERNEL");
}

/* In a child: the fake device probes; its garbage name and driver strings come out
 * printable (control bytes and invalid UTF-8 as '?', "é" kept); opening it fails cleanly. */
static int child_garbage_strings(void)
{
    static const char want[] = "Fake?GPU ?[31m?? ?? caf\xc3\xa9?";
    mxa_runtime *rt = NULL;
    mxa_device_info d;
    int n = 0, ok = 0;
    if (mxa_runtime_create(NULL, &rt) != MXA_OK || mxa_device_count(rt, &n) != MXA_OK) return 2;
    for (int i = 0; i < n; i++) {
        if (mxa_device_get_info(rt, i, &d) != MXA_OK) return 3;
        if (strcmp(d.backend, "vulkan") != 0) continue;
        fprintf(stderr, "# name '%s' driver '%s'\n", d.name, d.driver);
        ok = strcmp(d.name, want) == 0 && strstr(d.driver, want) != NULL;
        for (const char *p = d.driver; *p; p++) ok = ok && (unsigned char)*p >= 0x20 && *p != 0x7f;
    }
    mxa_device *dev = NULL;
    if (mxa_device_open(rt, "vulkan:0", &dev) == MXA_OK || dev) ok = 0; /* the double's vkCreateDevice fails */
    else fprintf(stderr, "# open: %s\n", mxa_last_error_message());
    mxa_runtime_destroy(rt);
    return ok ? 0 : 1;
}

static void test_garbage_strings(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
        setenv("MXA_VULKAN_LIBRARY", FAKE_VULKAN_PATH, 1);
        setenv("MXA_DISABLE", "opencl,hip", 1);
        _exit(child_garbage_strings());
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_search),
        cmocka_unit_test(test_bad_loaders),
        cmocka_unit_test(test_kernel_names_listed),
        cmocka_unit_test(test_garbage_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
