/*
 * libFuzzer target: the Vulkan capability-profile reader (backends/vulkan/vk_caps_json.c)
 * and kernel selection on whatever it accepts (vk_select.c).
 * Invariants: no crash, leak or undefined behaviour; a failure leaves one non-empty line
 * of message and a cleared record; an accepted record is consistent (subgroup sizes
 * ordered, at most VK_MAX_SHAPES configurations) and every plan vk_select makes of it,
 * auto or forced, names a variant, a reason and a workgroup.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const kernels[] = {NULL,     "coopmat-khr-i8", "coopmat-khr-f16", "coopmat-khr-i8-smem",
                                      "coopmat-khr-f16-smem", "intdot", "scalar"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) abort();
    memcpy(text, data, size);
    text[size] = 0;
    vk_caps caps;
    char err[256];
    memset(err, 'x', sizeof err);
    const int rc = vk_caps_from_json(text, &caps, err, sizeof err);
    free(text);
    if (rc != 0) {
        static const vk_caps zero;
        if (rc != -1 || !err[0] || strchr(err, '\n') || !memchr(err, 0, sizeof err) || memcmp(&caps, &zero, sizeof caps) != 0)
            abort();
        return 0;
    }
    if (caps.n_khr > VK_MAX_SHAPES || caps.subgroup_min > caps.subgroup_size || caps.subgroup_size > caps.subgroup_max)
        abort();
    if (!memchr(caps.device_name, 0, sizeof caps.device_name) || !memchr(caps.layout_note, 0, sizeof caps.layout_note))
        abort();
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
        for (int64_t d = 32; d <= 256; d *= 2) {
            vk_select_opts o;
            memset(&o, 0, sizeof o);
            o.khr_built = o.khr_smem_built = o.intdot_built = 1;
            o.kernel = kernels[k];
            o.disable_coopmat = d == 256;
            const vk_select_call call = {d, 64, 1, 0, 0};
            vk_plan p;
            vk_select(&caps, &call, &o, &p);
            if (!p.variant || !p.reason[0] || !memchr(p.reason, 0, sizeof p.reason) || p.local_size == 0) abort();
        }
    return 0;
}
