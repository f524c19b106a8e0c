/*
 * Kernel selection for the Vulkan backend: a pure function from a device's capability
 * record (what the probe read, or a profile file describing a device we do not have)
 * and a call's shape to a plan (the variant, its matrix shapes, its workgroup). Nothing
 * here touches Vulkan or the environment: tests run it on recorded profiles.
 */
#ifndef MXA_VK_SELECT_H
#define MXA_VK_SELECT_H

#include <stddef.h>
#include <stdint.h>

/* Component types, the values of VkComponentTypeKHR (== VkComponentTypeNV). */
enum {
    VK_CT_F16 = 0,
    VK_CT_F32 = 1,
    VK_CT_F64 = 2,
    VK_CT_S8 = 3,
    VK_CT_S16 = 4,
    VK_CT_S32 = 5,
    VK_CT_S64 = 6,
    VK_CT_U8 = 7,
    VK_CT_U16 = 8,
    VK_CT_U32 = 9,
    VK_CT_U64 = 10,
};
#define VK_SCOPE_SUBGROUP_VALUE 3 /* VkScopeKHR: VK_SCOPE_SUBGROUP_KHR */

/* One enumerated cooperative-matrix configuration: A is M x K, B is K x N, C and the result M x N. */
typedef struct vk_coopmat_shape {
    uint32_t m, n, k;
    uint32_t a, b, c, r; /* VK_CT_* */
    uint32_t scope;      /* VK_SCOPE_SUBGROUP_VALUE for subgroup scope */
    uint32_t saturating;
} vk_coopmat_shape;

#define VK_MAX_SHAPES 32

/* Capability flags (MXA_VK_F_* in vk_common.h keep their meaning; this is the record). */
typedef struct vk_caps {
    uint32_t vendor_id, device_id;
    uint32_t driver_id;      /* VkDriverId, 0 = unknown */
    uint32_t driver_version; /* driverVersion as reported */
    uint32_t api_version;
    uint32_t device_type;    /* VkPhysicalDeviceType */
    char device_name[128];
    char driver_name[64];
    uint32_t flags;          /* MXA_VK_F_* (vk_common.h) */
    uint32_t int_dot_accel;  /* integerDotProduct4x8BitPackedSignedAccelerated */
    uint32_t subgroup_size;  /* the default */
    uint32_t subgroup_min, subgroup_max; /* with subgroup size control; else both the default */
    uint32_t required_subgroup_stages_compute; /* requiredSubgroupSizeStages includes compute */
    uint32_t max_shared;     /* maxComputeSharedMemorySize */
    uint32_t max_invocations; /* maxComputeWorkGroupInvocations */
    uint32_t n_khr;          /* VK_KHR_cooperative_matrix configurations */
    vk_coopmat_shape khr[VK_MAX_SHAPES];
    /* The measured fragment layout (vk_coopmat_layout.c): whether KHR 16 x N accumulators
     * (index 0: N = 16, 1: N = 8) and the fp16 16x16 A matrix have the quad structure of
     * the register softmax, and their element orders. A profile may say "unknown". */
    uint32_t quad_ok[2];
    uint32_t c_map[2];       /* 3-bit codes per accumulator element (attn_coopmat_khr.comp) */
    uint32_t a_map;          /* 3-bit codes per fp16 A element */
    char layout_note[96];
} vk_caps;

/* Switches that come from the environment (vk_select_opts_from_env) or a test. */
typedef struct vk_select_opts {
    const char *kernel;       /* MXA_KERNEL, NULL for auto */
    const char *shape;        /* MXA_COOPMAT_SHAPE "MxNxK", NULL for the preferred one */
    int disable_coopmat;      /* MXA_DISABLE_COOPMAT */
    int disable_int_dot;      /* MXA_DISABLE_INT_DOT */
    int no_pipe;              /* MXA_VULKAN_PIPE=0: the register kernel without its pipelined S */
    int khr_built, khr_smem_built, intdot_built, khr_i8pv_built; /* which shaders this build has */
    const char *khr_missing;  /* why the KHR shaders are not built, NULL when they are */
} vk_select_opts;

/* The call's properties selection depends on (a NULL call in vk_select: the device default). */
typedef struct vk_select_call {
    int64_t d;
    int64_t bc;
    int quantize_all; /* Q, K, V and P all quantized */
    int pv_mxfp8;     /* P and V in MXFP8 (mxattention-fp8pv): only the register KHR kernels and scalar */
    int causal;       /* a causal mask (the register kernel's rows per subgroup) */
} vk_select_call;

typedef enum vk_variant_id {
    VK_V_SCALAR = 0,
    VK_V_INTDOT,
    VK_V_KHR_I8,
    VK_V_KHR_F16,
    VK_V_KHR_I8_SMEM,
    VK_V_KHR_F16_SMEM,
    VK_V_KHR_I8PV,
    VK_V_COUNT
} vk_variant_id;

/* The variant's name (what MXA_KERNEL takes and the probe prints). */
const char *vk_variant_name(vk_variant_id id);

/* What attention will run. */
typedef struct vk_plan {
    vk_variant_id id;
    const char *variant;        /* "coopmat-khr-i8", "coopmat-khr-f16", "coopmat-khr-i8-smem",
                                   "coopmat-khr-f16-smem", "intdot", "scalar" */
    vk_coopmat_shape s_shape;   /* Q K^T configuration (coopmat variants) */
    vk_coopmat_shape pv_shape;  /* P V configuration (coopmat variants) */
    uint32_t subgroup_size;     /* required subgroup size, 0 = the device's default */
    uint32_t subgroups;         /* per workgroup */
    uint32_t local_size;        /* invocations per workgroup */
    uint32_t rows_per_group;    /* query rows per workgroup (nq is padded to a multiple) */
    uint32_t shared_bytes;      /* shared memory the kernel declares */
    uint32_t s_map, o_map, a_map; /* register kernels: the fragment element orders (vk_caps) */
    uint32_t tune[4];           /* kernel-specific specialization constants (intdot's tiles; the register kernel's PIPE) */
    char reason[512];
} vk_plan;

/* Chooses the plan; never fails (scalar runs anywhere). */
void vk_select(const vk_caps *caps, const vk_select_call *call, const vk_select_opts *opts, vk_plan *plan);

/* The KHR configuration "MxNxK" with the given types, NULL if the record has none. */
const vk_coopmat_shape *vk_caps_find_shape(const vk_caps *caps, uint32_t ab_type, uint32_t cr_type, uint32_t m,
                                           uint32_t n, uint32_t k);

/* How to run a kernel written for 32-lane subgroups: 0 (the default is 32), 32 (ask for it:
 * subgroup size control and 32 in the device's range), or UINT32_MAX (impossible). */
uint32_t vk_caps_subgroup_32(const vk_caps *caps);

/* Reads a capability record from a profile (JSON, see tests/vulkan/profiles/README.md).
 * 0 on success; otherwise -1 with the reason in err. */
int vk_caps_from_json(const char *text, vk_caps *caps, char *err, size_t err_size);

#endif
