/* The HIP backend's per-device state (internal to backends/hip). */
#ifndef MXA_HIP_DEVICE_H
#define MXA_HIP_DEVICE_H

#include "../../runtime/backend.h"
#include "hip_api.h"
#include "hip_arch.h"
#include "hip_program.h"
#include "mxa_hip_args.h"

/* What probe learns about one device (probe_data). */
typedef struct mxa_hip_probe {
    mxa_hip_api *api; /* one reference */
    int ordinal;
    mxa_hip_arch arch;
    mxa_hip_choice choice;
} mxa_hip_probe;

/* A built kernel, kept for the device's lifetime. */
typedef struct mxa_hip_kernel {
    char key[160]; /* program name + options */
    hipModule_t module;
    hipFunction_t fn_a, fn_b, fn_c; /* the program's entry points, in its order */
} mxa_hip_kernel;

typedef struct mxa_hip_device {
    mxa_hip_api *api; /* one reference */
    int ordinal;
    mxa_hip_arch arch;
    mxa_hip_choice choice;
    mxa_hip_kernel *kernels;
    int kernel_count, kernel_cap;
    int compiled, cache_hits; /* program builds by origin, for tests and logs */
} mxa_hip_device;

/* The prep program's kernels (fn_a, fn_b, fn_c): quantize_rows, prep_qk, prep_v. */
mxa_status mxa_hip_prep_kernels(mxa_hip_device *dev, const mxa_hip_kernel **out);

/* The attention kernel for head size d, tile bc and a variant. */
mxa_status mxa_hip_attention_kernel(mxa_hip_device *dev, int d, int bc, mxa_hip_variant variant,
                                    const mxa_hip_kernel **out);

/* Launches `fn` with one by-value argument block. */
mxa_status mxa_hip_launch(mxa_hip_device *dev, hipFunction_t fn, const char *name, unsigned gx, unsigned gy,
                          unsigned gz, unsigned threads, void *args);

/* hipMalloc with the size in the error message (MXA_ERR_OUT_OF_MEMORY on OOM). */
mxa_status mxa_hip_alloc(mxa_hip_device *dev, size_t bytes, void **ptr);
void mxa_hip_free(mxa_hip_device *dev, void *ptr);

/* Device address of an array: its buffer + offset, or an uploaded copy of its
 * host data (*owned set; free it with mxa_hip_free). */
mxa_status mxa_hip_array_ptr(mxa_hip_device *dev, const mxa_array *a, void **ptr, void **owned);

/* The attention entry point of the vtable (hip_attention.c). */
mxa_status mxa_hip_attention(void *impl, const mxa_attention_call *call, mxa_attention_info *info);

#endif
