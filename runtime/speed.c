/* Device speed for "auto": estimates from the reference runs, and cached measurements (speed.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "speed.h"

/*
 * Each variant's mxattention throughput on the reference device, an NVIDIA H200 (132
 * SMs), at B1 H40 N16384 D128, non-causal, device buffers (`mxa bench --no-blas
 * --no-fp32`), as README.md "Backends" reports it (2026-11-29 .. 2026-12-01): the
 * measured efficiency of each kernel on the same silicon, so that the ranking of two
 * backends on one GPU follows what they measured there.
 */
static const struct {
    const char *variant;
    double tflops;
} reference_rates[] = {
    {"coopmat-khr-i8", 244.4},      /* after the embedding work, one command with cuDNN 601.0 */
    {"coopmat-khr-i8pv", 162.7},    /* 2026-12-01, one command with coopmat-khr-i8 at 243.7 (MXA_KERNEL only) */
    {"coopmat-khr-f16", 199.0},
    {"coopmat-khr-i8-smem", 94.6},
    {"coopmat-khr-f16-smem", 97.3},
    {"intdot", 69.6},               /* 60% of the 116.1 TOPS packed int8 dot rate */
    {"scalar", 0.914},              /* at N4096 */
    {"cl-mma-ptx", 154.4},          /* issue 18's table; 154.2 / 154.6 in the README's runs */
    {"cl-tiled", 23.1},             /* 0.34x of the fp32 peak */
    /* HIP never ran on AMD hardware (backends/hip/README.md): its matrix-core kernels
     * take the rate of the kernel of the same structure that did run (int8 for both
     * products, exact: cl-mma-ptx), the scalar one Vulkan's scalar rate */
    {"hip-mfma-fp4", 154.4},
    {"hip-mfma-i8", 154.4},
    {"hip-scalar", 0.914},
};

/* Compute units assumed when the record has none: the reference's for a discrete GPU,
 * a typical integrated GPU's (12-16 CUs / Xe cores) for an integrated one. */
#define ASSUMED_INTEGRATED_UNITS 16u

double mxa_speed_reference_rate(const char *variant)
{
    for (size_t i = 0; variant && i < sizeof reference_rates / sizeof reference_rates[0]; i++)
        if (strcmp(variant, reference_rates[i].variant) == 0) return reference_rates[i].tflops;
    return 0.0;
}

static int gflops_score(double tflops)
{
    const double g = tflops * 1000.0 + 0.5;
    return g < 1.0 ? 1 : g > 2e9 ? 2000000000 : (int)g; /* a GPU always above the CPU backend's 0 */
}

void mxa_speed_estimate(mxa_device_info *info, mxa_speed_kind kind, uint32_t units)
{
    if (kind == MXA_SPEED_HOST_CPU) {
        mxa_speed_exclude(info, -10,
                          "the host CPU behind a GPU API: the native CPU backend runs these cores with its own kernels");
        return;
    }
    const double rate = mxa_speed_reference_rate(info->variant);
    if (rate <= 0.0) {
        info->score = 1;
        snprintf(info->score_reason, sizeof info->score_reason,
                 "no reference rate for %.48s: 1 (above the CPU backend); mxa probe --measure measures it", info->variant);
        return;
    }
    const uint32_t assumed = kind == MXA_SPEED_INTEGRATED ? ASSUMED_INTEGRATED_UNITS : MXA_SPEED_REF_UNITS;
    const uint32_t n = units ? units : assumed;
    const double tflops = rate * (double)n / (double)MXA_SPEED_REF_UNITS;
    info->score = gflops_score(tflops);
    snprintf(info->score_reason, sizeof info->score_reason,
             "estimate %.1f TFLOP/s: %.48s ran %.1f on an H200 (132 SMs, README), x %u/132 units%s", tflops,
             info->variant, rate, n, units ? "" : " (assumed: the driver reports none)");
}

void mxa_speed_exclude(mxa_device_info *info, int score, const char *why)
{
    info->score = score;
    snprintf(info->score_reason, sizeof info->score_reason, "%d: %s", score, why);
}

void mxa_speed_cache_key(const mxa_device_info *info, char *key, size_t size)
{
    snprintf(key, size, "speed1|%s|%s|%s|%s|%s", info->backend, info->name, info->vendor, info->driver, info->variant);
}

void mxa_speed_apply_measured(mxa_device_info *info)
{
    if (info->score < 0) return; /* a policy, not a speed */
    char key[3 * MXA_NAME_LEN + 160];
    void *data = NULL;
    size_t size = 0;
    mxa_speed_cache_key(info, key, sizeof key);
    if (mxa_cache_load("speed", key, &data, &size) != MXA_OK) return;
    mxa_speed_record rec;
    const int ok = size == sizeof rec;
    if (ok) memcpy(&rec, data, sizeof rec);
    free(data);
    if (!ok || !isfinite(rec.tflops) || rec.tflops <= 0.0 || rec.tflops > 1e6) return;
    info->score = gflops_score(rec.tflops);
    snprintf(info->score_reason, sizeof info->score_reason,
             "measured %.3g TFLOP/s (mxa probe --measure: mxattention B1 H%d N%d D%d, median of %d, cached)", rec.tflops,
             (int)rec.heads, (int)rec.keys, (int)rec.d, (int)rec.reps);
}

mxa_status mxa_speed_store(const mxa_device_info *info, const mxa_speed_record *rec)
{
    char key[3 * MXA_NAME_LEN + 160];
    mxa_speed_cache_key(info, key, sizeof key);
    return mxa_cache_store("speed", key, rec, sizeof *rec);
}
