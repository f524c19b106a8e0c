/* AMD architecture capabilities and kernel-variant selection. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "../../runtime/env.h"
#include "../../runtime/speed.h"
#include "../../runtime/status.h"
#include "hip_arch.h"

mxa_status mxa_hip_arch_parse(const char *name, mxa_hip_arch *out)
{
    memset(out, 0, sizeof *out);
    if (!name || strncmp(name, "gfx", 3) != 0 || !isalnum((unsigned char)name[3]))
        return mxa_fail(MXA_ERR_UNSUPPORTED, "hip: '%s' is not a gfx architecture name", name ? name : "(null)");
    size_t n = strcspn(name, ":");
    if (n >= sizeof out->base || strlen(name) >= sizeof out->full)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "hip: architecture name '%s' is too long", name);
    memcpy(out->base, name, n);
    snprintf(out->full, sizeof out->full, "%s", name);
    const char *b = out->base;

    /* Matrix cores: CDNA1 (gfx908), CDNA2 (gfx90a), CDNA3 (gfx940/941/942), CDNA4 (gfx950). */
    if (strcmp(b, "gfx908") == 0 || strcmp(b, "gfx90a") == 0) out->mfma_i8_k = 8;
    if (strncmp(b, "gfx94", 5) == 0 || strcmp(b, "gfx950") == 0) out->mfma_i8_k = 16;
    out->native_fp4 = strcmp(b, "gfx950") == 0;
    out->wmma = strncmp(b, "gfx11", 5) == 0 || strncmp(b, "gfx12", 5) == 0;

    out->caps = MXA_CAP_FP16 | MXA_CAP_INT8 | MXA_CAP_SUBGROUPS;
    if (out->mfma_i8_k || out->wmma) out->caps |= MXA_CAP_COOPMAT;
    if (out->native_fp4) out->caps |= MXA_CAP_NATIVE_FP4;
    /* Packed int8 dot (v_dot4_i32_i8): gfx906/908/90a/94x/950 and RDNA2+. */
    if (out->mfma_i8_k || strcmp(b, "gfx906") == 0 || strncmp(b, "gfx103", 6) == 0 || out->wmma)
        out->caps |= MXA_CAP_INT_DOT;
    return MXA_OK;
}

void mxa_hip_arch_describe(const mxa_hip_arch *arch, int wave_size, char *buf, size_t size)
{
    snprintf(buf, size, "%s wave%d fp16 int8%s%s%s%s", arch->full, wave_size,
             (arch->caps & MXA_CAP_INT_DOT) ? " int-dot" : "",
             arch->mfma_i8_k ? (arch->mfma_i8_k == 16 ? " mfma-int8-32x32x16" : " mfma-int8-32x32x8") : "",
             arch->native_fp4 ? " native-mxfp4 (mfma-scale-32x32x64-f8f6f4)" : "",
             arch->wmma ? " wmma (not used by a variant yet)" : "");
}

const char *mxa_hip_variant_name(mxa_hip_variant v)
{
    switch (v) {
    case MXA_HIP_MFMA_FP4: return "hip-mfma-fp4";
    case MXA_HIP_MFMA_I8: return "hip-mfma-i8";
    case MXA_HIP_SCALAR: break;
    }
    return "hip-scalar";
}

static int supported(const mxa_hip_arch *arch, int wave_size, mxa_hip_variant v)
{
    if (v != MXA_HIP_SCALAR && wave_size != 64) return 0;
    if (v == MXA_HIP_MFMA_FP4) return arch->native_fp4;
    if (v == MXA_HIP_MFMA_I8) return arch->mfma_i8_k != 0;
    return 1;
}

/* MXA_KERNEL names one of ours? Accepts "hip-mfma-i8" and "mfma-i8". */
static int forced_variant(const char *name, mxa_hip_variant *v)
{
    if (!name) return 0;
    if (strncmp(name, "hip-", 4) == 0) name += 4;
    if (strcmp(name, "mfma-fp4") == 0) *v = MXA_HIP_MFMA_FP4;
    else if (strcmp(name, "mfma-i8") == 0) *v = MXA_HIP_MFMA_I8;
    else if (strcmp(name, "scalar") == 0) *v = MXA_HIP_SCALAR;
    else return 0;
    return 1;
}

static void set_choice(mxa_hip_choice *out, mxa_hip_variant v)
{
    out->variant = v;
    snprintf(out->name, sizeof out->name, "%s", mxa_hip_variant_name(v));
    out->default_bc = v == MXA_HIP_SCALAR ? 64 : 128;
}

void mxa_hip_choose(const mxa_hip_arch *arch, int wave_size, mxa_hip_choice *out)
{
    memset(out, 0, sizeof *out);
    const char *kernel = mxa_env_kernel();
    mxa_hip_variant forced;
    if (forced_variant(kernel, &forced)) {
        if (supported(arch, wave_size, forced)) {
            set_choice(out, forced);
            snprintf(out->reason, sizeof out->reason, "forced by MXA_KERNEL=%s", kernel);
            return;
        }
        /* Fall through to the automatic choice, saying why. */
    }
    const int coop_off = mxa_env_flag("MXA_DISABLE_COOPMAT");
    const int fp4_off = mxa_env_flag("MXA_DISABLE_NATIVE_FP4");
    const char *prefix = "";
    char note[96] = "";
    if (kernel && forced_variant(kernel, &forced)) {
        snprintf(note, sizeof note, "MXA_KERNEL=%s is not supported on %s; ", kernel, arch->base);
        prefix = note;
    }
    if (wave_size != 64 && (arch->mfma_i8_k || arch->native_fp4)) {
        set_choice(out, MXA_HIP_SCALAR);
        snprintf(out->reason, sizeof out->reason, "%swavefront size %d: the MFMA variants need 64", prefix, wave_size);
    } else if (arch->native_fp4 && !coop_off && !fp4_off) {
        set_choice(out, MXA_HIP_MFMA_FP4);
        snprintf(out->reason, sizeof out->reason, "%s%s has scaled MXFP4 MFMA: P^ and V^ go to the matrix core as FP4 with E8M0 scales",
                 prefix, arch->base);
    } else if (arch->mfma_i8_k && !coop_off) {
        set_choice(out, MXA_HIP_MFMA_I8);
        snprintf(out->reason, sizeof out->reason, "%s%s int8 MFMA emulates the FP4 block products exactly%s", prefix,
                 arch->base, arch->native_fp4 ? " (MXA_DISABLE_NATIVE_FP4 set)" : "");
    } else {
        set_choice(out, MXA_HIP_SCALAR);
        snprintf(out->reason, sizeof out->reason, "%s%s", prefix,
                 coop_off && (arch->mfma_i8_k || arch->native_fp4) ? "matrix cores disabled by MXA_DISABLE_COOPMAT"
                 : arch->wmma ? "portable kernel (RDNA WMMA has no variant yet)"
                              : "portable kernel (no matrix cores on this architecture)");
    }
}

void mxa_hip_choose_for_call(const mxa_hip_choice *device, const mxa_attention_desc *desc, int bc,
                             mxa_hip_choice *out)
{
    *out = *device;
    if (device->variant == MXA_HIP_SCALAR) return;
    const char *why = NULL;
    if ((desc->quantize & MXA_QUANT_ALL) != MXA_QUANT_ALL)
        why = "the recipe leaves a quantizer off and the matrix-core variants need Q/K, P and V in MXFP4";
    else if (bc > MXA_HIP_MFMA_MAX_BC)
        why = "bc is above the 256 keys the matrix-core tile holds";
    if (!why) return;
    set_choice(out, MXA_HIP_SCALAR);
    snprintf(out->reason, sizeof out->reason, "%s", why);
}

void mxa_hip_score(mxa_device_info *info)
{
    /* every HIP device is a GPU; an APU (integrated) reports its CUs like a discrete one */
    mxa_speed_estimate(info, MXA_SPEED_DISCRETE, info->compute_units);
}
