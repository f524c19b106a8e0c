/*
 * The CPU backend: always present. Buffers are host memory. Attention runs
 * the fused kernel of cpu_attention.c on the instruction set cpu_isa.c
 * picks; each open device owns its kernels table and worker pool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/backend.h"
#include "../../runtime/env.h"
#include "../../runtime/mxfp8.h"
#include "../../runtime/status.h"
#include "../../runtime/tensor.h"
#include "cpu_attention.h"
#include "cpu_isa.h"
#include "cpu_quant.h"

/* Key-tile size: 128 halves the accumulator rescales of 64 and its tiles
 * (scores 8 KiB, P^ 1 KiB per 16 rows) still sit in L1. AMX takes the largest
 * fused tile, CPU_FUSED_MAX_BC (256): its per-tile work outside the tile
 * products (B tile loads, O~ updates per column) then halves per key. */
#define CPU_DEFAULT_BC 128

/* One open CPU device: its kernels and its own worker pool. */
typedef struct cpu_device {
    cpu_isa isa;
    const cpu_kernels *kern;
    cpu_pool *pool;
    cpu_buf arena, scratch; /* kept between calls; calls are serialised by the device lock */
} cpu_device;

static long cpu_threads_wanted(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > 256) n = 256;
    return mxa_env_long("MXA_NUM_THREADS", 1, 256, n); /* a bad value warns and uses every core */
}

static const char *cpu_variant_name(cpu_isa isa)
{
    return isa == CPU_ISA_AMX      ? "amx-int8"
           : isa == CPU_ISA_AVX512 ? "avx512-vnni-int8"
           : isa == CPU_ISA_AVX2   ? "avx2-int8"
                                   : "portable-c";
}

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
    char why[MXA_REASON_LEN - 64];
    const cpu_isa isa = cpu_isa_select(why, sizeof why);
    info->caps = MXA_CAP_INT8;
    if (isa != CPU_ISA_PORTABLE) info->caps |= MXA_CAP_SIMD;
    if (isa >= CPU_ISA_AVX512) info->caps |= MXA_CAP_INT_DOT;
    if (isa == CPU_ISA_AMX) info->caps |= MXA_CAP_COOPMAT; /* tile matrix unit */
    snprintf(info->capabilities, sizeof info->capabilities, "int8%s%s%s%s, %ld worker threads",
             cpu_isa_supported(CPU_ISA_AVX2) ? " avx2 fma" : "", cpu_isa_supported(CPU_ISA_AVX512) ? " avx512bw" : "",
             cpu_isa_supported(CPU_ISA_AVX512) ? " avx512-vnni" : "", cpu_isa_supported(CPU_ISA_AMX) ? " amx-int8" : "",
             cpu_threads_wanted());
    snprintf(info->variant, sizeof info->variant, "%s", cpu_variant_name(isa));
    snprintf(info->variant_reason, sizeof info->variant_reason, "%s; fused flash kernel, exact int8 FP4 products", why);
    info->default_bc = isa == CPU_ISA_AMX ? CPU_FUSED_MAX_BC : CPU_DEFAULT_BC;
    info->score = 0;
    *count = 1;
    return MXA_OK;
}

static mxa_status cpu_open(const mxa_probed_device *device, void **impl)
{
    (void)device;
    char why[MXA_REASON_LEN];
    *impl = NULL;
    cpu_device *dev = calloc(1, sizeof *dev);
    if (!dev) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "cpu: out of memory opening the device");
    dev->isa = cpu_isa_select(why, sizeof why);
    dev->kern = cpu_isa_kernels(dev->isa);
    mxa_status st = cpu_pool_create((int)cpu_threads_wanted(), &dev->pool);
    if (st) {
        free(dev);
        return st;
    }
    *impl = dev;
    return MXA_OK;
}

static void cpu_close(void *impl)
{
    cpu_device *dev = impl;
    if (!dev) return;
    cpu_pool_destroy(dev->pool);
    cpu_buf_free(&dev->arena);
    cpu_buf_free(&dev->scratch);
    free(dev);
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
    cpu_device *dev = impl;
    return cpu_quantize_rows(dev->kern, dev->pool, cpu_host(x), x->b * x->h * x->n, x->d, rule, codes, scales);
}

/* MXFP8 rows by the format core itself (the definition, bit-exact by construction). */
static mxa_status cpu_quantize_mxfp8(void *impl, const mxa_array *x, uint8_t *codes, uint8_t *scales)
{
    (void)impl;
    const int64_t rows = x->b * x->h * x->n, nblocks = (x->d + MXA_BLOCK - 1) / MXA_BLOCK;
    const float *src = cpu_host(x);
    for (int64_t r = 0; r < rows; r++)
        mxa_mxfp8_quantize_row(src + r * x->d, x->d, codes + r * nblocks * MXA_BLOCK, scales + r * nblocks);
    return MXA_OK;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static mxa_status cpu_attention_plain(cpu_device *dev, const mxa_attention_call *call, mxa_attention_info *info)
{
    snprintf(info->variant, sizeof info->variant, "%s", cpu_variant_name(dev->isa));
    const size_t n = (size_t)(call->o.b * call->o.h * call->o.n * call->o.d);
    /* a 16-bit output (in a "device" buffer, host memory here) is rounded once from the f32 result */
    float *o = call->o_dtype == MXA_F32 ? cpu_host(&call->o) : malloc(n * sizeof(float));
    float *lse = call->lse ? call->lse : call->lse_buffer ? (float *)((char *)call->lse_buffer + call->lse_offset) : NULL;
    if (!o) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "cpu attention: out of memory for the float32 result");
    const double t0 = cpu_now();
    mxa_status st = cpu_attention_run(dev->kern, dev->pool, &dev->arena, &dev->scratch, call, cpu_host(&call->q),
                                      cpu_host(&call->k), cpu_host(&call->v), o, lse);
    if (!st && call->o_dtype != MXA_F32) {
        uint16_t *half = (uint16_t *)((char *)call->o.buffer + call->o.offset);
        for (size_t i = 0; i < n; i++) half[i] = call->o_dtype == MXA_F16 ? mxa_f32_to_f16(o[i]) : mxa_f32_to_bf16(o[i]);
    }
    info->kernel_seconds = cpu_now() - t0;
    if (o != cpu_host(&call->o)) free(o);
    return st;
}

/* Pre-quantized K/V (runtime/kv.c's layout, host memory here) decoded to float32 rows:
 * K as stored (rotated), V back from V^T to [heads][nk][d]. */
static mxa_status decode_kv(const mxa_attention_call *call, float **k, float **v)
{
    const uint8_t *base = call->kv.buffer;
    const int64_t rows = call->k.b * call->k.h, nk = call->k.n, d = call->k.d, nk32 = call->kv.nk32;
    *k = malloc((size_t)(rows * nk * d) * sizeof(float));
    *v = malloc((size_t)(rows * nk * d) * sizeof(float));
    float *vt = malloc((size_t)(rows * d * nk32) * sizeof(float));
    mxa_status st = !*k || !*v || !vt ? mxa_fail(MXA_ERR_OUT_OF_MEMORY, "cpu attention: out of memory decoding K/V") : MXA_OK;
    if (!st) st = mxa_dequantize(base + call->kv.offset[0], base + call->kv.offset[1], rows * nk, d, *k);
    if (!st) st = mxa_dequantize(base + call->kv.offset[2], base + call->kv.offset[3], rows * d, nk32, vt);
    for (int64_t r = 0; !st && r < rows; r++)
        for (int64_t t = 0; t < nk; t++)
            for (int64_t c = 0; c < d; c++) (*v)[(r * nk + t) * d + c] = vt[(r * d + c) * nk32 + t];
    free(vt);
    return st;
}

/* A 16-bit q, k or v buffer (host memory here) widened into a float32 copy, exactly. */
static mxa_status widen_input(const mxa_array *a, float **copy)
{
    const size_t n = (size_t)(a->b * a->h * a->n * a->d);
    const uint16_t *src = (const uint16_t *)((const char *)a->buffer + a->offset);
    if (!(*copy = malloc(n * sizeof(float)))) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "cpu attention: out of memory widening a 16-bit input");
    mxa_widen16(a->dtype, src, n, *copy);
    return MXA_OK;
}

static mxa_status cpu_attention(void *impl, const mxa_attention_call *call, mxa_attention_info *info)
{
    cpu_device *dev = impl;
    if (call->q.dtype != MXA_F32 || call->k.dtype != MXA_F32 || call->v.dtype != MXA_F32) {
        mxa_attention_call c = *call;
        mxa_array *in[3] = {&c.q, &c.k, &c.v};
        float *copy[3] = {NULL, NULL, NULL};
        mxa_status st = MXA_OK;
        for (int i = 0; i < 3 && !st; i++)
            if (in[i]->dtype != MXA_F32 && !(st = widen_input(in[i], &copy[i]))) {
                in[i]->host = copy[i], in[i]->buffer = NULL;
                in[i]->dtype = MXA_F32;
            }
        if (!st) st = cpu_attention(impl, &c, info);
        for (int i = 0; i < 3; i++) free(copy[i]);
        return st;
    }
    if (call->kv.buffer) {
        float *k = NULL, *v = NULL;
        mxa_status st = decode_kv(call, &k, &v);
        mxa_attention_call c = *call;
        c.k.host = k, c.k.buffer = NULL;
        c.v.host = v, c.v.buffer = NULL;
        if (!st) st = cpu_attention_plain(dev, &c, info); /* c.kv stays set: K is rotated already */
        free(k);
        free(v);
        return st;
    }
    return cpu_attention_plain(dev, call, info);
}

const mxa_backend_ops mxa_cpu_backend = {
    .name = "cpu",
    .extras = MXA_EXTRA_BIAS | MXA_EXTRA_MASK | MXA_EXTRA_KEY_LENGTHS | MXA_EXTRA_CAUSAL_TOP_LEFT | MXA_EXTRA_OUT_HALF |
              MXA_EXTRA_LSE_BUFFER | MXA_EXTRA_KV | MXA_EXTRA_PV_MXFP8 | MXA_EXTRA_IN_HALF,
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
    .quantize_mxfp8 = cpu_quantize_mxfp8,
};
