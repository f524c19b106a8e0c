/*
 * The Vulkan backend's internal types (shared by its files only).
 *
 * Every Vulkan call goes through volk's function pointers, loaded from the
 * system loader at run time: the library never links libvulkan.
 */
#ifndef MXA_VK_COMMON_H
#define MXA_VK_COMMON_H

#define VK_NO_PROTOTYPES
#include <stddef.h>
#include <stdint.h>
#include <volk.h>

#include "../../runtime/backend.h"
#include "vk_select.h"

/* ---- definitions the Debian 1.3.239 headers lack (VK_KHR_cooperative_matrix) ---- */
#define MXA_VK_KHR_COOPMAT_NAME "VK_KHR_cooperative_matrix"
#define MXA_VK_STYPE_COOPMAT_FEATURES_KHR ((VkStructureType)1000506000)
#define MXA_VK_STYPE_COOPMAT_PROPERTIES_KHR ((VkStructureType)1000506001)
#define MXA_VK_STYPE_COOPMAT_DEVICE_PROPERTIES_KHR ((VkStructureType)1000506002)
typedef struct mxa_vk_coopmat_features_khr {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} mxa_vk_coopmat_features_khr;
typedef struct mxa_vk_coopmat_props_khr {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    VkComponentTypeNV AType, BType, CType, ResultType; /* same values as the KHR enum */
    VkBool32 saturatingAccumulation;
    VkScopeNV scope;
} mxa_vk_coopmat_props_khr;
typedef VkResult(VKAPI_PTR *mxa_pfn_coopmat_props_khr)(VkPhysicalDevice, uint32_t *, mxa_vk_coopmat_props_khr *);

/* Capability flags beyond mxa's public caps (what variant selection needs). */
#define MXA_VK_F_FP16 (1u << 0)
#define MXA_VK_F_INT8 (1u << 1)
#define MXA_VK_F_STORAGE16 (1u << 2)
#define MXA_VK_F_STORAGE8 (1u << 3)
#define MXA_VK_F_INT_DOT (1u << 4)
#define MXA_VK_F_SUBGROUP_CTRL (1u << 5)
#define MXA_VK_F_COOPMAT_NV (1u << 6)  /* VK_NV_cooperative_matrix present (recorded; mxa's kernels use KHR) */
#define MXA_VK_F_COOPMAT_KHR (1u << 7)
#define MXA_VK_F_SUBGROUP_SHUFFLE (1u << 10)
#define MXA_VK_F_SUBGROUP_ARITH (1u << 11)
#define MXA_VK_F_PIPELINE_STATS (1u << 13) /* VK_KHR_pipeline_executable_properties: statistics in the debug log */

/* What the probe learns about one physical device (probe_data of the runtime). */
typedef struct vk_probe_data {
    uint8_t uuid[VK_UUID_SIZE];
    uint8_t cache_uuid[VK_UUID_SIZE];
    uint32_t timestamp_bits;      /* of the compute queue family; 0 = no timing */
    float timestamp_period;       /* ns per tick */
    uint32_t queue_family;
    int has_push_descriptor;      /* VK_KHR_push_descriptor (recording into an application's command buffer) */
    int has_external_fd;          /* VK_KHR_external_memory_fd (exportable buffers) */
    uint64_t storage_align;       /* minStorageBufferOffsetAlignment */
    vk_caps caps;                 /* ids, features (flags: MXA_VK_F_*), limits: what kernel selection reads (vk_select.h) */
} vk_probe_data;

/* A device buffer (what mxa_buffer handles point to): mxa's own (memory set), or a range
 * of someone else's VkBuffer (borrowed: the caller's, or a view into a workspace) that mxa
 * never frees. Offsets given to the functions below are relative to `base`. */
typedef struct vk_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize base; /* where this buffer starts inside `buffer` */
    VkDeviceSize size;
    void *mapped;      /* persistent mapping of byte `base` when host-visible (lavapipe, staging) */
    int borrowed;
    int exportable;    /* memory allocated for export as an opaque fd */
    VkDeviceSize alloc_size; /* of the exportable memory (what an importer needs) */
} vk_buffer;

/* Kernel families; each pipeline is created per (kind, specialization). */
typedef enum vk_kernel {
    VK_K_QUANTIZE = 0,
    VK_K_PREP_QK_F32,
    VK_K_PREP_QK_F16,
    VK_K_PREP_QK_I8,
    VK_K_PREP_V_F32,
    VK_K_PREP_V_F16,
    VK_K_ATTN_SCALAR,
    VK_K_ATTN_COOPMAT_KHR,
    VK_K_ATTN_COOPMAT_KHR_I8,
    VK_K_ATTN_COOPMAT_KHR_SMEM,
    VK_K_ATTN_COOPMAT_KHR_SMEM_I8,
    VK_K_COOPMAT_LAYOUT_KHR,
    VK_K_ATTN_INTDOT,
    VK_K_PREP_V_I8,
    VK_K_PEAK_INTDOT,
    VK_K_CONVERT_OUT,
    VK_K_DEQUANT_KV,
    VK_K_ATTN_COOPMAT_KHR_I8PV,
    VK_K_PREP_V_I8A,
    VK_K_PREP_QK_SG_F32, /* prep_qk_subgroup.comp: prep_qk's outputs through subgroup shuffles */
    VK_K_PREP_QK_SG_F16,
    VK_K_PREP_QK_SG_I8,
    VK_K_COUNT
} vk_kernel;

#define VK_MAX_BINDINGS 12 /* attention: 0..7 its arrays, 8 bias, 9 mask, 10 key lengths, 11 V columns */
#define VK_SPEC_COUNT 14 /* specialization constants 0..13 of every pipeline (13: EXTRAS) */
#define VK_MAX_TIMESTAMPS 16 /* start, one after each dispatch (debug log), end */

typedef struct vk_pipeline {
    vk_kernel kernel;
    int32_t spec[VK_SPEC_COUNT];
    uint32_t subgroup_size; /* required subgroup size, 0 = the driver's choice */
    VkPipeline pipeline;
} vk_pipeline;

typedef struct vk_device {
    const vk_probe_data *probe;
    int adopted;            /* instance, device and queue are the application's (mxa_vulkan_device_create) */
    int push_descriptors;   /* VK_KHR_push_descriptor: descriptors live in the command buffer */
    int external_fd;        /* VK_KHR_external_memory_fd enabled: exportable buffers */
    VkDeviceSize storage_align; /* minStorageBufferOffsetAlignment */
    PFN_vkCmdPushDescriptorSetKHR push_descriptor_set;
    PFN_vkGetMemoryFdKHR get_memory_fd;
    VkInstance instance;
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    int spin_wait;          /* vk_wait_fence polls instead of the driver's blocking wait (vk_wait_spins) */
    VkQueryPool timestamps; /* VK_NULL_HANDLE when the queue has no timestamps */
    VkPipelineCache cache;
    int cache_lent;         /* the application's VkPipelineCache: not saved or destroyed by mxa */
    char cache_key[256];
    int cache_dirty;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkDescriptorPool desc_pool;
    VkShaderModule modules[VK_K_COUNT];
    vk_pipeline *pipelines; /* every kernel x specialization this device has built, grown on demand */
    int pipeline_count, pipeline_cap;
    int pipeline_stats; /* VK_KHR_pipeline_executable_properties enabled: statistics to the debug log */
    uint32_t memory_device_local, memory_host_visible; /* type indices */
    VkPhysicalDeviceMemoryProperties mem_props;
    /* scratch kept between calls (grown on demand) */
    vk_buffer scratch[16];
    vk_buffer staging;
    int batch_stamps; /* of the last submitted batch */
    vk_kernel batch_kernels[VK_MAX_TIMESTAMPS];
    vk_buffer record_workspace; /* mxa_vulkan_workspace_reserve: for recorded calls without one */
    /* an asynchronous call in flight on dev->cmd (mxa_attention_async), completed before
     * anything else uses the command buffer or the scratch */
    struct vk_inflight {
        mxa_pending *pending;
        int timed;
        double t0, t_recorded, t_submitted; /* recording started, ended; vkQueueSubmit returned */
        float *o_host, *lse_host; /* host outputs, read from the workspace on completion */
        vk_buffer o_src, lse_src;
        size_t o_bytes, lse_bytes;
    } inflight;
} vk_device;

/* ---- vk_loader.c ---- */
/* 1 if a Vulkan driver manifest exists where the Vulkan loader looks (VK_DRIVER_FILES or
 * VK_ICD_FILENAMES replacing the search, VK_ADD_DRIVER_FILES, XDG_CONFIG_HOME/DIRS,
 * XDG_DATA_HOME/DIRS, then <root>/etc/xdg, /usr/local/etc, /etc, /usr/local/share,
 * /usr/share, each with vulkan/icd.d/ (*.json)); else 0 with `reason`. `root` is "" for
 * the real system. */
int vk_driver_manifest_found(const char *root, char *reason, size_t reason_size);
mxa_status vk_loader_init(char *reason, size_t reason_size);
mxa_status vk_instance_create(VkInstance *out, char *reason, size_t reason_size);
/* Loads the loader and, if no instance did yet, the instance-level entry points from an
 * application's instance. */
mxa_status vk_loader_adopt_instance(VkInstance inst, char *reason, size_t reason_size);
const char *vk_loader_path(void); /* the loader library mxa loaded */
const char *vk_result_name(VkResult r);

/* ---- vk_probe.c ---- */
/* What an application enabled on the device it lends (mxa_vulkan_device_create). */
typedef struct vk_enabled {
    uint32_t flags;          /* MXA_VK_F_* the application enabled */
    int push_descriptor, external_fd;
    uint32_t queue_family;   /* of the lent queue */
    char missing[MXA_REASON_LEN]; /* what the physical device has and the application did not enable */
} vk_enabled;
/* The facts of a physical device. With `enabled` (an application's device), the features
 * are cut to what it enabled and the fragment-layout check is left to the caller (it needs
 * an open device: vk_khr_fragment_map_on). */
mxa_status vk_probe_physical(VkInstance inst, VkPhysicalDevice pd, vk_probe_data *data, mxa_device_info *info,
                             vk_enabled *enabled);
/* The variant and its reason in info, from data (after the layout check). */
void vk_describe_variant(const vk_probe_data *data, mxa_device_info *info);
/* info->score and score_reason for "auto" (runtime/speed.h): the estimated throughput of
 * info->variant on the device `caps` records, with `units` SMs/CUs (0: unknown). */
void vk_device_score(const vk_caps *caps, uint32_t units, mxa_device_info *info);

/* ---- vk_device.c ---- */
mxa_status vk_device_open(const vk_probe_data *probe, vk_device **out);
/* The rest of opening once dev->probe, physical, device, queue and the extension flags are
 * set (lent_cache: the application's pipeline cache, or VK_NULL_HANDLE). */
mxa_status vk_device_setup(vk_device *dev, VkPipelineCache lent_cache);
/* The key of this device's cache entries: vendor, device, driver, pipeline-cache UUID, shaders. */
void vk_cache_key(const vk_probe_data *probe, char *key, size_t size);
void vk_device_close(vk_device *dev);
/* Whether vk_wait_fence polls (1) or takes the driver's blocking wait (0): setting is
 * MXA_VULKAN_WAIT ("spin", "block"; NULL or anything else: polling except on a CPU device,
 * lavapipe, whose own threads need the core). The driver's blocking wait returned about
 * 0.05 ms after the GPU finished on the H100 (docs/speed-log.md, 2026-12-07, run 16): 5%
 * of a call at N4096 D64. */
int vk_wait_spins(uint32_t device_type, const char *setting);
/* Waits for dev->fence, then resets it for the next submission; a lost device ends the
 * polling with its error. */
VkResult vk_wait_fence(vk_device *dev);
/* Completes the asynchronous call in flight, if any (waits for it, reads its host outputs). */
void vk_complete_inflight(vk_device *dev);

/* ---- vk_buffers.c ---- */
mxa_status vk_buffer_alloc(vk_device *dev, VkDeviceSize size, int host_visible, vk_buffer *out);
mxa_status vk_buffer_alloc_exportable(vk_device *dev, VkDeviceSize size, vk_buffer *out);
void vk_buffer_free(vk_device *dev, vk_buffer *buf);
mxa_status vk_buffer_write(vk_device *dev, vk_buffer *buf, VkDeviceSize offset, const void *src, size_t bytes);
mxa_status vk_buffer_read(vk_device *dev, const vk_buffer *buf, VkDeviceSize offset, void *dst, size_t bytes);
mxa_status vk_scratch(vk_device *dev, int slot, VkDeviceSize size, vk_buffer **out);
/* A borrowed view of `size` bytes at `offset` of buf. */
vk_buffer vk_buffer_view(const vk_buffer *buf, VkDeviceSize offset, VkDeviceSize size);
/* The element (4-byte) offset a shader adds for byte `offset` of buf when buf is bound
 * with vk_binding_offset (the part of buf->base below the descriptor alignment). */
uint32_t vk_elem_offset(const vk_device *dev, const vk_buffer *buf, size_t offset);
/* The same offset in elements of `esize` bytes (2 for a 16-bit input). */
uint32_t vk_elem_offset_of(const vk_device *dev, const vk_buffer *buf, size_t offset, size_t esize);
/* The prep kernels' constant IN_TYPE (prep_input.glsl): mxa_input_code of the input's dtype. */
#define VK_SPEC_IN_TYPE 2

/* ---- vk_pipelines.c ---- */
/* One recorded batch of dispatches: into mxa's own command buffer, submitted and waited
 * for at once (vk_batch_begin / vk_batch_submit), or into the application's
 * (vk_batch_borrow: recorded only; it needs push descriptors). */
typedef struct vk_batch {
    vk_device *dev;
    VkCommandBuffer cmd;
    int timed;   /* timestamps written around the batch */
    int sets_used;
    int stamps;  /* timestamps written so far */
    int overlap; /* the next dispatch gets no barrier after it: the one after it does not read its writes */
    vk_kernel kernels[VK_MAX_TIMESTAMPS];
} vk_batch;
int vk_kernel_available(vk_kernel kernel);
uint64_t vk_shader_hash(void); /* of every embedded shader */
mxa_status vk_batch_begin(vk_device *dev, int timed, vk_batch *batch);
mxa_status vk_batch_borrow(vk_device *dev, VkCommandBuffer cmd, vk_batch *batch);
mxa_status vk_batch_fill(vk_batch *batch, const vk_buffer *buf, VkDeviceSize size);
/* Writes `bytes` (at most 65536, a multiple of 4) of host data into buf when the batch runs. */
mxa_status vk_batch_update(vk_batch *batch, const vk_buffer *buf, const void *data, VkDeviceSize bytes);
/* Submits without waiting (signals dev->fence); vk_batch_finish waits. */
mxa_status vk_batch_submit_nowait(vk_batch *batch);
mxa_status vk_batch_finish(vk_device *dev, int timed, double *seconds);
/* subgroup_size: the width the kernel requires (in full subgroups), 0 = the driver's choice */
mxa_status vk_batch_dispatch(vk_batch *batch, vk_kernel kernel, const int32_t spec[VK_SPEC_COUNT], uint32_t subgroup_size,
                             const vk_buffer *const *bindings, int nbindings, const void *push, uint32_t push_size,
                             uint32_t gx, uint32_t gy, uint32_t gz);
mxa_status vk_batch_submit(vk_batch *batch, double *seconds);
void vk_pipelines_destroy(vk_device *dev);
/* Splits n invocations of local size `local` into an x * y grid (the shaders fold y back). */
void vk_grid_1d(uint64_t n, uint32_t local, uint32_t *gx, uint32_t *gy);

/* ---- vk_prep.c ---- */
/* How prep_qk runs: -1 the device's faster form, 0 prep_qk.comp (shared memory), 1
 * prep_qk_subgroup.comp (where vk_prep_qk_subgroup says it can). */
#define VK_PREP_QK_AUTO (-1)
#define VK_PREP_QK_SHARED 0
#define VK_PREP_QK_SUBGROUP 1
/* 1 if prep_qk_subgroup.comp runs on this device at head size d: *p its values per
 * invocation, *subgroup_size the size to require (0: the device's fixed default). */
int vk_prep_qk_subgroup(const vk_device *dev, uint64_t d, uint32_t *p, uint32_t *subgroup_size);
/* Records a pass of prep_v.comp (`kernel`: a VK_K_PREP_V_* form) over heads x n_pad tokens of
 * d columns, bindings x, y, colscale, colmax, keylen; `push` is prep_v.comp's constants (its
 * pass_ says which pass). */
mxa_status vk_prep_v_dispatch(vk_batch *batch, vk_kernel kernel, uint64_t heads, uint64_t n_pad, uint64_t d,
                               const int32_t spec[VK_SPEC_COUNT], const vk_buffer *const bindings[5], const void *push,
                               uint32_t push_size);
/* Records prep_qk of rows_pad rows of d values of `in_dtype`; `kernel` names the output form
 * (VK_K_PREP_QK_F32, _F16 or _I8), bindings x, y, scales, push prep_qk.comp's constants. */
mxa_status vk_prep_qk_dispatch(vk_batch *batch, vk_kernel kernel, int form, uint64_t rows_pad, uint64_t d, mxa_dtype in_dtype,
                               const vk_buffer *const bindings[3], const void *push, uint32_t push_size);

/* ---- vk_coopmat_layout.c ---- */
/* Runs coopmat_layout_khr.comp on the device for the fp16 16x16 A matrix and the fp32 16x16
 * and 16x8 accumulators the record lists: fills probe->caps.quad_ok, c_map, a_map and
 * layout_note; 1 if some accumulator shape has the quad layout attn_coopmat_khr.comp needs. */
int vk_khr_fragment_map(vk_probe_data *probe);
/* The same on an open device (an application's: mxa opens none of its own). */
int vk_khr_fragment_map_on(vk_probe_data *probe, vk_device *dev);
/* The decoding step on the kernel's output (VK_LAYOUT_VALUES floats, see
 * coopmat_layout_khr.comp) for the 16 x n accumulator (n = 16 or 8). */
#define VK_LAYOUT_VALUES 514
int vk_khr_fragment_map_decode(const float *values, int n, vk_caps *caps);

/* ---- vk_quantize.c / vk_attention.c ---- */
mxa_status vk_quantize(vk_device *dev, const mxa_array *x, mxa_rule rule, uint8_t *codes, uint8_t *scales);
mxa_status vk_quantize_mxfp8(vk_device *dev, const mxa_array *x, uint8_t *codes, uint8_t *scales);
mxa_status vk_attention(vk_device *dev, const mxa_attention_call *call, mxa_attention_info *info);
/* Submits attention without waiting: vk_complete_inflight (called by every later use of
 * the device) fills `pending`. */
mxa_status vk_attention_submit(vk_device *dev, const mxa_attention_call *call, mxa_pending *pending);
/* Bytes of workspace a call needs. */
mxa_status vk_attention_workspace(const vk_device *dev, const mxa_attention_call *call, size_t *bytes);
/* Records attention into the application's command buffer: every array a device buffer,
 * `ws` at least vk_attention_workspace bytes. */
mxa_status vk_attention_record(vk_device *dev, VkCommandBuffer cmd, const mxa_attention_call *call, const vk_buffer *ws,
                               size_t ws_bytes);
/* Which kernels this build has (the *_built fields of vk_select_opts). */
void vk_select_opts_built(vk_select_opts *o);
/* The switches of the environment and the kernels this build has, for vk_select. */
void vk_select_opts_from_env(vk_select_opts *o);
/* The plan for a call on a probed device (the device default when call is NULL). */
void vk_plan_call(const vk_probe_data *probe, const mxa_attention_call *call, vk_plan *plan);
/* The variant attention would run for a call (or the device default when call is NULL). */
const char *vk_choose_variant(const vk_probe_data *probe, const mxa_attention_call *call, char *reason,
                              size_t reason_size);

#endif
