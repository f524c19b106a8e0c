/*
 * A test double of libamdhip64 + libhiprtc: exports the entry points the HIP
 * backend resolves, with behaviour chosen by environment variables read at
 * each call, so one process can walk through many scenarios:
 *   FAKE_HIP_DEVICES=n            device count (default 1; 0 = none; any int, e.g. 2147483647)
 *   FAKE_HIP_ARCH=name            gcnArchName (default "gfx942:sramecc+:xnack-")
 *   FAKE_HIP_NAME=bytes           hipDeviceGetName (default "Fake AMD Instinct <n>")
 *   FAKE_HIP_WAVE=n               wavefront size (default 64)
 *   FAKE_HIP_RUNTIME_VERSION=n    hipRuntimeGetVersion (default 60241134)
 *   FAKE_HIP_INIT_ERROR=n         hipInit returns n
 *   FAKE_HIP_OOM=1                hipMalloc fails with hipErrorOutOfMemory
 *   FAKE_HIPRTC_FAIL=1            hiprtcCompileProgram fails with a compiler log
 *   FAKE_HIP_LOG=path             appends one line per compile, module load, launch, malloc, free
 *   FAKE_HIP_EMULATE=1            (the fake_hip_emu build) runs launches on the host emulator
 * Code objects are "FAKECO" + the program name + options; hipModuleLoadData
 * rejects anything else. Kernels do nothing but get logged with their grid.
 * Built twice more: FAKE_OMIT_LAUNCH (lacks hipModuleLaunchKernel) and
 * FAKE_OLD_PROPS (no hipGetDevicePropertiesR0600: the ROCm 5 layout only).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct fake_program {
    char name[64];
    char code[512];
    size_t code_size;
    int failed;
} fake_program;

typedef struct fake_function {
    char name[64];
    const void *module; /* its fake_module */
} fake_function;

typedef struct fake_module {
    char image[512];
    fake_function fns[4]; /* freed with the module, as a real module's functions */
    int nfns;
} fake_module;

EXPORT int hipInit(unsigned flags);
EXPORT int hipGetDeviceCount(int *count);
EXPORT int hipRuntimeGetVersion(int *v);
EXPORT int hipDriverGetVersion(int *v);
EXPORT int hipDeviceGetName(char *name, int len, int device);
EXPORT int hipDeviceGetAttribute(int *value, int attr, int device);
EXPORT int hipDeviceTotalMem(size_t *bytes, int device);
EXPORT int hipGetDeviceProperties(void *prop, int device);
EXPORT int hipGetDevicePropertiesR0600(void *prop, int device);
EXPORT int hipSetDevice(int device);
EXPORT int hipMalloc(void **p, size_t bytes);
EXPORT int hipFree(void *p);
EXPORT int hipMemcpyHtoD(void *dst, const void *src, size_t bytes);
EXPORT int hipMemcpyDtoH(void *dst, const void *src, size_t bytes);
EXPORT int hipModuleLoadData(void **module, const void *image);
EXPORT int hipModuleUnload(void *module);
EXPORT int hipModuleGetFunction(void **fn, void *module, const char *name);
EXPORT int hipModuleLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, void *stream, void **params, void **extra);
EXPORT int hipDeviceSynchronize(void);
EXPORT const char *hipGetErrorString(int err);
EXPORT int hiprtcVersion(int *major, int *minor);
EXPORT int hiprtcCreateProgram(void **prog, const char *src, const char *name, int nh, const char *const *headers,
                               const char *const *names);
EXPORT int hiprtcCompileProgram(void *prog, int n, const char *const *options);
EXPORT int hiprtcGetProgramLogSize(void *prog, size_t *size);
EXPORT int hiprtcGetProgramLog(void *prog, char *log);
EXPORT int hiprtcGetCodeSize(void *prog, size_t *size);
EXPORT int hiprtcGetCode(void *prog, char *code);
EXPORT int hiprtcDestroyProgram(void **prog);
EXPORT const char *hiprtcGetErrorString(int r);

#ifdef FAKE_EMULATE
/* tests/hip/emu: runs the real kernel sources on the host. */
int fake_emu_launch(const char *fn, const char *image, unsigned gx, unsigned gy, unsigned gz, unsigned threads,
                    void **params);
#endif

static const char fake_log_text[] = "mxa_attention.hip:42:7: error: fake failure for the test\n1 error generated.";

static long env_long(const char *name, long fallback)
{
    const char *s = getenv(name);
    return (s && *s) ? strtol(s, NULL, 10) : fallback;
}

static void record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void record(const char *fmt, ...)
{
    const char *path = getenv("FAKE_HIP_LOG");
    if (!path || !*path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

int hipInit(unsigned flags)
{
    (void)flags;
    return (int)env_long("FAKE_HIP_INIT_ERROR", 0);
}

int hipGetDeviceCount(int *count)
{
    *count = (int)env_long("FAKE_HIP_DEVICES", 1);
    return 0;
}

int hipRuntimeGetVersion(int *v)
{
    *v = (int)env_long("FAKE_HIP_RUNTIME_VERSION", 60241134);
    return 0;
}

int hipDriverGetVersion(int *v)
{
    *v = 60241134;
    return 0;
}

int hipDeviceGetName(char *name, int len, int device)
{
    const char *fake = getenv("FAKE_HIP_NAME");
    if (fake && *fake) snprintf(name, (size_t)len, "%s", fake);
    else snprintf(name, (size_t)len, "Fake AMD Instinct %d", device);
    return 0;
}

int hipDeviceGetAttribute(int *value, int attr, int device)
{
    (void)device;
    switch (attr) {
    case 56: *value = 1024; return 0;                                   /* max threads per block */
    case 63: *value = 304; return 0;                                    /* CUs */
    case 74: *value = 65536; return 0;                                  /* LDS per block */
    case 87: *value = (int)env_long("FAKE_HIP_WAVE", 64); return 0;     /* wave size */
    default: return 1;                                                  /* hipErrorInvalidValue */
    }
}

int hipDeviceTotalMem(size_t *bytes, int device)
{
    (void)device;
    *bytes = (size_t)192 << 30;
    return 0;
}

static int properties(void *prop, size_t arch_offset)
{
    const char *arch = getenv("FAKE_HIP_ARCH");
    if (!arch || !*arch) arch = "gfx942:sramecc+:xnack-";
    snprintf((char *)prop + arch_offset, 256, "%s", arch);
    return 0;
}

#ifndef FAKE_OLD_PROPS
int hipGetDevicePropertiesR0600(void *prop, int device)
{
    (void)device;
    return properties(prop, 1160);
}
#endif

int hipGetDeviceProperties(void *prop, int device)
{
    (void)device;
    return properties(prop, 396);
}

int hipSetDevice(int device)
{
    return device < env_long("FAKE_HIP_DEVICES", 1) ? 0 : 101;
}

int hipMalloc(void **p, size_t bytes)
{
    if (env_long("FAKE_HIP_OOM", 0)) {
        *p = NULL;
        return 2;
    }
    *p = calloc(1, bytes);
    if (!*p) return 2;
    record("malloc %zu", bytes);
    return 0;
}

int hipFree(void *p)
{
    if (p) record("free");
    free(p);
    return 0;
}

int hipMemcpyHtoD(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return 0;
}

int hipMemcpyDtoH(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return 0;
}

int hipModuleLoadData(void **module, const void *image)
{
    if (strncmp((const char *)image, "FAKECO ", 7) != 0) return 200; /* hipErrorInvalidImage */
    fake_module *m = calloc(1, sizeof *m);
    if (!m) return 2;
    snprintf(m->image, sizeof m->image, "%s", (const char *)image);
    record("load %s", m->image + 7);
    *module = m;
    return 0;
}

int hipModuleUnload(void *module)
{
    free(module);
    return 0;
}

int hipModuleGetFunction(void **fn, void *module, const char *name)
{
    fake_module *m = module;
    if (m->nfns == 4) return 500; /* hipErrorNotFound */
    fake_function *f = &m->fns[m->nfns++];
    snprintf(f->name, sizeof f->name, "%s", name);
    f->module = m;
    *fn = f;
    return 0;
}

#ifndef FAKE_OMIT_LAUNCH
int hipModuleLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, void *stream, void **params, void **extra)
{
    (void)by, (void)bz, (void)shared, (void)stream, (void)extra;
    const fake_function *f = fn;
    record("launch %s %u %u %u %u %s", f->name, gx, gy, gz, bx, params && params[0] ? "args" : "none");
#ifdef FAKE_EMULATE
    if (env_long("FAKE_HIP_EMULATE", 0))
        return fake_emu_launch(f->name, ((const fake_module *)f->module)->image, gx, gy, gz, bx, params);
#endif
    return 0;
}
#endif

int hipDeviceSynchronize(void)
{
    return 0;
}

const char *hipGetErrorString(int err)
{
    switch (err) {
    case 0: return "hipSuccess";
    case 2: return "hipErrorOutOfMemory";
    case 100: return "hipErrorNoDevice";
    case 101: return "hipErrorInvalidDevice";
    case 200: return "hipErrorInvalidImage";
    default: return "hipErrorUnknown";
    }
}

int hiprtcVersion(int *major, int *minor)
{
    *major = 6;
    *minor = 2;
    return 0;
}

int hiprtcCreateProgram(void **prog, const char *src, const char *name, int nh, const char *const *headers,
                        const char *const *names)
{
    if (!src || !name || (nh > 0 && (!headers || !names))) return 3;
    fake_program *p = calloc(1, sizeof *p);
    if (!p) return 1;
    snprintf(p->name, sizeof p->name, "%s", name);
    *prog = p;
    return 0;
}

int hiprtcCompileProgram(void *prog, int n, const char *const *options)
{
    fake_program *p = prog;
    char opts[400] = "";
    for (int i = 0; i < n; i++) {
        strncat(opts, " ", sizeof opts - strlen(opts) - 1);
        strncat(opts, options[i], sizeof opts - strlen(opts) - 1);
    }
    record("compile %s%s", p->name, opts);
    if (env_long("FAKE_HIPRTC_FAIL", 0)) {
        p->failed = 1;
        return 6;
    }
    p->code_size = (size_t)snprintf(p->code, sizeof p->code, "FAKECO %s%s", p->name, opts) + 1;
    return 0;
}

int hiprtcGetProgramLogSize(void *prog, size_t *size)
{
    *size = ((fake_program *)prog)->failed ? sizeof fake_log_text : 1;
    return 0;
}

int hiprtcGetProgramLog(void *prog, char *log)
{
    strcpy(log, ((fake_program *)prog)->failed ? fake_log_text : "");
    return 0;
}

int hiprtcGetCodeSize(void *prog, size_t *size)
{
    *size = ((fake_program *)prog)->code_size;
    return 0;
}

int hiprtcGetCode(void *prog, char *code)
{
    fake_program *p = prog;
    memcpy(code, p->code, p->code_size);
    return 0;
}

int hiprtcDestroyProgram(void **prog)
{
    free(*prog);
    *prog = NULL;
    return 0;
}

const char *hiprtcGetErrorString(int r)
{
    return r == 6 ? "HIPRTC_ERROR_COMPILATION" : r == 0 ? "HIPRTC_SUCCESS" : "HIPRTC_ERROR";
}
