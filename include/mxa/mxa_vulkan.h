/*
 * mxa inside an application's own Vulkan device: the application lends its instance,
 * device and a compute queue, wraps its VkBuffers, and mxa records attention into the
 * application's command buffers. mxa never submits what it records, never creates a
 * device or instance here and never calls vkDeviceWaitIdle on the application's device.
 *
 * Every function follows <mxa/mxa.h>'s conventions (an mxa_status, never an abort,
 * mxa_last_error_message() on failure). Needs the Vulkan headers; mxa itself loads the
 * system Vulkan loader at run time (libvulkan.so.1), so the application's handles must
 * come from that loader. These functions exist in a library built with the Vulkan backend
 * (`mxa probe` lists "vulkan" as built); mxa_vulkan_profile.h's exist in every build.
 */
#ifndef MXA_MXA_VULKAN_H
#define MXA_MXA_VULKAN_H

#include <vulkan/vulkan.h>

#include "mxa/mxa.h"
#include "mxa/mxa_vulkan_profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the application lends. mxa reads it during mxa_vulkan_device_create only. */
typedef struct mxa_vulkan_context {
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    VkQueue queue;         /* a queue of a family with VK_QUEUE_COMPUTE_BIT: the synchronous calls
                              (mxa_attention, mxa_buffer_upload/download) submit to it, and the
                              device-create check runs one small kernel on it */
    uint32_t queue_family; /* its family index */
    uint32_t api_version;  /* the apiVersion the instance was created with (>= 1.1) */
    /* What vkCreateDevice was given: the extensions and the pNext chain of feature
     * structures (VkPhysicalDeviceFeatures2, VkPhysicalDeviceVulkan11/12/13Features, or the
     * single-feature structures). mxa uses only what is listed; NULL = none. */
    const char *const *enabled_extensions;
    uint32_t enabled_extension_count;
    const void *enabled_features;
    PFN_vkGetInstanceProcAddr get_instance_proc_addr; /* optional: checked to be the loader mxa uses */
    VkPipelineCache pipeline_cache; /* optional: mxa creates its pipelines through it (else its own,
                                       kept in mxa's cache directory) */
} mxa_vulkan_context;

/**
 * An mxa device over the application's Vulkan device. mxa checks what the fastest kernel
 * needs against what the application enabled: the device opens with the best variant the
 * enabled features allow, and mxa_device_info's `capabilities` ends with
 * "not-enabled(...)" naming, as that list spells them, each feature the physical device has
 * and the application did not enable: int8 (shaderInt8), fp16 (shaderFloat16), storage8/16
 * (8/16-bit storage buffer access), int-dot (shaderIntegerDotProduct),
 * subgroup-size-control (subgroupSizeControl + computeFullSubgroups), coopmat-khr
 * (VK_KHR_cooperative_matrix), push-descriptor (VK_KHR_push_descriptor: recording needs
 * it), external-memory-fd (VK_KHR_external_memory_fd: exporting needs it). The queue must not be
 * used by another thread while this runs. Close with mxa_device_close (after the GPU has
 * finished every command buffer mxa recorded into, and before destroying the VkDevice).
 */
MXA_API mxa_status mxa_vulkan_device_create(mxa_runtime *rt, const mxa_vulkan_context *ctx, mxa_device **out);

/**
 * An mxa_buffer over `size` bytes at `offset` (a multiple of 4) of the application's
 * VkBuffer, which must have been created with VK_BUFFER_USAGE_STORAGE_BUFFER_BIT (and
 * TRANSFER_SRC/DST for mxa_buffer_upload/download), and hold offset + size rounded up to a
 * multiple of 4 bytes (the kernels read a byte mask as 32-bit words). mxa never frees it;
 * destroy the mxa_buffer before the VkBuffer. Works on mxa's own Vulkan devices too.
 */
MXA_API mxa_status mxa_vulkan_buffer_wrap(mxa_device *dev, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size,
                                          mxa_buffer **out);

/** The VkBuffer and byte offset behind an mxa_buffer of a Vulkan device. */
MXA_API mxa_status mxa_vulkan_buffer_handle(const mxa_buffer *buf, VkBuffer *buffer, VkDeviceSize *offset);

/**
 * Bytes of workspace mxa_vulkan_attention_record needs for this call (the prepared,
 * quantized Q, K and V and the softmax statistics): depends on the shapes, the desc and
 * the variant the device runs, not on the data.
 */
MXA_API mxa_status mxa_vulkan_workspace_size(mxa_device *dev, const mxa_attention_desc *desc, const mxa_tensor *q,
                                             const mxa_tensor *k, const mxa_tensor *v, const mxa_tensor *o,
                                             const mxa_tensor *lse, size_t *bytes);

/**
 * Allocates (or grows to `bytes`) the device's own workspace, which recorded calls given
 * no workspace use. Call it before recording, never while a command buffer that used the
 * previous one may still run.
 */
MXA_API mxa_status mxa_vulkan_workspace_reserve(mxa_device *dev, size_t bytes);

/**
 * Records prep + attention into the application's command buffer (in the recording
 * state, outside a render pass, of a queue family with compute), allocating nothing: the
 * pipelines are created at the first record of a shape (or reused from the pipeline
 * cache). q, k, v, o, lse (may be NULL), desc->bias and desc->mask are device-buffer
 * tensors of `dev` (mxa_vulkan_buffer_wrap or mxa_buffer_create); desc->key_lengths is
 * read now and recorded inline. `workspace` (NULL: the reserved one) must have
 * mxa_vulkan_workspace_size bytes and must not be used by another recorded call that may
 * run at the same time (the calls of one queue run in order: one workspace serves them).
 *
 * Barriers: mxa's commands start with a barrier from compute-shader and transfer work
 * before them (so consecutive mxa calls may share a workspace) and end with one making
 * the outputs visible to later compute-shader and transfer commands. The application owes
 * the barriers for anything else: its writes of q, k, v, bias and mask before (from a
 * graphics stage or host writes: make them visible to VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT /
 * VK_ACCESS_SHADER_READ_BIT), and its reads of o and lse after (other than compute and
 * transfer, e.g. a host read: VK_ACCESS_SHADER_WRITE_BIT to its stage). Nothing is
 * submitted; the call may be recorded once and the command buffer submitted many times.
 */
MXA_API mxa_status mxa_vulkan_attention_record(mxa_device *dev, VkCommandBuffer cmd, const mxa_attention_desc *desc,
                                               const mxa_tensor *q, const mxa_tensor *k, const mxa_tensor *v,
                                               mxa_tensor *o, mxa_tensor *lse, mxa_buffer *workspace);

/**
 * A device buffer whose memory can be exported (VK_KHR_external_memory_fd, opaque fd), for
 * another API to import: CUDA (cudaImportExternalMemory with
 * cudaExternalMemoryHandleTypeOpaqueFd), HIP, another Vulkan device of the same GPU.
 */
MXA_API mxa_status mxa_vulkan_buffer_create_exportable(mxa_device *dev, size_t bytes, mxa_buffer **out);

/**
 * A new file descriptor for an exportable buffer's memory (the caller owns it: an importer
 * usually takes ownership, else close() it) and the memory's allocation size, which an
 * importer needs (it may exceed the buffer's size).
 */
MXA_API mxa_status mxa_vulkan_buffer_export_fd(mxa_buffer *buf, int *fd, uint64_t *allocation_size);

#ifdef __cplusplus
}
#endif

#endif
