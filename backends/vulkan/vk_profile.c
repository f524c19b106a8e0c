/*
 * mxa_vulkan_profile_plan (include/mxa/mxa_vulkan_profile.h): kernel selection on a capability
 * profile, for `mxa probe --profile`. Compiled in every build: without the Vulkan
 * backend it says so.
 */
#include <stdio.h>
#include <string.h>

#include "mxa/mxa_vulkan_profile.h"
#include "../../runtime/status.h"

#if defined(MXA_HAVE_VULKAN)
#include "vk_common.h"

static const char *type_name(uint32_t t)
{
    static const char *const names[] = {"f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"};
    return t < sizeof names / sizeof names[0] ? names[t] : t == 1000141000u ? "bf16" : "?";
}

static void shape_text(const vk_coopmat_shape *s, char *out, size_t size)
{
    snprintf(out, size, "%ux%ux%u %s->%s", s->m, s->n, s->k, type_name(s->a), type_name(s->r));
}

mxa_status mxa_vulkan_profile_plan(const char *json_text, int64_t head_dim, const char *kernel, unsigned flags,
                                   char *variant, size_t variant_size, char *detail, size_t detail_size)
{
    if (!json_text || !variant || !variant_size || !detail || !detail_size)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_profile_plan: NULL profile text or output");
    if (head_dim < 1 || head_dim > 4096)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_vulkan_profile_plan: head_dim %lld outside 1..4096",
                        (long long)head_dim);
    vk_caps caps;
    char err[256];
    if (vk_caps_from_json(json_text, &caps, err, sizeof err) != 0) return mxa_fail(MXA_ERR_FORMAT, "%s", err);
    vk_select_opts o;
    memset(&o, 0, sizeof o);
    o.kernel = kernel;
    o.disable_coopmat = (flags & MXA_VULKAN_PLAN_DISABLE_COOPMAT) != 0;
    o.disable_int_dot = (flags & MXA_VULKAN_PLAN_DISABLE_INT_DOT) != 0;
    vk_select_opts_built(&o);
    const vk_select_call call = {head_dim, 64, 1, 0, 0};
    vk_plan p;
    vk_select(&caps, &call, &o, &p);
    snprintf(variant, variant_size, "%s", p.variant ? p.variant : "scalar");
    char s[48] = "", pv[48] = "", shapes[128], wg[160];
    if (p.s_shape.m) {
        shape_text(&p.s_shape, s, sizeof s);
        shape_text(&p.pv_shape, pv, sizeof pv);
        snprintf(shapes, sizeof shapes, "Q K^T %s, P V %s", s, pv);
    } else {
        snprintf(shapes, sizeof shapes, "none (no cooperative matrix)");
    }
    char sg[48];
    if (p.subgroup_size) snprintf(sg, sizeof sg, "subgroup size %u required", p.subgroup_size);
    else snprintf(sg, sizeof sg, "the default subgroup size (%u)", caps.subgroup_size);
    if (p.subgroups)
        snprintf(wg, sizeof wg, "%u invocations (%u subgroups), %s, %u query rows, %u bytes shared", p.local_size,
                 p.subgroups, sg, p.rows_per_group, p.shared_bytes);
    else
        snprintf(wg, sizeof wg, "%u invocations, %s, %u query rows, %u bytes shared", p.local_size, sg,
                 p.rows_per_group, p.shared_bytes);
    snprintf(detail, detail_size, "device: %s (vendor 0x%04x, driver id %u%s%s)\nshapes: %s\nworkgroup: %s\nwhy: %s",
             caps.device_name, caps.vendor_id, caps.driver_id, caps.driver_name[0] ? ", " : "", caps.driver_name, shapes,
             wg, p.reason);
    return MXA_OK;
}

#else

mxa_status mxa_vulkan_profile_plan(const char *json_text, int64_t head_dim, const char *kernel, unsigned flags,
                                   char *variant, size_t variant_size, char *detail, size_t detail_size)
{
    (void)json_text, (void)head_dim, (void)kernel, (void)flags;
    if (variant && variant_size) variant[0] = 0;
    if (detail && detail_size) detail[0] = 0;
    return mxa_fail(MXA_ERR_UNSUPPORTED,
                    "mxa_vulkan_profile_plan: this library was built without the Vulkan backend (MXA_WITH_VULKAN)");
}

#endif
