/*
 * The CPU backend: always present. Buffers are host memory. Attention runs
 * the fused kernel of cpu_attention.c; quantization the format core.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/backend.h"
#include "../../runtime/mxfp4.h"
#include "../../runtime/reference.h"
#include "../../runtime/status.h"

#define CPU_DEFAULT_BC 64

static mxa_status cpu_probe(mxa_probed_device *devices, int max_devices, int *count, char *reason,
                            size_t reason_size)
{
    (void)reason;
    (void)reason_size;
    if (max_devices < 1) {
        *count = 0;
        return MXA_OK;
    }
    mxa_device_info *info = &devices[0].info;
    memset(&devices[0], 0, sizeof devices[0]);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(info->name, sizeof info->name, "host CPU (%ld threads)", n > 0 ? n : 1);
    snprintf(info->vendor, sizeof info->vendor, "host");
    snprintf(info->driver, sizeof info->driver, "mxa %s", mxa_version_string());
    info->compute_units = (uint32_t)(n > 0 ? n : 1);
    info->subgroup_min = info->subgroup_max = 1;
    info->caps = MXA_CAP_INT8;
    snprintf(info->capabilities, sizeof info->capabilities, "int8");
    snprintf(info->variant, sizeof info->variant, "reference");
    snprintf(info->variant_reason, sizeof info->variant_reason, "the reference implementation of SPEC.md");
    info->default_bc = CPU_DEFAULT_BC;
    info->score = 0;
    *count = 1;
    return MXA_OK;
}

static mxa_status cpu_open(const mxa_probed_device *device, void **impl)
{
    *impl = (void *)device;
    return MXA_OK;
}

static void cpu_close(void *impl)
{
    (void)impl;
}

static mxa_status cpu_buffer_create(void *impl, size_t bytes, void **buffer)
{
    (void)impl;
    *buffer = calloc(1, bytes);
    if (!*buffer) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes", bytes);
    return MXA_OK;
}

static void cpu_buffer_destroy(void *impl, void *buffer)
{
    (void)impl;
    free(buffer);
}

static mxa_status cpu_buffer_upload(void *impl, void *buffer, size_t offset, const void *src, size_t bytes)
{
    (void)impl;
    memcpy((char *)buffer + offset, src, bytes);
    return MXA_OK;
}

static mxa_status cpu_buffer_download(void *impl, void *buffer, size_t offset, void *dst, size_t bytes)
{
    (void)impl;
    memcpy(dst, (const char *)buffer + offset, bytes);
    return MXA_OK;
}

/* A host pointer for an array (CPU buffers are host memory). */
static float *cpu_host(const mxa_array *a)
{
    return a->host ? a->host : (float *)((char *)a->buffer + a->offset);
}

static mxa_status cpu_quantize(void *impl, const mxa_array *x, mxa_rule rule, uint8_t *codes, uint8_t *scales)
{
    (void)impl;
    const float *data = cpu_host(x);
    const int64_t rows = x->b * x->h * x->n, nblocks = (x->d + MXA_BLOCK - 1) / MXA_BLOCK;
    for (int64_t r = 0; r < rows; r++)
        mxa_quantize_row(data + r * x->d, x->d, rule, codes + r * nblocks * 16, scales + r * nblocks);
    return MXA_OK;
}

static mxa_status cpu_attention(void *impl, const mxa_attention_call *call, mxa_attention_info *info)
{
    (void)impl;
    mxa_attention_dims dm = {call->q.b, call->q.h, call->k.h, call->q.n, call->k.n, call->q.d, call->desc.scale};
    snprintf(info->variant, sizeof info->variant, "reference");
    return mxa_reference_run(&call->desc, call->bc, &dm, cpu_host(&call->q), cpu_host(&call->k),
                             cpu_host(&call->v), cpu_host(&call->o), call->lse, NULL);
}

const mxa_backend_ops mxa_cpu_backend = {
    .name = "cpu",
    .probe = cpu_probe,
    .release = NULL,
    .open = cpu_open,
    .close = cpu_close,
    .buffer_create = cpu_buffer_create,
    .buffer_destroy = cpu_buffer_destroy,
    .buffer_upload = cpu_buffer_upload,
    .buffer_download = cpu_buffer_download,
    .quantize = cpu_quantize,
    .attention = cpu_attention,
};
