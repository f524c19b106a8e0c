/*
 * mxa attention inside an application's own Vulkan device, in the application's command
 * buffer: the application owns the instance, the device, the queue, the buffers and the
 * command buffer; mxa adopts the device, wraps the buffers and records attention between
 * the application's own commands. The application submits; mxa never does.
 *
 * Build: cc vulkan_interop.c -lmxa -lvulkan -lm   Run: ./vulkan_interop   (exit 0 on success)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vulkan.h>
#include <mxa/mxa_vulkan.h>

enum { B = 1, H = 4, N = 256, D = 64 }; /* q, k, v, o: [B, H, N, D] float32 */

#define CHECK_VK(call)                                                          \
    do {                                                                        \
        VkResult r_ = (call);                                                   \
        if (r_ != VK_SUCCESS) {                                                 \
            fprintf(stderr, "%s failed: %d\n", #call, (int)r_);                 \
            return 1;                                                           \
        }                                                                       \
    } while (0)
#define CHECK_MXA(call)                                                         \
    do {                                                                        \
        if ((call) != MXA_OK) {                                                 \
            fprintf(stderr, "%s failed: %s\n", #call, mxa_last_error_message()); \
            return 1;                                                           \
        }                                                                       \
    } while (0)

static VkDeviceMemory memory_for(VkDevice dev, const VkPhysicalDeviceMemoryProperties *mp, VkBuffer buf,
                                 VkMemoryPropertyFlags want)
{
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, buf, &req);
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mp->memoryTypes[i].propertyFlags & want) == want) {
            VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, req.size, i};
            VkDeviceMemory m = VK_NULL_HANDLE;
            if (vkAllocateMemory(dev, &ai, NULL, &m) == VK_SUCCESS && vkBindBufferMemory(dev, buf, m, 0) == VK_SUCCESS) return m;
        }
    return VK_NULL_HANDLE;
}

int main(void)
{
    /* ---- the application's Vulkan objects: instance, device (with what mxa's fast kernels
     * use: here push descriptors, needed to record, and 8-bit integers), one compute queue */
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance instance;
    CHECK_VK(vkCreateInstance(&ici, NULL, &instance));
    uint32_t n = 1;
    VkPhysicalDevice gpu;
    if (vkEnumeratePhysicalDevices(instance, &n, &gpu) < 0 || n == 0) return 1;
    VkQueueFamilyProperties qf[8];
    uint32_t nqf = 8, family = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(gpu, &nqf, qf);
    while (family < nqf && !(qf[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) family++;
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    vkGetPhysicalDeviceFeatures2(gpu, &f2);
    f12 = (VkPhysicalDeviceVulkan12Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                             .shaderInt8 = f12.shaderInt8, .storageBuffer8BitAccess = f12.storageBuffer8BitAccess};
    f2.features = (VkPhysicalDeviceFeatures){0};
    const char *exts[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, family, 1, &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f2, .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci, .enabledExtensionCount = 1, .ppEnabledExtensionNames = exts};
    VkDevice device;
    CHECK_VK(vkCreateDevice(gpu, &dci, NULL, &device));
    VkQueue queue;
    vkGetDeviceQueue(device, family, 0, &queue);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(gpu, &mp);

    /* one device-local buffer for q | k | v | o, one host-visible staging buffer */
    const VkDeviceSize bytes = (VkDeviceSize)B * H * N * D * sizeof(float);
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = 4 * bytes,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    VkBuffer tensors, staging;
    CHECK_VK(vkCreateBuffer(device, &bci, NULL, &tensors));
    CHECK_VK(vkCreateBuffer(device, &bci, NULL, &staging));
    VkDeviceMemory tensors_mem = memory_for(device, &mp, tensors, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    VkDeviceMemory staging_mem = memory_for(device, &mp, staging, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                                      VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    float *host;
    if (!tensors_mem || !staging_mem) return 1;
    CHECK_VK(vkMapMemory(device, staging_mem, 0, VK_WHOLE_SIZE, 0, (void **)&host));

    /* ---- mxa over them: once, at start-up */
    mxa_runtime *rt;
    mxa_device *dev;
    mxa_buffer *buf;
    CHECK_MXA(mxa_runtime_create(NULL, &rt));
    mxa_vulkan_context ctx = {.instance = instance, .physical_device = gpu, .device = device, .queue = queue,
                              .queue_family = family, .api_version = VK_API_VERSION_1_2,
                              .enabled_extensions = exts, .enabled_extension_count = 1, .enabled_features = &f2};
    CHECK_MXA(mxa_vulkan_device_create(rt, &ctx, &dev));
    CHECK_MXA(mxa_vulkan_buffer_wrap(dev, tensors, 0, 4 * bytes, &buf));
    mxa_tensor q, k, v, o;
    mxa_tensor_init(&q, MXA_F32, B, H, N, D, NULL);
    k = v = o = q;
    q.buffer = k.buffer = v.buffer = o.buffer = buf;
    k.offset = bytes, v.offset = 2 * bytes, o.offset = 3 * bytes;
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;
    size_t ws = 0;
    CHECK_MXA(mxa_vulkan_workspace_size(dev, &desc, &q, &k, &v, &o, NULL, &ws));
    CHECK_MXA(mxa_vulkan_workspace_reserve(dev, ws)); /* recording allocates nothing */

    /* ---- the hot loop: the application's upload, mxa attention, its read-back, one submit */
    for (size_t i = 0; i < 3 * bytes / sizeof(float); i++) host[i] = sinf(0.37f * (float)(i % (bytes / sizeof(float))));
    VkCommandPoolCreateInfo pci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL, 0, family};
    VkCommandPool pool;
    CHECK_VK(vkCreateCommandPool(device, &pci, NULL, &pool));
    VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, pool,
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    VkCommandBuffer cmd;
    CHECK_VK(vkAllocateCommandBuffers(device, &cai, &cmd));
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK_VK(vkBeginCommandBuffer(cmd, &begin));
    VkBufferCopy up = {0, 0, 3 * bytes}, down = {3 * bytes, 3 * bytes, bytes};
    vkCmdCopyBuffer(cmd, staging, tensors, 1, &up);
    VkMemoryBarrier before = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &before, 0, NULL,
                         0, NULL); /* what the application owes before: its writes of q, k, v */
    CHECK_MXA(mxa_vulkan_attention_record(dev, cmd, &desc, &q, &k, &v, &o, NULL, NULL));
    vkCmdCopyBuffer(cmd, tensors, staging, 1, &down); /* mxa's last barrier covers transfer reads */
    VkMemoryBarrier after = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &after, 0, NULL, 0, NULL);
    CHECK_VK(vkEndCommandBuffer(cmd));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    CHECK_VK(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE));
    CHECK_VK(vkQueueWaitIdle(queue)); /* the application waits as it likes */

    /* row 0 sees only key 0 (causal): its output is v's row 0 as MXFP4 (|v| <= 1: error < 0.25) */
    const float *out = host + 3 * bytes / sizeof(float), *v0 = host + 2 * bytes / sizeof(float);
    printf("o[0][0..3] = %.4f %.4f %.4f %.4f (v: %.4f %.4f %.4f %.4f)\n", out[0], out[1], out[2], out[3], v0[0], v0[1],
           v0[2], v0[3]);
    int ok = 1;
    for (int c = 0; c < D; c++) ok &= fabsf(out[c] - v0[c]) < 0.25f;

    /* ---- tear-down: mxa first (after the GPU finished), then the application's objects */
    mxa_buffer_destroy(buf);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    vkDestroyCommandPool(device, pool, NULL);
    vkDestroyBuffer(device, tensors, NULL);
    vkDestroyBuffer(device, staging, NULL);
    vkFreeMemory(device, tensors_mem, NULL);
    vkFreeMemory(device, staging_mem, NULL);
    vkDestroyDevice(device, NULL);
    vkDestroyInstance(instance, NULL);
    return ok ? 0 : 1;
}
