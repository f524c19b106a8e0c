/*
 * The capability probe: one pNext chain of feature and property structures per
 * physical device. A feature counts only when its extension is present (or its
 * core version is) AND its feature bit is set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_common.h"
#include "../../runtime/speed.h"
#include "../../runtime/status.h"

#define VK_DEFAULT_BC 64

typedef struct ext_list {
    VkExtensionProperties *props;
    uint32_t count;
} ext_list;

static int has_ext(const ext_list *l, const char *name)
{
    for (uint32_t i = 0; i < l->count; i++)
        if (strcmp(l->props[i].extensionName, name) == 0) return 1;
    return 0;
}

static void append(void **tail, void *s)
{
    /* every Vulkan structure starts with sType, pNext */
    VkBaseOutStructure *t = (VkBaseOutStructure *)*tail;
    t->pNext = (VkBaseOutStructure *)s;
    *tail = s;
}

static void add_cap(char *buf, size_t size, const char *what)
{
    size_t len = strlen(buf);
    if (len + strlen(what) + 2 < size) snprintf(buf + len, size - len, "%s%s", len ? " " : "", what);
}

/* The score for "auto" (runtime/speed.h): the estimated attention throughput of the
 * chosen variant from its rate on the H200 and the device's SM/CU count; lavapipe (a CPU
 * device) below mxa's native CPU backend (score 0) so that CI picks the CPU. */
void vk_device_score(const vk_caps *caps, uint32_t units, mxa_device_info *info)
{
    switch ((VkPhysicalDeviceType)caps->device_type) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU: mxa_speed_estimate(info, MXA_SPEED_HOST_CPU, 0); break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: mxa_speed_estimate(info, MXA_SPEED_INTEGRATED, units); break;
    default: mxa_speed_estimate(info, MXA_SPEED_DISCRETE, units); break;
    }
}

/* Every subgroup-scope VK_KHR_cooperative_matrix configuration into data->caps.khr (at
 * most VK_MAX_SHAPES, in the driver's order); returns how many configurations the driver
 * lists in all (any scope). */
static uint32_t probe_coopmat_khr(VkInstance inst, VkPhysicalDevice pd, vk_probe_data *data)
{
    mxa_pfn_coopmat_props_khr fn =
        (mxa_pfn_coopmat_props_khr)vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    uint32_t n = 0;
    if (!fn || fn(pd, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    mxa_vk_coopmat_props_khr *p = calloc(n, sizeof *p);
    if (!p) return n;
    for (uint32_t i = 0; i < n; i++) p[i].sType = MXA_VK_STYPE_COOPMAT_PROPERTIES_KHR;
    VkResult r = fn(pd, &n, p);
    if (r == VK_SUCCESS || r == VK_INCOMPLETE)
        for (uint32_t i = 0; i < n && data->caps.n_khr < VK_MAX_SHAPES; i++) {
            if ((uint32_t)p[i].scope != VK_SCOPE_SUBGROUP_VALUE) continue;
            vk_coopmat_shape *s = &data->caps.khr[data->caps.n_khr++];
            s->m = p[i].MSize;
            s->n = p[i].NSize;
            s->k = p[i].KSize;
            s->a = (uint32_t)p[i].AType;
            s->b = (uint32_t)p[i].BType;
            s->c = (uint32_t)p[i].CType;
            s->r = (uint32_t)p[i].ResultType;
            s->scope = (uint32_t)p[i].scope;
            s->saturating = p[i].saturatingAccumulation ? 1u : 0u;
        }
    free(p);
    return n;
}

/* The KHR configurations for the capability string: s8 x s8 -> s32 as "i8", f16 x f16 ->
 * f32 as "f16" (each shape once, saturating or not), the others (any scope) counted:
 * "coopmat-khr(i8 16x16x32 16x8x32; f16 16x16x16 16x8x16; +8 other)". */
static void khr_shapes_text(const vk_caps *caps, uint32_t total, char *out, size_t size)
{
    static const struct {
        const char *label;
        uint32_t ab, cr;
    } groups[] = {{"i8", VK_CT_S8, VK_CT_S32}, {"f16", VK_CT_F16, VK_CT_F32}};
    uint32_t listed = 0;
    int any = 0;
    size_t len = (size_t)snprintf(out, size, "coopmat-khr(");
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        int first = 1;
        for (uint32_t i = 0; i < caps->n_khr; i++) {
            const vk_coopmat_shape *s = &caps->khr[i];
            if (s->a != groups[g].ab || s->b != groups[g].ab || s->c != groups[g].cr || s->r != groups[g].cr) continue;
            listed++;
            int dup = 0;
            for (uint32_t j = 0; j < i; j++) {
                const vk_coopmat_shape *t = &caps->khr[j];
                dup |= t->m == s->m && t->n == s->n && t->k == s->k && t->a == s->a && t->b == s->b && t->c == s->c &&
                       t->r == s->r;
            }
            if (dup || len >= size) continue;
            if (first) len += (size_t)snprintf(out + len, size - len, "%s%s", any ? "; " : "", groups[g].label);
            if (len < size) len += (size_t)snprintf(out + len, size - len, " %ux%ux%u", s->m, s->n, s->k);
            first = 0;
            any = 1;
        }
    }
    if (len < size && total > listed) len += (size_t)snprintf(out + len, size - len, "%s+%u other", any ? "; " : "", total - listed);
    if (len < size) snprintf(out + len, size - len, ")");
}

/* The capability record kernel selection reads (vk_select.h), from what the probe found. */
static void vk_caps_from_probe(vk_probe_data *data, const VkPhysicalDeviceProperties *base,
                               const VkPhysicalDeviceDriverProperties *drv,
                               const VkPhysicalDeviceSubgroupSizeControlProperties *sgc,
                               const VkPhysicalDeviceShaderIntegerDotProductProperties *dot)
{
    vk_caps *c = &data->caps; /* c->khr, c->n_khr: probe_coopmat_khr */
    c->vendor_id = base->vendorID;
    c->device_id = base->deviceID;
    c->driver_version = base->driverVersion;
    c->api_version = base->apiVersion;
    c->device_type = (uint32_t)base->deviceType;
    snprintf(c->device_name, sizeof c->device_name, "%.127s", base->deviceName);
    if (drv) {
        c->driver_id = (uint32_t)drv->driverID;
        snprintf(c->driver_name, sizeof c->driver_name, "%.63s", drv->driverName);
    }
    c->int_dot_accel = dot && (c->flags & MXA_VK_F_INT_DOT) && dot->integerDotProduct4x8BitPackedSignedAccelerated;
    c->subgroup_min = c->subgroup_max = c->subgroup_size;
    if (sgc && sgc->minSubgroupSize && sgc->maxSubgroupSize >= sgc->minSubgroupSize) {
        c->subgroup_min = sgc->minSubgroupSize;
        c->subgroup_max = sgc->maxSubgroupSize;
        c->required_subgroup_stages_compute = (sgc->requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    }
    c->max_shared = base->limits.maxComputeSharedMemorySize;
    c->max_invocations = base->limits.maxComputeWorkGroupInvocations;
    /* the KHR fragment layout is not measured yet: quad_ok stays 0 ("unknown") */
}

/* The names of MXA_VK_F_* bits as the capability list spells them, for "not-enabled(...)"
 * (short: the list must fit in the capability string). */
static void flag_names(uint32_t flags, char *out, size_t size)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {{MXA_VK_F_FP16, "fp16"},           {MXA_VK_F_INT8, "int8"},     {MXA_VK_F_STORAGE16, "storage16"},
                 {MXA_VK_F_STORAGE8, "storage8"},      {MXA_VK_F_INT_DOT, "int-dot"},
                 {MXA_VK_F_SUBGROUP_CTRL, "subgroup-size-control"}, {MXA_VK_F_COOPMAT_KHR, "coopmat-khr"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (flags & names[i].bit) add_cap(out, size, names[i].name);
}

void vk_describe_variant(const vk_probe_data *data, mxa_device_info *info)
{
    const char *variant = vk_choose_variant(data, NULL, info->variant_reason, sizeof info->variant_reason);
    snprintf(info->variant, sizeof info->variant, "%s", variant);
}

mxa_status vk_probe_physical(VkInstance inst, VkPhysicalDevice pd, vk_probe_data *data, mxa_device_info *info,
                             vk_enabled *enabled)
{
    mxa_status st = MXA_OK;
    ext_list ext = {0};
    VkQueueFamilyProperties *qf = NULL;
    memset(data, 0, sizeof *data);

    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &ext.count, NULL) == VK_SUCCESS && ext.count) {
        ext.props = calloc(ext.count, sizeof *ext.props);
        if (!ext.props) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan probe: out of memory");
        if (vkEnumerateDeviceExtensionProperties(pd, NULL, &ext.count, ext.props) != VK_SUCCESS) ext.count = 0;
    }
    VkPhysicalDeviceProperties base;
    vkGetPhysicalDeviceProperties(pd, &base);
    const uint32_t api = base.apiVersion;
    const int v12 = api >= VK_API_VERSION_1_2, v13 = api >= VK_API_VERSION_1_3;
    const int e_f16i8 = v12 || has_ext(&ext, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    const int e_s8 = v12 || has_ext(&ext, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    const int e_dot = v13 || has_ext(&ext, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    const int e_sgc = v13 || has_ext(&ext, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    const int e_nv = has_ext(&ext, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    const int e_khr = has_ext(&ext, MXA_VK_KHR_COOPMAT_NAME);
    const int e_pex = has_ext(&ext, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    const int e_drv = v12 || has_ext(&ext, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    const int e_sm = has_ext(&ext, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);     /* NVIDIA: the SM count */
    const int e_amd = has_ext(&ext, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME); /* AMD: the CU count */
    data->has_push_descriptor = has_ext(&ext, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    data->has_external_fd = has_ext(&ext, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);

    /* ---- features: one chain, only structures whose extension/version exists ---- */
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDevice16BitStorageFeatures f_s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f_f16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDevice8BitStorageFeatures f_s8 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderIntegerDotProductFeatures f_dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeatures f_sgc = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV f_nv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    mxa_vk_coopmat_features_khr f_khr = {.sType = MXA_VK_STYPE_COOPMAT_FEATURES_KHR};
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR f_pex = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    void *tail = &f2;
    append(&tail, &f_s16);
    if (e_f16i8) append(&tail, &f_f16);
    if (e_s8) append(&tail, &f_s8);
    if (e_dot) append(&tail, &f_dot);
    if (e_sgc) append(&tail, &f_sgc);
    if (e_nv) append(&tail, &f_nv);
    if (e_khr) append(&tail, &f_khr);
    if (e_pex) append(&tail, &f_pex);
    vkGetPhysicalDeviceFeatures2(pd, &f2);

    /* ---- properties: the same rule ---- */
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    VkPhysicalDeviceIDProperties p_id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties p_sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceSubgroupSizeControlProperties p_sgc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceShaderIntegerDotProductProperties p_dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    VkPhysicalDeviceCooperativeMatrixPropertiesNV p_nv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV};
    mxa_vk_coopmat_features_khr p_khr = {.sType = MXA_VK_STYPE_COOPMAT_DEVICE_PROPERTIES_KHR}; /* sType, pNext, stages */
    VkPhysicalDeviceDriverProperties p_drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV p_sm = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceShaderCorePropertiesAMD p_amd = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    tail = &p2;
    append(&tail, &p_id);
    append(&tail, &p_sg);
    if (e_sgc) append(&tail, &p_sgc);
    if (e_dot) append(&tail, &p_dot);
    if (e_nv) append(&tail, &p_nv);
    if (e_khr) append(&tail, &p_khr);
    if (e_drv) append(&tail, &p_drv);
    if (e_sm) append(&tail, &p_sm);
    if (e_amd) append(&tail, &p_amd);
    vkGetPhysicalDeviceProperties2(pd, &p2);

    memcpy(data->uuid, p_id.deviceUUID, VK_UUID_SIZE);
    memcpy(data->cache_uuid, base.pipelineCacheUUID, VK_UUID_SIZE);
    data->storage_align = base.limits.minStorageBufferOffsetAlignment ? base.limits.minStorageBufferOffsetAlignment : 4;
    data->caps.subgroup_size = p_sg.subgroupSize;
    data->timestamp_period = base.limits.timestampPeriod;

    if (f_s16.storageBuffer16BitAccess) data->caps.flags |= MXA_VK_F_STORAGE16;
    if (e_f16i8 && f_f16.shaderFloat16) data->caps.flags |= MXA_VK_F_FP16;
    if (e_f16i8 && f_f16.shaderInt8) data->caps.flags |= MXA_VK_F_INT8;
    if (e_s8 && f_s8.storageBuffer8BitAccess) data->caps.flags |= MXA_VK_F_STORAGE8;
    if (e_dot && f_dot.shaderIntegerDotProduct) data->caps.flags |= MXA_VK_F_INT_DOT;
    if (e_sgc && f_sgc.subgroupSizeControl && f_sgc.computeFullSubgroups) data->caps.flags |= MXA_VK_F_SUBGROUP_CTRL;
    if (e_nv && f_nv.cooperativeMatrix && (p_nv.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT))
        data->caps.flags |= MXA_VK_F_COOPMAT_NV;
    if (e_khr && f_khr.cooperativeMatrix) data->caps.flags |= MXA_VK_F_COOPMAT_KHR;
    if (e_pex && f_pex.pipelineExecutableInfo) data->caps.flags |= MXA_VK_F_PIPELINE_STATS;
    if ((p_sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
        (p_sg.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT))
        data->caps.flags |= MXA_VK_F_SUBGROUP_SHUFFLE;
    if ((p_sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
        (p_sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
        (p_sg.supportedOperations & VK_SUBGROUP_FEATURE_VOTE_BIT))
        data->caps.flags |= MXA_VK_F_SUBGROUP_ARITH;
    if (enabled) { /* an application's device: only what it enabled counts */
        const uint32_t usable = MXA_VK_F_SUBGROUP_SHUFFLE | MXA_VK_F_SUBGROUP_ARITH | MXA_VK_F_COOPMAT_NV; /* no enable bit */
        enabled->missing[0] = 0;
        flag_names(data->caps.flags & ~(enabled->flags | usable), enabled->missing, sizeof enabled->missing);
        if (data->has_push_descriptor && !enabled->push_descriptor)
            add_cap(enabled->missing, sizeof enabled->missing, "push-descriptor");
        if (data->has_external_fd && !enabled->external_fd)
            add_cap(enabled->missing, sizeof enabled->missing, "external-memory-fd");
        data->caps.flags &= enabled->flags | usable;
        data->has_push_descriptor &= enabled->push_descriptor;
        data->has_external_fd &= enabled->external_fd;
    }
    const uint32_t khr_configs = (data->caps.flags & MXA_VK_F_COOPMAT_KHR) ? probe_coopmat_khr(inst, pd, data) : 0;

    /* compute queue family and its timestamp support */
    uint32_t nqf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nqf, NULL);
    qf = calloc(nqf ? nqf : 1, sizeof *qf);
    if (!qf) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan probe: out of memory");
        goto out;
    }
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nqf, qf);
    data->queue_family = UINT32_MAX;
    if (enabled && enabled->queue_family < nqf && (qf[enabled->queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
        data->queue_family = enabled->queue_family;
    for (uint32_t i = 0; i < nqf && !enabled; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            /* prefer a compute family that is not also graphics (async compute) only if it has timestamps */
            if (data->queue_family == UINT32_MAX) data->queue_family = i;
        }
    if (data->queue_family == UINT32_MAX) {
        st = MXA_ERR_NOT_FOUND;
        goto out;
    }
    data->timestamp_bits = base.limits.timestampComputeAndGraphics || qf[data->queue_family].timestampValidBits
                               ? qf[data->queue_family].timestampValidBits : 0;

    vk_caps_from_probe(data, &base, e_drv ? &p_drv : NULL, e_sgc ? &p_sgc : NULL, e_dot ? &p_dot : NULL);
    if ((data->caps.flags & MXA_VK_F_COOPMAT_KHR) && !enabled)
        (void)vk_khr_fragment_map(data); /* fills data->caps.quad_ok, maps, note */

    /* ---- the public description ---- */
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(pd, &mem);
    uint64_t device_local = 0;
    for (uint32_t i = 0; i < mem.memoryHeapCount; i++)
        if ((mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && mem.memoryHeaps[i].size > device_local)
            device_local = mem.memoryHeaps[i].size;
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%.120s", base.deviceName);
    snprintf(info->vendor, sizeof info->vendor, "0x%04x", base.vendorID);
    if (e_drv)
        snprintf(info->driver, sizeof info->driver, "%.48s %.48s (id %d, version 0x%x)", p_drv.driverName,
                 p_drv.driverInfo, (int)p_drv.driverID, base.driverVersion);
    else
        snprintf(info->driver, sizeof info->driver, "version 0x%x", base.driverVersion);
    info->memory_bytes = device_local;
    /* core Vulkan has no unit count; NVIDIA and AMD extensions do (the speed estimate reads it) */
    info->compute_units = e_sm ? p_sm.shaderSMCount
                          : e_amd ? p_amd.shaderEngineCount * p_amd.shaderArraysPerEngineCount * p_amd.computeUnitsPerShaderArray
                                  : 0;
    info->subgroup_min = info->subgroup_max = p_sg.subgroupSize;
    if (e_sgc && p_sgc.minSubgroupSize) {
        info->subgroup_min = p_sgc.minSubgroupSize;
        info->subgroup_max = p_sgc.maxSubgroupSize;
    }
    info->shared_memory_bytes = base.limits.maxComputeSharedMemorySize;
    char *caps = info->capabilities;
    size_t cs = sizeof info->capabilities;
    snprintf(caps, cs, "vk%u.%u", VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));
    if (data->caps.flags & MXA_VK_F_FP16) { info->caps |= MXA_CAP_FP16; add_cap(caps, cs, "fp16"); }
    if (data->caps.flags & MXA_VK_F_INT8) { info->caps |= MXA_CAP_INT8; add_cap(caps, cs, "int8"); }
    if (data->caps.flags & MXA_VK_F_STORAGE16) add_cap(caps, cs, "storage16");
    if (data->caps.flags & MXA_VK_F_STORAGE8) add_cap(caps, cs, "storage8");
    if (data->caps.flags & MXA_VK_F_INT_DOT) {
        info->caps |= MXA_CAP_INT_DOT;
        add_cap(caps, cs, p_dot.integerDotProduct4x8BitPackedSignedAccelerated ? "int-dot(accel 4x8 packed)" : "int-dot");
    }
    if (data->caps.flags & MXA_VK_F_SUBGROUP_ARITH) { info->caps |= MXA_CAP_SUBGROUPS; add_cap(caps, cs, "subgroups"); }
    if (data->caps.flags & MXA_VK_F_SUBGROUP_CTRL) add_cap(caps, cs, "subgroup-size-control");
    if (data->caps.flags & MXA_VK_F_COOPMAT_NV) add_cap(caps, cs, "coopmat-nv"); /* recorded; the kernels use KHR */
    if (data->caps.flags & MXA_VK_F_COOPMAT_KHR) {
        info->caps |= MXA_CAP_COOPMAT;
        char t[160];
        khr_shapes_text(&data->caps, khr_configs, t, sizeof t);
        add_cap(caps, cs, t);
        if (data->caps.quad_ok[0] || data->caps.quad_ok[1]) add_cap(caps, cs, "quad-layout");
    }
    if (data->timestamp_bits > 0) {
        info->caps |= MXA_CAP_TIMESTAMPS;
        add_cap(caps, cs, "timestamps");
    }
    if (enabled && enabled->missing[0]) {
        char t[MXA_REASON_LEN + 32];
        snprintf(t, sizeof t, "not-enabled(%s)", enabled->missing);
        add_cap(caps, cs, t);
    }
    vk_describe_variant(data, info);
    info->default_bc = VK_DEFAULT_BC;
    vk_device_score(&data->caps, info->compute_units, info);
out:
    free(qf);
    free(ext.props);
    return st;
}
