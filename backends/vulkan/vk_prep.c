/*
 * Which form of Q/K preparation a device runs, and its dispatch. prep_qk.comp holds a
 * block of 32 per invocation and pairs blocks through shared memory with a barrier per
 * rotation stage; prep_qk_subgroup.comp spreads a row over one subgroup's invocations and
 * needs no shared memory or barrier. Both write the same bits (test_vulkan_prep_i8 holds
 * each against the reference), so the choice is speed only.
 */
#include <stdlib.h>
#include <string.h>

#include "vk_common.h"
#include "../../runtime/status.h"

#define SG_LOCAL 128 /* prep_qk_subgroup.comp's local size */

int vk_prep_qk_subgroup(const vk_device *dev, uint64_t d, uint32_t *p, uint32_t *subgroup_size)
{
    const vk_caps *c = &dev->probe->caps;
    if (!vk_kernel_available(VK_K_PREP_QK_SG_I8) || !(c->flags & MXA_VK_F_SUBGROUP_SHUFFLE)) return 0;
    if (d < 32 || d > 256 || (d & (d - 1)) != 0) return 0; /* the shuffle stages pair lanes i ^ m */
    /* The subgroup size the kernel will see: required where the device lets us, else its
     * fixed default (full subgroups: the local size is a multiple of it). */
    const int control = (c->flags & MXA_VK_F_SUBGROUP_CTRL) && c->required_subgroup_stages_compute;
    const uint32_t sg = c->subgroup_size;
    if (sg < 4 || sg > SG_LOCAL || (sg & (sg - 1)) != 0) return 0;
    if (!control && c->subgroup_min != c->subgroup_max) return 0; /* a size that may vary per pipeline */
    uint32_t per = (uint32_t)d / sg; /* values per invocation so that a row fits in a subgroup */
    if (per < 4) per = 4;           /* whole float4 loads */
    if (per > 32) return 0;
    *p = per;
    *subgroup_size = control ? sg : 0;
    return 1;
}

mxa_status vk_prep_v_dispatch(vk_batch *batch, vk_kernel kernel, uint64_t heads, uint64_t n_pad, uint64_t d,
                               const int32_t spec[VK_SPEC_COUNT], const vk_buffer *const bindings[5], const void *push,
                               uint32_t push_size)
{
    /* either pass: an invocation per column and block of 32 tokens */
    uint32_t gx, gy;
    vk_grid_1d(heads * (n_pad / 32) * d, 64, &gx, &gy);
    return vk_batch_dispatch(batch, kernel, spec, 0, bindings, 5, push, push_size, gx, gy, 1);
}

mxa_status vk_prep_qk_dispatch(vk_batch *batch, vk_kernel kernel, int form, uint64_t rows_pad, uint64_t d, mxa_dtype in_dtype,
                               const vk_buffer *const bindings[3], const void *push, uint32_t push_size)
{
    int32_t spec[VK_SPEC_COUNT] = {(int32_t)d};
    spec[VK_SPEC_IN_TYPE] = mxa_input_code(in_dtype);
    if (form == VK_PREP_QK_AUTO) { /* MXA_VULKAN_PREP_QK=shared: the shared-memory form, to compare the two */
        const char *env = getenv("MXA_VULKAN_PREP_QK");
        if (env && strcmp(env, "shared") == 0) form = VK_PREP_QK_SHARED;
    }
    uint32_t per = 0, sg = 0, gx, gy;
    const int subgroup = form != VK_PREP_QK_SHARED && vk_prep_qk_subgroup(batch->dev, d, &per, &sg);
    if (form == VK_PREP_QK_SUBGROUP && !subgroup)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "vulkan: prep_qk_subgroup does not run on this device at D=%llu",
                        (unsigned long long)d);
    if (!subgroup) { /* an invocation per block of 32 */
        vk_grid_1d(rows_pad, 64 / (uint32_t)(d / 32), &gx, &gy);
        return vk_batch_dispatch(batch, kernel, spec, 0, bindings, 3, push, push_size, gx, gy, 1);
    }
    const vk_kernel sg_kernel = kernel == VK_K_PREP_QK_I8 ? VK_K_PREP_QK_SG_I8
                              : kernel == VK_K_PREP_QK_F16 ? VK_K_PREP_QK_SG_F16 : VK_K_PREP_QK_SG_F32;
    spec[1] = (int32_t)per;
    vk_grid_1d(rows_pad, SG_LOCAL / ((uint32_t)d / per), &gx, &gy); /* SG_LOCAL / (D / P) rows per workgroup */
    return vk_batch_dispatch(batch, sg_kernel, spec, sg, bindings, 3, push, push_size, gx, gy, 1);
}
