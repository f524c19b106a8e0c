/* Environment switches: readers that validate, and one warning per bad variable. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "env.h"
#include "log.h"

/* Every variant MXA_KERNEL may name; each backend's chooser accepts its own
 * (the backends' tests check their names are listed here). */
static const char *const kernel_names[] = {
    "scalar", "intdot", "coopmat-khr-i8", "coopmat-khr-f16", "coopmat-khr-i8-smem", "coopmat-khr-f16-smem", "coopmat-khr-i8pv", /* vulkan */
    "cl-mma-ptx", "cl-tiled",                                             /* opencl */
    "hip-mfma-fp4", "hip-mfma-i8", "hip-scalar", "mfma-fp4", "mfma-i8",   /* hip (also without "hip-") */
};
static const char kernel_list[] = "vulkan: scalar, intdot, coopmat-khr-i8, coopmat-khr-f16, coopmat-khr-i8-smem, "
                                  "coopmat-khr-f16-smem, coopmat-khr-i8pv; "
                                  "opencl: cl-mma-ptx, cl-tiled; hip: hip-mfma-fp4, hip-mfma-i8, hip-scalar";

#define MAX_WARNED 64
static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static char warned[MAX_WARNED][48];
static int warned_count;

const char *mxa_env_string(const char *name)
{
    const char *s = getenv(name);
    return (s && *s) ? s : NULL;
}

void mxa_env_warn_once(const char *name, const char *fmt, ...)
{
    int first = 1;
    pthread_mutex_lock(&warn_lock);
    for (int i = 0; i < warned_count && first; i++) first = strcmp(warned[i], name) != 0;
    if (first && warned_count < MAX_WARNED) snprintf(warned[warned_count++], sizeof warned[0], "%s", name);
    pthread_mutex_unlock(&warn_lock);
    if (!first) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    MXA_LOG_W("%s", line);
}

void mxa_env_reset_warnings(void)
{
    pthread_mutex_lock(&warn_lock);
    warned_count = 0;
    pthread_mutex_unlock(&warn_lock);
}

int mxa_env_bool(const char *name, int fallback)
{
    static const char *const on[] = {"1", "on", "true", "yes"}, *const off[] = {"0", "off", "false", "no"};
    const char *s = mxa_env_string(name);
    if (!s) return fallback;
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, on[i]) == 0) return 1;
        if (strcasecmp(s, off[i]) == 0) return 0;
    }
    mxa_env_warn_once(name, "%s=%.64s is not one of 1/0/on/off/true/false/yes/no; ignored (%s)", name, s,
                      fallback ? "on" : "off");
    return fallback;
}

int mxa_env_flag(const char *name) { return mxa_env_bool(name, 0); }

long mxa_env_long(const char *name, long lo, long hi, long fallback)
{
    const char *s = mxa_env_string(name);
    if (!s) return fallback;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end != s && *end == '\0' && errno == 0 && v >= lo && v <= hi && !isspace((unsigned char)*s)) return v;
    mxa_env_warn_once(name, "%s=%.64s is not an integer in [%ld, %ld]; using %ld", name, s, lo, hi, fallback);
    return fallback;
}

const char *mxa_env_kernel_names(void)
{
    return kernel_list;
}

const char *mxa_env_kernel(void)
{
    const char *s = mxa_env_string("MXA_KERNEL");
    if (!s) return NULL;
    for (size_t i = 0; i < sizeof kernel_names / sizeof kernel_names[0]; i++)
        if (strcmp(s, kernel_names[i]) == 0) return s;
    mxa_env_warn_once("MXA_KERNEL", "MXA_KERNEL=%.64s names no kernel variant (%s); ignored: variants are chosen automatically",
                      s, kernel_list);
    return NULL;
}

const char *mxa_env_coopmat_shape(void)
{
    const char *s = mxa_env_string("MXA_COOPMAT_SHAPE");
    unsigned m, n, k;
    char end;
    if (!s) return NULL;
    if (strlen(s) < 16 && sscanf(s, "%ux%ux%u%c", &m, &n, &k, &end) == 3 && m && n && k && m <= 64 && n <= 64 && k <= 64)
        return s;
    mxa_env_warn_once("MXA_COOPMAT_SHAPE", "MXA_COOPMAT_SHAPE=%.32s is not MxNxK (e.g. 16x8x32); ignored", s);
    return NULL;
}

void mxa_env_check_switches(void)
{
    (void)mxa_env_kernel();
    (void)mxa_env_coopmat_shape();
    (void)mxa_env_flag("MXA_DISABLE_COOPMAT");
    (void)mxa_env_flag("MXA_DISABLE_INT_DOT");
    (void)mxa_env_flag("MXA_DISABLE_NATIVE_FP4");
    (void)mxa_env_bool("MXA_CPU_FUSED", 1);
}

int mxa_list_contains(const char *list, const char *name)
{
    if (!list || !name) return 0;
    size_t n = strlen(name);
    const char *p = list;
    while (*p) {
        while (*p == ',' || *p == ' ') p++;
        const char *start = p;
        while (*p && *p != ',') p++;
        const char *end = p;
        while (end > start && end[-1] == ' ') end--;
        if ((size_t)(end - start) == n) {
            size_t i = 0;
            while (i < n && tolower((unsigned char)start[i]) == tolower((unsigned char)name[i])) i++;
            if (i == n) return 1;
        }
    }
    return 0;
}
