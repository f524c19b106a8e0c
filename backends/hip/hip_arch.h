/*
 * What an AMD GPU architecture can do, and which kernel variant runs on it
 * (pure functions of the gcnArchName and the environment: unit-testable
 * without a GPU).
 */
#ifndef MXA_HIP_ARCH_H
#define MXA_HIP_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "mxa/mxa.h"

typedef struct mxa_hip_arch {
    char full[256]; /* gcnArchName as reported: "gfx942:sramecc+:xnack-" */
    char base[32];  /* the processor alone: "gfx942" */
    int mfma_i8_k;  /* int8 MFMA 32x32xK: 0 (none), 8 (gfx908/gfx90a), 16 (gfx94x/gfx950) */
    int native_fp4; /* scaled MXFP4 MFMA (gfx950) */
    int wmma;       /* RDNA3/4 WMMA (gfx11/gfx12): noted, no variant uses it yet */
    uint32_t caps;  /* MXA_CAP_* */
} mxa_hip_arch;

/* Parses a gcnArchName ("gfx" + processor, optional ":feature" suffixes). */
mxa_status mxa_hip_arch_parse(const char *gcn_arch_name, mxa_hip_arch *out);

/* Human-readable capability list ("wave64 mfma-int8 native-mxfp4 ..."). */
void mxa_hip_arch_describe(const mxa_hip_arch *arch, int wave_size, char *buf, size_t size);

typedef enum mxa_hip_variant {
    MXA_HIP_SCALAR = 0,  /* portable: one workgroup per query row */
    MXA_HIP_MFMA_I8 = 1, /* exact int8 MFMA emulation of the FP4 products */
    MXA_HIP_MFMA_FP4 = 2 /* gfx950 scaled MXFP4 MFMA */
} mxa_hip_variant;

typedef struct mxa_hip_choice {
    mxa_hip_variant variant;
    char name[48];
    char reason[MXA_REASON_LEN];
    int default_bc;
} mxa_hip_choice;

/* The variant name ("hip-mfma-fp4", "hip-mfma-i8", "hip-scalar"). */
const char *mxa_hip_variant_name(mxa_hip_variant v);

/* The device's variant: the best the arch supports, after MXA_KERNEL,
 * MXA_DISABLE_COOPMAT and MXA_DISABLE_NATIVE_FP4 (read now). The MFMA
 * variants are written for wave64: any other wave size gets the scalar one. */
void mxa_hip_choose(const mxa_hip_arch *arch, int wave_size, mxa_hip_choice *out);

/* The variant one call runs: the device's, unless the call needs the scalar
 * one (a quantizer switched off, or bc above what the MFMA tile holds). */
void mxa_hip_choose_for_call(const mxa_hip_choice *device, const mxa_attention_desc *desc, int bc,
                             mxa_hip_choice *out);

/* info->score and score_reason for "auto" (runtime/speed.h): the estimated attention
 * throughput of info->variant from its reference rate and info->compute_units. */
void mxa_hip_score(mxa_device_info *info);

/* Largest key tile the MFMA variants keep in LDS, and the scalar one. */
#define MXA_HIP_MFMA_MAX_BC 256
#define MXA_HIP_SCALAR_MAX_BC 4096

#endif
