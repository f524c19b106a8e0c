/* The OpenCL backend's shared state (internal to backends/opencl). */
#ifndef MXA_OPENCL_CL_INTERNAL_H
#define MXA_OPENCL_CL_INTERNAL_H

#include "backend.h"
#include "cl_api.h"

/* Attention kernel variants, best first. */
typedef enum cl_variant {
    CL_VARIANT_MMA_PTX = 0, /* NVIDIA sm_80+: int8 mma.sync m16n8k32 through inline PTX */
    CL_VARIANT_TILED = 1,   /* portable: local-memory tiles, exact FP4 products in fp32 */
    CL_VARIANT_COUNT
} cl_variant;

extern const char *const mxa_cl_variant_names[CL_VARIANT_COUNT];

/* What the probe learnt about one device (probe_data; copied into the open device). */
typedef struct cl_device_desc {
    const mxa_cl_api *api;
    cl_platform_id platform;
    cl_device_id device;
    cl_device_type type;
    char platform_name[128];
    char driver_version[64];
    int is_nvidia, is_pocl;
    int cc_major, cc_minor; /* NVIDIA compute capability, 0 when unknown */
    int c_version;          /* highest OpenCL C version, major*10+minor */
    size_t local_mem;       /* bytes of local memory per work-group */
    size_t max_wg;          /* largest work-group */
    int supported[CL_VARIANT_COUNT];
    cl_variant variant;     /* chosen (env overrides applied) */
} cl_device_desc;

/* A growable device buffer used for per-call staging and scratch. */
typedef struct cl_scratch {
    cl_mem mem;
    size_t bytes;
} cl_scratch;

enum { SCRATCH_Q, SCRATCH_K, SCRATCH_V, SCRATCH_O, SCRATCH_LSE, SCRATCH_QP, SCRATCH_KP, SCRATCH_VP,
       SCRATCH_QS, SCRATCH_KS, SCRATCH_VS, SCRATCH_VX, SCRATCH_BIAS, SCRATCH_MASK, SCRATCH_KLEN, SCRATCH_COUNT };

#define CL_MAX_EVENTS 8

#define CL_MAX_PROGRAMS 16

typedef struct cl_built {
    char options[256];
    int family; /* CL_FAMILY_* */
    cl_program program;
} cl_built;

enum { CL_FAMILY_PREP = 0, CL_FAMILY_TILED = 1, CL_FAMILY_MMA = 2 };

/* An attention call submitted on the device's own queue and not completed yet. */
typedef struct cl_inflight {
    mxa_pending *pending; /* NULL when none */
    cl_event events[CL_MAX_EVENTS]; /* the kernels, for the kernel time */
    int nevents;
    const char *variant;
} cl_inflight;

/* An open device. */
typedef struct cl_impl {
    cl_device_desc desc;
    const mxa_cl_api *cl;
    cl_context context;
    cl_command_queue queue; /* the device's own (profiling, in order) */
    int adopted;            /* context and device are the application's (retained) */
    cl_built programs[CL_MAX_PROGRAMS];
    int program_count;
    cl_scratch scratch[SCRATCH_COUNT];
    char extra_options[96]; /* the checked MXA_OPENCL_OPTIONS, read at open ("" when none or refused) */
    /* where attention's commands go (the own queue, or an interop caller's), and what the
     * first of them waits for (cleared once enqueued) */
    cl_command_queue target;
    cl_uint wait_count;
    const cl_event *wait;
    cl_inflight inflight;
    cl_event interop_done; /* the last mxa_opencl_attention_enqueue's work, or NULL */
} cl_impl;

/* A buffer handed to the runtime: bytes [base, base + bytes) of mem (base > 0 only for a
 * wrapped application buffer, mxa_opencl_buffer_wrap; a multiple of 4). */
typedef struct cl_buffer {
    cl_mem mem;
    size_t base;
    size_t bytes;
} cl_buffer;

/* cl_probe.c */
mxa_status mxa_cl_probe(mxa_probed_device *devices, int max_devices, int *count, char *reason,
                        size_t reason_size);
void mxa_cl_release(mxa_probed_device *devices, int count);

/* cl_probe.c: fills `out` for one device (probe_data malloc'ed); 0 if the device is unusable. */
int mxa_cl_describe(const mxa_cl_api *cl, cl_platform_id plat, const char *plat_name, cl_device_id dev,
                    mxa_probed_device *out);
/* cl_probe.c: info->score and score_reason of a described device (info->variant chosen). */
void mxa_cl_score(const cl_device_desc *dd, mxa_device_info *info);

/* cl_device.c */
mxa_status mxa_cl_open(const mxa_probed_device *device, void **impl);
/* Opens over an application's context (retained with the device; NULL: a context of mxa's own). */
mxa_status mxa_cl_open_in(const mxa_probed_device *device, cl_context context, void **impl);
/* Completes what is in flight: the own queue's pending call, and the last interop enqueue. Every
 * operation but the interop enqueue starts with it (one queue, shared scratch). */
void mxa_cl_sync(cl_impl *d);
void mxa_cl_close(void *impl);
mxa_status mxa_cl_buffer_create(void *impl, size_t bytes, void **buffer);
void mxa_cl_buffer_destroy(void *impl, void *buffer);
mxa_status mxa_cl_buffer_upload(void *impl, void *buffer, size_t offset, const void *src, size_t bytes);
mxa_status mxa_cl_buffer_download(void *impl, void *buffer, size_t offset, void *dst, size_t bytes);
/* Makes scratch slot `slot` at least `bytes` large (contents not kept). */
mxa_status mxa_cl_scratch(cl_impl *d, int slot, size_t bytes, cl_mem *mem);
/* Puts an array on the device: its own buffer, or an upload of host data into a scratch slot.
 * *offset receives the element offset to pass to kernels. */
mxa_status mxa_cl_array_in(cl_impl *d, const mxa_array *a, int slot, cl_mem *mem, cl_ulong *offset);

/* cl_program.c: the program of `family` built with `options` (cached in memory and on disk). */
mxa_status mxa_cl_program(cl_impl *d, int family, const char *options, cl_program *out);
mxa_status mxa_cl_kernel(cl_impl *d, cl_program program, const char *name, cl_kernel *out);
/* MXA_OPENCL_OPTIONS if every option in it is known to keep the kernels' contract, else ""
 * (with a warning naming the variable and the option). */
void mxa_cl_extra_options(char *out, size_t size);

/* Kernel launch helpers (cl_program.c). */
typedef struct cl_args {
    const mxa_cl_api *cl;
    cl_kernel kernel;
    cl_uint next;
    cl_int err;
} cl_args;
void mxa_cl_arg(cl_args *a, size_t size, const void *value);
/* Enqueues the kernel on d->target (the first command waits for d->wait); if `events` is
 * non-NULL the event is appended there. */
mxa_status mxa_cl_launch(cl_impl *d, cl_args *a, cl_uint dims, const size_t *global, const size_t *local,
                         cl_event *events, int *event_count, const char *what);
/* Seconds from the first event's start to the last one's end; -1 if unknown. Releases the events. */
double mxa_cl_events_seconds(cl_impl *d, cl_event *events, int count);

/* cl_quantize.c / cl_attention.c */
typedef struct cl_rule_args {
    cl_int ceil_rule;
    cl_uint thr;
    cl_int pow2_dec;
} cl_rule_args;
cl_rule_args mxa_cl_rule_args(mxa_rule rule);
mxa_status mxa_cl_quantize(void *impl, const mxa_array *x, mxa_rule rule, uint8_t *codes, uint8_t *scales);
mxa_status mxa_cl_quantize_mxfp8(void *impl, const mxa_array *x, uint8_t *codes, uint8_t *scales);
int mxa_cl_mma_stages(const cl_impl *d, int dim, int bc);
mxa_status mxa_cl_attention(void *impl, const mxa_attention_call *call, mxa_attention_info *info);
mxa_status mxa_cl_attention_submit(void *impl, const mxa_attention_call *call, mxa_pending *pending);
void mxa_cl_attention_wait(void *impl, mxa_pending *pending);
/* Enqueues a call whose arrays are all device buffers on d->target after d->wait; *done is the
 * event of its last command (never NULL on success). */
mxa_status mxa_cl_attention_enqueue(cl_impl *d, const mxa_attention_call *call, cl_event *done);
/* Takes the wait list for the next command (and clears it). */
cl_uint mxa_cl_take_wait(cl_impl *d, const cl_event **wait);

#endif
