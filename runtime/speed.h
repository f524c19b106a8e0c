/*
 * How fast a device runs attention: the score "auto" ranks devices by (internal).
 *
 * A device's score is its attention throughput in GFLOP/s (4 B H N^2 D per second, the
 * convention of `mxa bench`) with the kernel variant it would run: measured by
 * mxa_device_measure (`mxa probe --measure`) and cached per device, driver and variant,
 * or else estimated from the variant's measured rate on the reference device (the
 * README's H200 runs) scaled by the device's compute units. The native CPU backend
 * scores 0 unless measured; a negative score is a policy, never replaced by a
 * measurement: a CPU device behind a GPU API (lavapipe, PoCL), which runs on the
 * cores the native CPU backend uses with slower kernels, or a device with no usable
 * variant.
 */
#ifndef MXA_RUNTIME_SPEED_H
#define MXA_RUNTIME_SPEED_H

#include <stddef.h>
#include <stdint.h>

#include "mxa/mxa.h"

/* The reference device of the rates: NVIDIA H200, 132 SMs. */
#define MXA_SPEED_REF_UNITS 132u

/* What kind of device an estimate is for. */
typedef enum mxa_speed_kind {
    MXA_SPEED_DISCRETE = 0, /* a discrete (or virtual) GPU or accelerator */
    MXA_SPEED_INTEGRATED,   /* an integrated GPU */
    MXA_SPEED_HOST_CPU,     /* the host CPU behind a GPU API: below the native CPU backend */
} mxa_speed_kind;

/* The variant's throughput on the reference device in TFLOP/s, 0 if none is known. */
double mxa_speed_reference_rate(const char *variant);

/* Sets info->score and info->score_reason: the estimate for info->variant on a device
 * of `kind` with `units` SMs/CUs (0: the record has none, a typical count is assumed). */
void mxa_speed_estimate(mxa_device_info *info, mxa_speed_kind kind, uint32_t units);

/* Sets a policy score below every estimate (negative) with its reason. */
void mxa_speed_exclude(mxa_device_info *info, int score, const char *why);

/* The cache key of a device's measurement: backend, name, driver and variant. */
void mxa_speed_cache_key(const mxa_device_info *info, char *key, size_t size);

/* Replaces a non-negative score by the cached measurement of this device, driver and
 * variant, if there is one (the runtime calls it after every probe). */
void mxa_speed_apply_measured(mxa_device_info *info);

/* The cached entry (what mxa_device_measure stores). */
typedef struct mxa_speed_record {
    double tflops;
    int32_t heads, keys, d, reps;
} mxa_speed_record;

/* Stores a measurement for the device `info` describes. */
mxa_status mxa_speed_store(const mxa_device_info *info, const mxa_speed_record *rec);

#endif
