/*
 * Per-call overhead of mxa's attention in an application's Vulkan device (issue 17): one
 * shape (default B1 H24 N1024 D64, a diffusion-sized call), four ways, medians of --reps:
 *   kernel     GPU timestamps around mxa's recorded commands (the device time)
 *   recorded   the application records mxa into its command buffer, submits, waits (wall)
 *   recorded60 60 calls recorded into one command buffer, one submit (wall / 60): an
 *              engine recording a whole denoising step
 *   sync-dev   mxa_attention on device-buffer tensors (wall)
 *   sync-host  mxa_attention on host tensors: uploads and read-back included (wall)
 * A tool for the GPU machine, not a ctest: vk_record_overhead [B H N D] [--reps R].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/vulkan/vk_app.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((x) != 0) {                                                                            \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #x, mxa_last_error_message()); \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    int64_t b = 1, h = 24, n = 1024, d = 64;
    int reps = 50, pos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (pos < 4) (pos == 0 ? &b : pos == 1 ? &h : pos == 2 ? &n : &d)[0] = atoll(argv[i]), pos++;
    }
    if (reps < 3) reps = 3;
    vk_app app;
    char why[160];
    if (vk_app_instance(&app, why, sizeof why) || vk_app_device(&app, 1, why, sizeof why)) {
        fprintf(stderr, "no Vulkan device: %s\n", why);
        return 1;
    }
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL, *own = NULL;
    CHECK(mxa_runtime_create(NULL, &rt));
    mxa_vulkan_context ctx = vk_app_context(&app);
    CHECK(mxa_vulkan_device_create(rt, &ctx, &dev));
    CHECK(mxa_device_open(rt, "vulkan:0", &own));
    mxa_device_info info;
    mxa_device_info_of(dev, &info);
    const size_t elems = (size_t)(b * h * n * d), bytes = elems * 4;
    float *host = malloc(bytes), *out = malloc(bytes);
    for (size_t i = 0; i < elems; i++) host[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    mxa_buffer *bq, *bk, *bv, *bo, *oq, *ok, *ov, *oo;
    CHECK(mxa_buffer_create(dev, bytes, &bq) || mxa_buffer_create(dev, bytes, &bk) || mxa_buffer_create(dev, bytes, &bv) ||
          mxa_buffer_create(dev, bytes, &bo));
    CHECK(mxa_buffer_create(own, bytes, &oq) || mxa_buffer_create(own, bytes, &ok) || mxa_buffer_create(own, bytes, &ov) ||
          mxa_buffer_create(own, bytes, &oo));
    CHECK(mxa_buffer_upload(bq, 0, host, bytes) || mxa_buffer_upload(bk, 0, host, bytes) || mxa_buffer_upload(bv, 0, host, bytes));
    CHECK(mxa_buffer_upload(oq, 0, host, bytes) || mxa_buffer_upload(ok, 0, host, bytes) || mxa_buffer_upload(ov, 0, host, bytes));
    mxa_tensor q, k, v, o, dq, dk, dv, dout, hq, ho;
    mxa_tensor *const all[8] = {&q, &k, &v, &o, &dq, &dk, &dv, &dout};
    mxa_buffer *const bufs[8] = {bq, bk, bv, bo, oq, ok, ov, oo};
    for (int i = 0; i < 8; i++) {
        mxa_tensor_init(all[i], MXA_F32, b, h, n, d, host);
        all[i]->data = NULL;
        all[i]->buffer = bufs[i];
    }
    mxa_tensor_init(&hq, MXA_F32, b, h, n, d, host);
    mxa_tensor_init(&ho, MXA_F32, b, h, n, d, out);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    size_t ws = 0;
    CHECK(mxa_vulkan_workspace_size(dev, &desc, &q, &k, &v, &o, NULL, &ws));
    CHECK(mxa_vulkan_workspace_reserve(dev, ws));

    VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                 .queryCount = 2};
    VkQueryPool pool;
    if (app.f.vkCreateQueryPool(app.device, &qci, NULL, &pool) != VK_SUCCESS) return 1;
    double *t_kernel = calloc((size_t)reps, sizeof(double)), *t_rec = calloc((size_t)reps, sizeof(double));
    double *t_rec60 = calloc((size_t)reps, sizeof(double)), *t_dev = calloc((size_t)reps, sizeof(double));
    double *t_host = calloc((size_t)reps, sizeof(double));
    VkCommandBuffer cmd = vk_app_begin(&app);
    CHECK(mxa_vulkan_attention_record(dev, cmd, &desc, &q, &k, &v, &o, NULL, NULL)); /* warm-up: pipelines */
    CHECK(vk_app_submit_wait(&app, cmd));
    CHECK(mxa_attention(own, &desc, &dq, &dk, &dv, &dout, NULL, NULL));
    CHECK(mxa_attention(own, &desc, &hq, &hq, &hq, &ho, NULL, NULL));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    for (int r = 0; r < reps; r++) { /* kernel time: timestamps around mxa's commands only */
        app.f.vkResetCommandBuffer(cmd, 0);
        app.f.vkBeginCommandBuffer(cmd, &bi);
        app.f.vkCmdResetQueryPool(cmd, pool, 0, 2);
        app.f.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, 0);
        CHECK(mxa_vulkan_attention_record(dev, cmd, &desc, &q, &k, &v, &o, NULL, NULL));
        app.f.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 1);
        CHECK(vk_app_submit_wait(&app, cmd));
        uint64_t ts[2];
        app.f.vkGetQueryPoolResults(app.device, pool, 0, 2, sizeof ts, ts, sizeof ts[0], VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
        t_kernel[r] = (double)(ts[1] - ts[0]) * app.props.limits.timestampPeriod * 1e-9;
    }
    for (int r = 0; r < reps; r++) { /* recorded: record + submit + wait, per call */
        const double t0 = now();
        app.f.vkResetCommandBuffer(cmd, 0);
        app.f.vkBeginCommandBuffer(cmd, &bi);
        CHECK(mxa_vulkan_attention_record(dev, cmd, &desc, &q, &k, &v, &o, NULL, NULL));
        CHECK(vk_app_submit_wait(&app, cmd));
        t_rec[r] = now() - t0;
    }
    for (int r = 0; r < reps; r++) { /* 60 calls per command buffer */
        const double t0 = now();
        app.f.vkResetCommandBuffer(cmd, 0);
        app.f.vkBeginCommandBuffer(cmd, &bi);
        for (int c = 0; c < 60; c++) CHECK(mxa_vulkan_attention_record(dev, cmd, &desc, &q, &k, &v, &o, NULL, NULL));
        CHECK(vk_app_submit_wait(&app, cmd));
        t_rec60[r] = (now() - t0) / 60.0;
    }
    double *t_empty = calloc((size_t)reps, sizeof(double)), *t_call = calloc((size_t)reps, sizeof(double));
    for (int r = 0; r < reps; r++) { /* the driver's own round trip: an empty command buffer */
        const double t0 = now();
        app.f.vkResetCommandBuffer(cmd, 0);
        app.f.vkBeginCommandBuffer(cmd, &bi);
        CHECK(vk_app_submit_wait(&app, cmd));
        t_empty[r] = now() - t0;
    }
    for (int r = 0; r < reps; r++) { /* the host time of one mxa_vulkan_attention_record */
        app.f.vkResetCommandBuffer(cmd, 0);
        app.f.vkBeginCommandBuffer(cmd, &bi);
        const double t0 = now();
        CHECK(mxa_vulkan_attention_record(dev, cmd, &desc, &q, &k, &v, &o, NULL, NULL));
        t_call[r] = now() - t0;
        CHECK(vk_app_submit_wait(&app, cmd));
    }
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
        CHECK(mxa_attention(own, &desc, &dq, &dk, &dv, &dout, NULL, NULL));
        t_dev[r] = now() - t0;
    }
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
        CHECK(mxa_attention(own, &desc, &hq, &hq, &hq, &ho, NULL, NULL));
        t_host[r] = now() - t0;
    }
    const double kern = median(t_kernel, reps);
    const double rows[4] = {median(t_rec, reps), median(t_rec60, reps), median(t_dev, reps), median(t_host, reps)};
    static const char *const names[4] = {"recorded (record+submit+wait)", "recorded x60 per command buffer",
                                         "sync, device buffers", "sync, host tensors"};
    printf("vk_record_overhead: B%lld H%lld N%lld D%lld mxattention on %s, variant %s, median of %d\n", (long long)b,
           (long long)h, (long long)n, (long long)d, info.name, info.variant, reps);
    printf("  %-34s %9.3f ms\n", "kernel (GPU timestamps)", kern * 1e3);
    for (int i = 0; i < 4; i++)
        printf("  %-34s %9.3f ms  %+7.1f%% over the kernel\n", names[i], rows[i] * 1e3, (rows[i] / kern - 1.0) * 100.0);
    printf("  %-34s %9.3f ms  (the driver's submit + fence wait)\n", "empty command buffer, submit+wait", median(t_empty, reps) * 1e3);
    printf("  %-34s %9.3f ms  (host time of mxa_vulkan_attention_record)\n", "one record call", median(t_call, reps) * 1e3);
    app.f.vkDestroyQueryPool(app.device, pool, NULL);
    for (int i = 0; i < 8; i++) mxa_buffer_destroy(bufs[i]);
    mxa_device_close(dev);
    mxa_device_close(own);
    mxa_runtime_destroy(rt);
    vk_app_destroy(&app);
    free(host);
    free(out);
    free(t_kernel);
    free(t_rec);
    free(t_rec60);
    free(t_dev);
    free(t_host);
    free(t_empty);
    free(t_call);
    return 0;
}
