/*
 * Shader modules (the SPIR-V embedded at build time), compute pipelines per
 * (kernel, specialization constants) through the device's VkPipelineCache,
 * and batches: dispatches recorded into one command buffer, separated by
 * barriers, submitted once, optionally timed with timestamp queries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_common.h"
#include "vk_spirv.h"
#include "../../runtime/cache.h"
#include "../../runtime/log.h"
#include "../../runtime/status.h"

typedef struct spirv_blob {
    const uint32_t *code;
    size_t size;
    const char *name;
} spirv_blob;

#define BLOB(sym, name) {sym, sizeof(sym), name}
static const spirv_blob blobs[VK_K_COUNT] = {
    [VK_K_QUANTIZE] = BLOB(mxa_spv_quantize, "quantize"),
    [VK_K_PREP_QK_F32] = BLOB(mxa_spv_prep_qk_f32, "prep_qk_f32"),
    [VK_K_PREP_QK_F16] = BLOB(mxa_spv_prep_qk_f16, "prep_qk_f16"),
    [VK_K_PREP_QK_I8] = BLOB(mxa_spv_prep_qk_i8, "prep_qk_i8"),
    [VK_K_PREP_V_F32] = BLOB(mxa_spv_prep_v_f32, "prep_v_f32"),
    [VK_K_PREP_V_F16] = BLOB(mxa_spv_prep_v_f16, "prep_v_f16"),
    [VK_K_ATTN_SCALAR] = BLOB(mxa_spv_attn_scalar, "attn_scalar"),
    [VK_K_CONVERT_OUT] = BLOB(mxa_spv_convert_out, "convert_out"),
    [VK_K_DEQUANT_KV] = BLOB(mxa_spv_dequant_kv, "dequant_kv"),
#ifdef MXA_VK_HAVE_ATTN_COOPMAT_KHR
    [VK_K_ATTN_COOPMAT_KHR] = BLOB(mxa_spv_attn_coopmat_khr, "attn_coopmat_khr"),
#endif
#ifdef MXA_VK_HAVE_ATTN_COOPMAT_KHR_I8
    [VK_K_ATTN_COOPMAT_KHR_I8] = BLOB(mxa_spv_attn_coopmat_khr_i8, "attn_coopmat_khr_i8"),
#endif
#ifdef MXA_VK_HAVE_ATTN_COOPMAT_KHR_SMEM
    [VK_K_ATTN_COOPMAT_KHR_SMEM] = BLOB(mxa_spv_attn_coopmat_khr_smem, "attn_coopmat_khr_smem"),
#endif
#ifdef MXA_VK_HAVE_ATTN_COOPMAT_KHR_SMEM_I8
    [VK_K_ATTN_COOPMAT_KHR_SMEM_I8] = BLOB(mxa_spv_attn_coopmat_khr_smem_i8, "attn_coopmat_khr_smem_i8"),
#endif
#ifdef MXA_VK_HAVE_COOPMAT_LAYOUT_KHR
    [VK_K_COOPMAT_LAYOUT_KHR] = BLOB(mxa_spv_coopmat_layout_khr, "coopmat_layout_khr"),
#endif
#ifdef MXA_VK_HAVE_ATTN_INTDOT
    [VK_K_ATTN_INTDOT] = BLOB(mxa_spv_attn_intdot, "attn_intdot"),
#endif
#ifdef MXA_VK_HAVE_PREP_V_I8
    [VK_K_PREP_V_I8] = BLOB(mxa_spv_prep_v_i8, "prep_v_i8"),
#endif
#ifdef MXA_VK_HAVE_ATTN_COOPMAT_KHR_I8PV
    [VK_K_ATTN_COOPMAT_KHR_I8PV] = BLOB(mxa_spv_attn_coopmat_khr_i8pv, "attn_coopmat_khr_i8pv"),
#endif
#ifdef MXA_VK_HAVE_PREP_V_I8A
    [VK_K_PREP_V_I8A] = BLOB(mxa_spv_prep_v_i8a, "prep_v_i8a"),
#endif
#ifdef MXA_VK_HAVE_PREP_QK_SG_I8
    [VK_K_PREP_QK_SG_F32] = BLOB(mxa_spv_prep_qk_sg_f32, "prep_qk_sg_f32"),
    [VK_K_PREP_QK_SG_F16] = BLOB(mxa_spv_prep_qk_sg_f16, "prep_qk_sg_f16"),
    [VK_K_PREP_QK_SG_I8] = BLOB(mxa_spv_prep_qk_sg_i8, "prep_qk_sg_i8"),
#endif
#ifdef MXA_VK_HAVE_PEAK_INTDOT
    [VK_K_PEAK_INTDOT] = BLOB(mxa_spv_peak_intdot, "peak_intdot"),
#endif
};

int vk_kernel_available(vk_kernel kernel)
{
    return kernel < VK_K_COUNT && blobs[kernel].code != NULL;
}

void vk_select_opts_built(vk_select_opts *o)
{
    o->khr_built = vk_kernel_available(VK_K_ATTN_COOPMAT_KHR) && vk_kernel_available(VK_K_ATTN_COOPMAT_KHR_I8);
    o->khr_smem_built = vk_kernel_available(VK_K_ATTN_COOPMAT_KHR_SMEM) && vk_kernel_available(VK_K_ATTN_COOPMAT_KHR_SMEM_I8);
    o->intdot_built = vk_kernel_available(VK_K_ATTN_INTDOT) && vk_kernel_available(VK_K_PREP_V_I8);
    o->khr_i8pv_built = vk_kernel_available(VK_K_ATTN_COOPMAT_KHR_I8PV) && vk_kernel_available(VK_K_PREP_V_I8A);
#ifdef MXA_VK_KHR_MISSING_REASON
    o->khr_missing = MXA_VK_KHR_MISSING_REASON;
#else
    o->khr_missing = NULL;
#endif
}

/* Hash of every embedded shader: part of the pipeline-cache key. */
uint64_t vk_shader_hash(void)
{
    uint64_t h = MXA_HASH_SEED;
    for (int i = 0; i < VK_K_COUNT; i++)
        if (blobs[i].code) h = mxa_hash64(blobs[i].code, blobs[i].size, h);
    return h;
}

void vk_grid_1d(uint64_t n, uint32_t local, uint32_t *gx, uint32_t *gy)
{
    uint64_t groups = (n + local - 1) / local;
    if (groups == 0) groups = 1;
    if (groups <= 65535) {
        *gx = (uint32_t)groups;
        *gy = 1;
    } else {
        *gx = 65535;
        *gy = (uint32_t)((groups + 65534) / 65535);
    }
}

/* The driver's statistics of a new pipeline (registers, shared memory, spills...), one
 * debug line: what a kernel developer looks at first when a kernel is slow. */
static void log_statistics(vk_device *dev, VkPipeline pipe, const char *name)
{
    VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = pipe};
    VkPipelineExecutableStatisticKHR stats[16];
    uint32_t n = 16;
    for (uint32_t i = 0; i < n; i++) stats[i] = (VkPipelineExecutableStatisticKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
    VkResult r = vkGetPipelineExecutableStatisticsKHR(dev->device, &ei, &n, stats);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return;
    char line[768];
    int len = snprintf(line, sizeof line, "vulkan: pipeline %s:", name);
    for (uint32_t i = 0; i < n && len > 0 && (size_t)len < sizeof line; i++) {
        const VkPipelineExecutableStatisticKHR *s = &stats[i];
        const size_t room = sizeof line - (size_t)len;
        if (s->format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR)
            len += snprintf(line + len, room, " %s=%s", s->name, s->value.b32 ? "yes" : "no");
        else if (s->format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR)
            len += snprintf(line + len, room, " %s=%lld", s->name, (long long)s->value.i64);
        else if (s->format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR)
            len += snprintf(line + len, room, " %s=%llu", s->name, (unsigned long long)s->value.u64);
        else
            len += snprintf(line + len, room, " %s=%g", s->name, s->value.f64);
    }
    MXA_LOG_D("%s", line);
}

static mxa_status get_pipeline(vk_device *dev, vk_kernel kernel, const int32_t spec[VK_SPEC_COUNT], uint32_t subgroup_size,
                               VkPipeline *out)
{
    for (int i = 0; i < dev->pipeline_count; i++) {
        const vk_pipeline *p = &dev->pipelines[i];
        if (p->kernel == kernel && p->subgroup_size == subgroup_size && memcmp(p->spec, spec, sizeof p->spec) == 0) {
            *out = p->pipeline;
            return MXA_OK;
        }
    }
    if (!vk_kernel_available(kernel)) return mxa_fail(MXA_ERR_UNSUPPORTED, "vulkan: kernel %d is not in this build", (int)kernel);
    if (dev->pipeline_count == dev->pipeline_cap) {
        const int cap = dev->pipeline_cap ? 2 * dev->pipeline_cap : 16;
        vk_pipeline *grown = realloc(dev->pipelines, sizeof *grown * (size_t)cap);
        if (!grown) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan: no memory for %d pipelines", cap);
        dev->pipelines = grown;
        dev->pipeline_cap = cap;
    }
    VkResult r;
    if (!dev->modules[kernel]) {
        VkShaderModuleCreateInfo mci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                        .codeSize = blobs[kernel].size,
                                        .pCode = blobs[kernel].code};
        if ((r = vkCreateShaderModule(dev->device, &mci, NULL, &dev->modules[kernel])) != VK_SUCCESS)
            return mxa_fail(MXA_ERR_BACKEND, "vulkan: vkCreateShaderModule(%s) failed: %s", blobs[kernel].name,
                            vk_result_name(r));
    }
    VkSpecializationMapEntry map[VK_SPEC_COUNT];
    for (uint32_t i = 0; i < VK_SPEC_COUNT; i++) map[i] = (VkSpecializationMapEntry){i, i * 4, 4};
    VkSpecializationInfo si = {VK_SPEC_COUNT, map, VK_SPEC_COUNT * sizeof(int32_t), spec};
    /* a kernel written for one subgroup width gets exactly that, in full subgroups */
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo sgi = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO, .requiredSubgroupSize = subgroup_size};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = dev->pipeline_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .pNext = subgroup_size ? &sgi : NULL,
                  .flags = subgroup_size ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT : 0,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = dev->modules[kernel],
                  .pName = "main",
                  .pSpecializationInfo = &si},
        .layout = dev->layout,
    };
    VkPipeline pipe = VK_NULL_HANDLE;
    if ((r = vkCreateComputePipelines(dev->device, dev->cache, 1, &ci, NULL, &pipe)) != VK_SUCCESS)
        return mxa_fail(MXA_ERR_BACKEND, "vulkan: vkCreateComputePipelines(%s, spec %d,%d,%d,%d,%d,%d,%d) failed: %s",
                        blobs[kernel].name, spec[0], spec[1], spec[2], spec[3], spec[4], spec[5], spec[6], vk_result_name(r));
    if (dev->pipeline_stats) log_statistics(dev, pipe, blobs[kernel].name);
    vk_pipeline *p = &dev->pipelines[dev->pipeline_count++];
    p->kernel = kernel;
    p->subgroup_size = subgroup_size;
    memcpy(p->spec, spec, sizeof p->spec);
    p->pipeline = pipe;
    dev->cache_dirty = 1;
    *out = pipe;
    return MXA_OK;
}

void vk_pipelines_destroy(vk_device *dev)
{
    for (int i = 0; i < dev->pipeline_count; i++) vkDestroyPipeline(dev->device, dev->pipelines[i].pipeline, NULL);
    free(dev->pipelines);
    dev->pipelines = NULL;
    dev->pipeline_count = dev->pipeline_cap = 0;
    for (int i = 0; i < VK_K_COUNT; i++)
        if (dev->modules[i]) {
            vkDestroyShaderModule(dev->device, dev->modules[i], NULL);
            dev->modules[i] = VK_NULL_HANDLE;
        }
}

static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = src,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    vkCmdPipelineBarrier(cmd, src_stage, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb,
                         0, NULL, 0, NULL);
}

mxa_status vk_batch_begin(vk_device *dev, int timed, vk_batch *batch)
{
    vk_complete_inflight(dev); /* its command buffer is this one */
    batch->dev = dev;
    batch->cmd = dev->cmd;
    batch->timed = timed && dev->timestamps;
    batch->sets_used = 0;
    batch->overlap = 0;
    VkResult r = dev->push_descriptors ? VK_SUCCESS : vkResetDescriptorPool(dev->device, dev->desc_pool, 0);
    if (r == VK_SUCCESS) r = vkResetCommandBuffer(dev->cmd, 0); /* also ends a batch abandoned on an error */
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if (r == VK_SUCCESS) r = vkBeginCommandBuffer(dev->cmd, &bi);
    if (r != VK_SUCCESS) return mxa_fail(MXA_ERR_BACKEND, "vulkan: cannot begin a command buffer: %s", vk_result_name(r));
    if (batch->timed) {
        vkCmdResetQueryPool(dev->cmd, dev->timestamps, 0, VK_MAX_TIMESTAMPS);
        vkCmdWriteTimestamp(dev->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, dev->timestamps, 0);
        batch->stamps = 1;
    }
    return MXA_OK;
}

mxa_status vk_batch_borrow(vk_device *dev, VkCommandBuffer cmd, vk_batch *batch)
{
    if (!dev->push_descriptors)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "vulkan: recording into an application's command buffer needs VK_KHR_push_descriptor%s",
                        dev->adopted ? " enabled on the device" : ", which this driver does not have");
    memset(batch, 0, sizeof *batch);
    batch->dev = dev;
    batch->cmd = cmd;
    /* what mxa recorded before into this command buffer (or the caller's last reads) may
     * still use the workspace: order its first writes after them */
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    return MXA_OK;
}

/* Fills the first `size` bytes of buf with zeros. */
mxa_status vk_batch_fill(vk_batch *batch, const vk_buffer *buf, VkDeviceSize size)
{
    vkCmdFillBuffer(batch->cmd, buf->buffer, buf->base, (size + 3) & ~(VkDeviceSize)3, 0);
    barrier(batch->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    return MXA_OK;
}

mxa_status vk_batch_update(vk_batch *batch, const vk_buffer *buf, const void *data, VkDeviceSize bytes)
{
    if (bytes > 65536 || bytes % 4)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "vulkan: %llu bytes of inline data (at most 65536, a multiple of 4)",
                        (unsigned long long)bytes);
    vkCmdUpdateBuffer(batch->cmd, buf->buffer, buf->base, bytes, data);
    barrier(batch->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    return MXA_OK;
}

/* The descriptor of a buffer: from its base rounded down to the device's alignment (the
 * shaders add vk_elem_offset), to its end rounded up to a whole word (the kernels read a
 * byte mask as words; mxa's own VkBuffers are allocated so, a wrapped one must hold it). */
static VkDescriptorBufferInfo binding_info(const vk_device *dev, const vk_buffer *b)
{
    const VkDeviceSize below = b->base % dev->storage_align;
    return (VkDescriptorBufferInfo){b->buffer, b->base - below,
                                    b->borrowed ? (b->size + below + 3) & ~(VkDeviceSize)3 : VK_WHOLE_SIZE};
}

mxa_status vk_batch_dispatch(vk_batch *batch, vk_kernel kernel, const int32_t spec[VK_SPEC_COUNT], uint32_t subgroup_size,
                             const vk_buffer *const *bindings, int nbindings, const void *push, uint32_t push_size,
                             uint32_t gx, uint32_t gy, uint32_t gz)
{
    vk_device *dev = batch->dev;
    VkPipeline pipe = VK_NULL_HANDLE;
    mxa_status st = get_pipeline(dev, kernel, spec, subgroup_size, &pipe);
    if (st) return st;
    VkDescriptorSet set = VK_NULL_HANDLE;
    if (!dev->push_descriptors) {
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = dev->desc_pool,
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &dev->set_layout};
        VkResult r = vkAllocateDescriptorSets(dev->device, &ai, &set);
        if (r != VK_SUCCESS) return mxa_fail(MXA_ERR_BACKEND, "vulkan: vkAllocateDescriptorSets failed: %s", vk_result_name(r));
        batch->sets_used++;
    }
    VkDescriptorBufferInfo bi[VK_MAX_BINDINGS];
    VkWriteDescriptorSet w[VK_MAX_BINDINGS];
    for (int i = 0; i < VK_MAX_BINDINGS; i++) {
        bi[i] = binding_info(dev, bindings[i < nbindings ? i : 0]); /* unused bindings repeat the first */
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set,
                                      .dstBinding = (uint32_t)i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bi[i]};
    }
    VkCommandBuffer cmd = batch->cmd;
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    if (dev->push_descriptors) {
        dev->push_descriptor_set(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev->layout, 0, VK_MAX_BINDINGS, w);
    } else {
        vkUpdateDescriptorSets(dev->device, VK_MAX_BINDINGS, w, 0, NULL);
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev->layout, 0, 1, &set, 0, NULL);
    }
    if (push_size) vkCmdPushConstants(cmd, dev->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
    vkCmdDispatch(cmd, gx, gy, gz);
    if (!batch->overlap) barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
    batch->overlap = 0;
    if (batch->timed && batch->stamps < VK_MAX_TIMESTAMPS - 1) { /* per-dispatch times for the debug log */
        batch->kernels[batch->stamps] = kernel;
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, dev->timestamps, (uint32_t)batch->stamps++);
    }
    return MXA_OK;
}

mxa_status vk_batch_submit_nowait(vk_batch *batch)
{
    vk_device *dev = batch->dev;
    if (batch->timed) vkCmdWriteTimestamp(dev->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, dev->timestamps, (uint32_t)batch->stamps++);
    dev->batch_stamps = batch->stamps;
    memcpy(dev->batch_kernels, batch->kernels, sizeof dev->batch_kernels);
    VkResult r = vkEndCommandBuffer(dev->cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &dev->cmd};
    if (r == VK_SUCCESS) r = vkQueueSubmit(dev->queue, 1, &si, dev->fence);
    if (r != VK_SUCCESS) return mxa_fail(MXA_ERR_BACKEND, "vulkan: kernel submission failed: %s", vk_result_name(r));
    return MXA_OK;
}

mxa_status vk_batch_finish(vk_device *dev, int timed, double *seconds)
{
    VkResult r = vk_wait_fence(dev);
    if (r != VK_SUCCESS) return mxa_fail(MXA_ERR_BACKEND, "vulkan: waiting for the kernels failed: %s", vk_result_name(r));
    if (seconds) *seconds = -1.0;
    const uint32_t n = (uint32_t)dev->batch_stamps;
    if (timed && seconds && dev->timestamps && n >= 2) {
        uint64_t ts[VK_MAX_TIMESTAMPS];
        if (vkGetQueryPoolResults(dev->device, dev->timestamps, 0, n, sizeof ts, ts, sizeof ts[0],
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
            uint64_t mask = dev->probe->timestamp_bits >= 64 ? ~0ull : ((1ull << dev->probe->timestamp_bits) - 1);
            const double tick = dev->probe->timestamp_period * 1e-9;
            *seconds = (double)((ts[n - 1] - ts[0]) & mask) * tick;
            for (uint32_t i = 1; i + 1 < n; i++)
                MXA_LOG_D("vulkan: %s %.3f ms", blobs[dev->batch_kernels[i]].name, (double)((ts[i] - ts[i - 1]) & mask) * tick * 1e3);
        }
    }
    return MXA_OK;
}

mxa_status vk_batch_submit(vk_batch *batch, double *seconds)
{
    mxa_status st = vk_batch_submit_nowait(batch);
    if (st) {
        vkResetFences(batch->dev->device, 1, &batch->dev->fence);
        return st;
    }
    return vk_batch_finish(batch->dev, batch->timed, seconds);
}
