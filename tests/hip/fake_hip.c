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
 * Streams defer, as a GPU does: launches and async copies on a stream made by
 * hipStreamCreate run when something waits for them (hipEventSynchronize,
 * hipStreamSynchronize, hipStreamWaitEvent) or when the null stream is used
 * (hipMemcpyHtoD/DtoH, a launch on stream 0, hipFree, hipDeviceSynchronize: the
 * legacy default stream waits for every blocking stream). An async host-to-device
 * copy reads its source when enqueued (pageable memory is staged), writes at run.
 * A stream or event not made here (or destroyed) is hipErrorInvalidHandle.
 * Allocations are tracked per device (hipSetDevice), for hipPointerGetAttribute.
 * Built twice more: FAKE_OMIT_LAUNCH (lacks hipModuleLaunchKernel) and
 * FAKE_OLD_PROPS (no hipGetDevicePropertiesR0600: the ROCm 5 layout only).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mxa_hip_args.h"

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
EXPORT int hipGetDevice(int *device);
EXPORT int hipMalloc(void **p, size_t bytes);
EXPORT int hipFree(void *p);
EXPORT int hipMemcpyHtoD(void *dst, const void *src, size_t bytes);
EXPORT int hipMemcpyDtoH(void *dst, const void *src, size_t bytes);
EXPORT int hipMemcpy(void *dst, const void *src, size_t bytes, int kind);
EXPORT int hipMemcpyHtoDAsync(void *dst, const void *src, size_t bytes, void *stream);
EXPORT int hipStreamCreate(void **stream);
EXPORT int hipStreamDestroy(void *stream);
EXPORT int hipStreamSynchronize(void *stream);
EXPORT int hipStreamWaitEvent(void *stream, void *event, unsigned flags);
EXPORT int hipEventCreate(void **event);
EXPORT int hipEventDestroy(void *event);
EXPORT int hipEventRecord(void *event, void *stream);
EXPORT int hipEventSynchronize(void *event);
EXPORT int hipEventElapsedTime(float *ms, void *start, void *stop);
EXPORT int hipPointerGetAttribute(void *data, int attribute, void *ptr);
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
int fake_emu_known(const char *fn, const char *image); /* 0, or 500 with a line on stderr */
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

/* ---- devices and memory */

static _Thread_local int current_device;

typedef struct fake_alloc {
    struct fake_alloc *next;
    char *ptr;
    size_t bytes;
    int device;
} fake_alloc;
static fake_alloc *allocs;

int hipSetDevice(int device)
{
    if (device < 0 || device >= env_long("FAKE_HIP_DEVICES", 1)) return 101;
    current_device = device;
    return 0;
}

int hipGetDevice(int *device)
{
    *device = current_device;
    return 0;
}

static void flush_all(void);

int hipMalloc(void **p, size_t bytes)
{
    fake_alloc *a = env_long("FAKE_HIP_OOM", 0) ? NULL : calloc(1, sizeof *a);
    *p = a ? calloc(1, bytes) : NULL;
    if (!*p) {
        free(a);
        return 2;
    }
    a->ptr = *p, a->bytes = bytes, a->device = current_device;
    a->next = allocs;
    allocs = a;
    record("malloc %zu", bytes);
    return 0;
}

int hipFree(void *p)
{
    if (!p) return 0;
    flush_all(); /* hipFree waits for the device */
    record("free");
    for (fake_alloc **a = &allocs; *a; a = &(*a)->next)
        if ((*a)->ptr == p) {
            fake_alloc *dead = *a;
            *a = dead->next;
            free(dead);
            break;
        }
    free(p);
    return 0;
}

int hipPointerGetAttribute(void *data, int attribute, void *ptr)
{
    for (const fake_alloc *a = allocs; a; a = a->next) {
        if ((char *)ptr < a->ptr || (char *)ptr >= a->ptr + a->bytes) continue;
        switch (attribute) {
        case 9: *(int *)data = a->device; return 0;    /* HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
        case 11: *(void **)data = a->ptr; return 0;    /* RANGE_START_ADDR */
        case 12: *(size_t *)data = a->bytes; return 0; /* RANGE_SIZE */
        default: return 1;
        }
    }
    return 1; /* hipErrorInvalidValue: not memory this runtime allocated */
}

/* ---- streams and events: work runs when waited for */

typedef union fake_args {
    mxa_hip_quant_args quant;
    mxa_hip_prep_args prep;
    mxa_hip_attn_args attn;
} fake_args;

typedef struct fake_op {
    const fake_function *fn; /* a launch, or NULL: a copy */
    char image[512];
    unsigned gx, gy, gz, threads;
    fake_args args;
    void *dst, *staged;
    size_t bytes;
} fake_op;

typedef struct fake_stream {
    struct fake_stream *next;
    fake_op *ops;
    size_t count, cap, done;
} fake_stream;

typedef struct fake_event {
    struct fake_event *next;
    fake_stream *stream; /* NULL: complete */
    size_t target;       /* complete once stream->done reaches it */
    int recorded;
} fake_event;

static fake_stream *streams;
static fake_event *events;

static int live_stream(const void *s)
{
    for (const fake_stream *t = streams; t; t = t->next)
        if (t == s) return 1;
    return 0;
}

static int live_event(const void *e)
{
    for (const fake_event *t = events; t; t = t->next)
        if (t == e) return 1;
    return 0;
}

static void run_op(fake_op *op)
{
    if (!op->fn) {
        memcpy(op->dst, op->staged, op->bytes);
        free(op->staged);
        return;
    }
#ifdef FAKE_EMULATE
    void *params[1] = {&op->args};
    if (env_long("FAKE_HIP_EMULATE", 0))
        fake_emu_launch(op->fn->name, op->image, op->gx, op->gy, op->gz, op->threads, params);
#endif
}

static void flush(fake_stream *s, size_t upto)
{
    while (s->done < upto) run_op(&s->ops[s->done++]);
}

static void flush_all(void)
{
    for (fake_stream *s = streams; s; s = s->next) flush(s, s->count);
}

/* Appends an op to a stream; 0, or 2 when out of memory. */
static int push(fake_stream *s, const fake_op *op)
{
    if (s->count == s->cap) {
        const size_t cap = s->cap ? 2 * s->cap : 16;
        fake_op *ops = realloc(s->ops, cap * sizeof *ops);
        if (!ops) return 2;
        s->ops = ops, s->cap = cap;
    }
    s->ops[s->count++] = *op;
    return 0;
}

int hipStreamCreate(void **stream)
{
    fake_stream *s = calloc(1, sizeof *s);
    if (!s) return 2;
    s->next = streams;
    streams = s;
    *stream = s;
    record("stream create");
    return 0;
}

int hipStreamDestroy(void *stream)
{
    if (!live_stream(stream)) return 400;
    fake_stream *s = stream;
    flush(s, s->count);
    for (fake_event *e = events; e; e = e->next)
        if (e->stream == s) e->stream = NULL;
    for (fake_stream **p = &streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    free(s->ops);
    free(s);
    record("stream destroy");
    return 0;
}

int hipStreamSynchronize(void *stream)
{
    if (!stream) {
        flush_all();
        return 0;
    }
    if (!live_stream(stream)) return 400;
    flush(stream, ((fake_stream *)stream)->count);
    return 0;
}

int hipEventCreate(void **event)
{
    fake_event *e = calloc(1, sizeof *e);
    if (!e) return 2;
    e->next = events;
    events = e;
    *event = e;
    return 0;
}

int hipEventDestroy(void *event)
{
    if (!live_event(event)) return 400;
    for (fake_event **p = &events; *p; p = &(*p)->next)
        if (*p == event) {
            *p = ((fake_event *)event)->next;
            break;
        }
    free(event);
    return 0;
}

int hipEventRecord(void *event, void *stream)
{
    if (!live_event(event) || (stream && !live_stream(stream))) return 400;
    fake_event *e = event;
    if (!stream) flush_all();
    e->stream = stream;
    e->target = stream ? ((fake_stream *)stream)->count : 0;
    e->recorded = 1;
    return 0;
}

int hipEventSynchronize(void *event)
{
    if (!live_event(event)) return 400;
    fake_event *e = event;
    if (e->stream) flush(e->stream, e->target);
    record("event sync");
    return 0;
}

/* Runs what the event stands for now: the waiting stream's later work comes after it either way. */
int hipStreamWaitEvent(void *stream, void *event, unsigned flags)
{
    (void)flags;
    if ((stream && !live_stream(stream)) || !live_event(event)) return 400;
    fake_event *e = event;
    if (e->stream) flush(e->stream, e->target);
    record("stream wait");
    return 0;
}

int hipEventElapsedTime(float *ms, void *start, void *stop)
{
    if (!live_event(start) || !live_event(stop)) return 400;
    if (!((fake_event *)start)->recorded || !((fake_event *)stop)->recorded) return 600; /* hipErrorNotReady */
    *ms = 0.25f;
    return 0;
}

int hipMemcpyHtoD(void *dst, const void *src, size_t bytes)
{
    flush_all();
    memcpy(dst, src, bytes);
    return 0;
}

int hipMemcpyDtoH(void *dst, const void *src, size_t bytes)
{
    flush_all();
    memcpy(dst, src, bytes);
    return 0;
}

int hipMemcpy(void *dst, const void *src, size_t bytes, int kind)
{
    (void)kind; /* one address space here */
    flush_all();
    memcpy(dst, src, bytes);
    return 0;
}

int hipMemcpyHtoDAsync(void *dst, const void *src, size_t bytes, void *stream)
{
    if (stream && !live_stream(stream)) return 400;
    fake_op op = {0};
    op.dst = dst, op.bytes = bytes;
    if (!(op.staged = malloc(bytes ? bytes : 1))) return 2;
    memcpy(op.staged, src, bytes);
    if (!stream) {
        flush_all();
        run_op(&op);
        return 0;
    }
    const int e = push(stream, &op);
    if (e) free(op.staged);
    return e;
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
    (void)by, (void)bz, (void)shared, (void)extra;
    const fake_function *f = fn;
    if (stream && !live_stream(stream)) return 400; /* hipErrorInvalidHandle */
    record("launch %s %u %u %u %u %s%s", f->name, gx, gy, gz, bx, params && params[0] ? "args" : "none",
           stream ? " stream" : "");
#ifdef FAKE_EMULATE
    if (env_long("FAKE_HIP_EMULATE", 0) && fake_emu_known(f->name, ((const fake_module *)f->module)->image))
        return 500; /* hipErrorNotFound: no emulated configuration */
#endif
    fake_op op = {0};
    op.fn = f, op.gx = gx, op.gy = gy, op.gz = gz, op.threads = bx;
    snprintf(op.image, sizeof op.image, "%s", ((const fake_module *)f->module)->image);
    /* a real launch copies its argument block by the kernel's signature; here by the entry point's name */
    const size_t size = strcmp(f->name, "mxa_attention") == 0       ? sizeof(mxa_hip_attn_args)
                        : strcmp(f->name, "mxa_quantize_rows") == 0 ? sizeof(mxa_hip_quant_args)
                                                                     : sizeof(mxa_hip_prep_args);
    if (params && params[0]) memcpy(&op.args, params[0], size);
    if (stream) return push(stream, &op);
    flush_all();
    run_op(&op);
    return 0;
}
#endif

int hipDeviceSynchronize(void)
{
    flush_all();
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
    case 400: return "hipErrorInvalidHandle";
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
