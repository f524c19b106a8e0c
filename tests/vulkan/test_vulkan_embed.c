/*
 * mxa inside an application's own Vulkan device (include/mxa/mxa_vulkan.h): the test is the
 * application (vk_app.c: its own loader handle, instance, device, buffers, command
 * buffers). It records its own upload, mxa's attention and its own read-back into ONE
 * command buffer, submits it itself, and compares with mxa_attention on an mxa-opened
 * device running the same variant: bit for bit. Then 16-bit outputs, the extras, two
 * calls sharing a workspace, exported memory imported back, asynchronous calls, misuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vk_app.h"
#include "tests/common/testutil.h"

#define B 2
#define H 4
#define HKV 2
#define NQ 40
#define NK 72
#define D 64

static vk_app g_app;
static mxa_runtime *g_rt;
static mxa_device *g_dev;   /* the application's device, lent to mxa */
static mxa_device *g_own;   /* the same GPU opened by mxa itself */
static float g_q[B * H * NQ * D], g_k[B * HKV * NK * D], g_v[B * HKV * NK * D], g_bias[H * NQ * NK];

static const size_t QB = sizeof g_q, KB = sizeof g_k, VB = sizeof g_v, OB = sizeof g_q, LB = B * H * NQ * 4;

static int setup(void **state)
{
    (void)state;
    char why[160];
    if (vk_app_instance(&g_app, why, sizeof why) || vk_app_device(&g_app, 1, why, sizeof why)) {
        fprintf(stderr, "skipped: %s\n", why);
        return 0;
    }
    if (mxa_runtime_create(NULL, &g_rt) != MXA_OK) return -1;
    mxa_vulkan_context ctx = vk_app_context(&g_app);
    if (mxa_vulkan_device_create(g_rt, &ctx, &g_dev) != MXA_OK) {
        fprintf(stderr, "mxa_vulkan_device_create: %s\n", mxa_last_error_message());
        return -1;
    }
    if (mxa_device_open(g_rt, "vulkan:0", &g_own) != MXA_OK) return -1;
    mxa_device_info a, b;
    mxa_device_info_of(g_dev, &a);
    mxa_device_info_of(g_own, &b);
    fprintf(stderr, "lent: %s [%s] variant %s; mxa's own: variant %s\n", a.name, a.capabilities, a.variant, b.variant);
    tu_rng r = {17};
    tu_fill_attention(&r, g_q, g_k, g_v, B, H, HKV, NQ, NK, D);
    for (int i = 0; i < H * NQ * NK; i++) g_bias[i] = (float)(-11.0 + 14.0 * tu_uniform(&r)); /* like a learned bias */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mxa_device_close(g_dev);
    mxa_device_close(g_own);
    mxa_runtime_destroy(g_rt);
    vk_app_destroy(&g_app);
    return 0;
}

#define NEED_DEVICE() \
    do {              \
        if (!g_dev) skip(); \
    } while (0)

static mxa_tensor dev_tensor(mxa_buffer *buf, size_t offset, mxa_dtype dtype, int64_t b, int64_t h, int64_t n, int64_t d)
{
    mxa_tensor t;
    mxa_tensor_init(&t, dtype, b, h, n, d, NULL);
    t.data = NULL;
    t.buffer = buf;
    t.offset = offset;
    return t;
}

/* The application's buffers: a host-visible staging buffer (q | k | v | bias | o | lse) and
 * device-local ones, all wrapped for mxa at offsets that are not 0. */
typedef struct app_io {
    vk_app_buffer staging, inputs, outputs;
    mxa_buffer *in, *out;
} app_io;

enum { OFF_Q = 256, OFF_K = OFF_Q + sizeof g_q, OFF_V = OFF_K + sizeof g_k, OFF_BIAS = OFF_V + sizeof g_v,
       IN_BYTES = OFF_BIAS + sizeof g_bias, OFF_O = 4, OFF_LSE = OFF_O + sizeof g_q, OUT_BYTES = OFF_LSE + B * H * NQ * 4 };

static void io_create(app_io *io)
{
    memset(io, 0, sizeof *io);
    assert_int_equal(vk_app_buffer_create(&g_app, IN_BYTES + OUT_BYTES, 1, &io->staging), 0);
    assert_int_equal(vk_app_buffer_create(&g_app, IN_BYTES, 0, &io->inputs), 0);
    assert_int_equal(vk_app_buffer_create(&g_app, OUT_BYTES + 64, 0, &io->outputs), 0);
    char *s = io->staging.mapped;
    memcpy(s + OFF_Q, g_q, QB);
    memcpy(s + OFF_K, g_k, KB);
    memcpy(s + OFF_V, g_v, VB);
    memcpy(s + OFF_BIAS, g_bias, sizeof g_bias);
    memset(s + IN_BYTES, 0xAB, OUT_BYTES);
    /* the outputs at byte 64 of the application's buffer: an offset mxa must honour */
    assert_int_equal(mxa_vulkan_buffer_wrap(g_dev, io->inputs.buffer, 0, IN_BYTES, &io->in), MXA_OK);
    assert_int_equal(mxa_vulkan_buffer_wrap(g_dev, io->outputs.buffer, 64, OUT_BYTES, &io->out), MXA_OK);
}

static void io_destroy(app_io *io)
{
    mxa_buffer_destroy(io->in);
    mxa_buffer_destroy(io->out);
    vk_app_buffer_destroy(&g_app, &io->staging);
    vk_app_buffer_destroy(&g_app, &io->inputs);
    vk_app_buffer_destroy(&g_app, &io->outputs);
}

/* The call's tensors over the application's wrapped buffers. */
typedef struct io_tensors {
    mxa_tensor q, k, v, o, lse;
} io_tensors;

static io_tensors io_tensors_of(const app_io *io, mxa_dtype odt)
{
    return (io_tensors){dev_tensor(io->in, OFF_Q, MXA_F32, B, H, NQ, D), dev_tensor(io->in, OFF_K, MXA_F32, B, HKV, NK, D),
                        dev_tensor(io->in, OFF_V, MXA_F32, B, HKV, NK, D), dev_tensor(io->out, OFF_O, odt, B, H, NQ, D),
                        dev_tensor(io->out, OFF_LSE, MXA_F32, B, H, NQ, 1)};
}

static void copy(VkCommandBuffer cmd, VkBuffer src, VkDeviceSize so, VkBuffer dst, VkDeviceSize dof, VkDeviceSize n)
{
    VkBufferCopy c = {so, dof, n};
    g_app.f.vkCmdCopyBuffer(cmd, src, dst, 1, &c);
}

/* One command buffer: upload, barrier, mxa, barrier, read-back; the outputs land in staging. */
static void run_recorded(app_io *io, const mxa_attention_desc *desc, mxa_dtype odt, mxa_buffer *ws)
{
    io_tensors t = io_tensors_of(io, odt);
    VkCommandBuffer cmd = vk_app_begin(&g_app);
    assert_non_null(cmd);
    copy(cmd, io->staging.buffer, 0, io->inputs.buffer, 0, IN_BYTES);
    copy(cmd, io->staging.buffer, IN_BYTES, io->outputs.buffer, 64, OUT_BYTES); /* 0xAB: what mxa must not touch */
    vk_app_barrier(&g_app, cmd);
    mxa_status st = mxa_vulkan_attention_record(g_dev, cmd, desc, &t.q, &t.k, &t.v, &t.o, &t.lse, ws);
    if (st) fprintf(stderr, "record: %s\n", mxa_last_error_message());
    assert_int_equal(st, MXA_OK);
    vk_app_barrier(&g_app, cmd);
    copy(cmd, io->outputs.buffer, 64, io->staging.buffer, IN_BYTES, OUT_BYTES);
    assert_int_equal(vk_app_submit_wait(&g_app, cmd), 0);
}

/* The same call through mxa's synchronous API on mxa's own device, host tensors. */
static void run_sync(const mxa_attention_desc *desc, mxa_dtype odt, void *o_out, float *lse_out)
{
    mxa_tensor q = tu_tensor(g_q, B, H, NQ, D), k = tu_tensor(g_k, B, HKV, NK, D), v = tu_tensor(g_v, B, HKV, NK, D);
    mxa_tensor o, lse = tu_tensor(lse_out, B, H, NQ, 1);
    mxa_tensor_init(&o, odt, B, H, NQ, D, o_out);
    assert_int_equal(mxa_attention(g_own, desc, &q, &k, &v, &o, &lse, NULL), MXA_OK);
}

static void reserve_for(const mxa_attention_desc *desc, app_io *io, mxa_dtype odt)
{
    io_tensors t = io_tensors_of(io, odt);
    size_t bytes = 0;
    assert_int_equal(mxa_vulkan_workspace_size(g_dev, desc, &t.q, &t.k, &t.v, &t.o, &t.lse, &bytes), MXA_OK);
    assert_true(bytes > 0);
    assert_int_equal(mxa_vulkan_workspace_reserve(g_dev, bytes), MXA_OK);
}

static void expect_same(const app_io *io, mxa_dtype odt, const mxa_attention_desc *desc)
{
    static float o_ref[B * H * NQ * D], lse_ref[B * H * NQ];
    run_sync(desc, odt, o_ref, lse_ref);
    const char *s = (const char *)io->staging.mapped + IN_BYTES;
    const size_t obytes = (size_t)B * H * NQ * D * mxa_dtype_size(odt);
    assert_memory_equal(s + OFF_O, o_ref, obytes);
    assert_memory_equal(s + OFF_LSE, lse_ref, LB);
    const unsigned char *tail = (const unsigned char *)s + OFF_O + obytes; /* a 16-bit o leaves the rest untouched */
    for (size_t i = 0; odt != MXA_F32 && i < OB - obytes; i++) assert_int_equal(tail[i], 0xAB);
}

static void test_one_command_buffer(void **state)
{
    (void)state;
    NEED_DEVICE();
    mxa_device_info a, b;
    mxa_device_info_of(g_dev, &a);
    mxa_device_info_of(g_own, &b);
    assert_string_equal(a.variant, b.variant); /* everything enabled: the same kernels */
    app_io io;
    io_create(&io);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;
    reserve_for(&desc, &io, MXA_F32);
    run_recorded(&io, &desc, MXA_F32, NULL);
    expect_same(&io, MXA_F32, &desc);
    /* the command buffer only records: submitting the same kind of work again gives the same bytes */
    run_recorded(&io, &desc, MXA_F32, NULL);
    expect_same(&io, MXA_F32, &desc);
    io_destroy(&io);
}

static void test_half_outputs(void **state)
{
    (void)state;
    NEED_DEVICE();
    app_io io;
    io_create(&io);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    const mxa_dtype dts[2] = {MXA_F16, MXA_BF16};
    for (int i = 0; i < 2; i++) {
        reserve_for(&desc, &io, dts[i]);
        memset((char *)io.staging.mapped + IN_BYTES, 0xAB, OUT_BYTES);
        run_recorded(&io, &desc, dts[i], NULL);
        expect_same(&io, dts[i], &desc); /* the device rounds exactly as mxa's host conversion */
    }
    io_destroy(&io);
}

static void test_extras_and_caller_workspace(void **state)
{
    (void)state;
    NEED_DEVICE();
    app_io io;
    io_create(&io);
    static const int32_t lengths[B] = {NK - 9, 33};
    mxa_tensor bias = dev_tensor(io.in, OFF_BIAS, MXA_F32, 1, H, NQ, NK), bias_host = tu_tensor(g_bias, 1, H, NQ, NK);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.causal = MXA_CAUSAL_TOP_LEFT;
    desc.key_lengths = lengths;
    desc.bias = &bias;
    io_tensors t = io_tensors_of(&io, MXA_F32);
    size_t need = 0;
    assert_int_equal(mxa_vulkan_workspace_size(g_dev, &desc, &t.q, &t.k, &t.v, &t.o, &t.lse, &need), MXA_OK);
    mxa_buffer *ws = NULL, *small = NULL;
    assert_int_equal(mxa_buffer_create(g_dev, need, &ws), MXA_OK);
    assert_int_equal(mxa_buffer_create(g_dev, need - 4, &small), MXA_OK);
    VkCommandBuffer cmd = vk_app_begin(&g_app);
    assert_int_equal(mxa_vulkan_attention_record(g_dev, cmd, &desc, &t.q, &t.k, &t.v, &t.o, &t.lse, small), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "workspace"));
    assert_int_equal(vk_app_submit_wait(&g_app, cmd), 0); /* nothing was recorded into it */
    run_recorded(&io, &desc, MXA_F32, ws);
    desc.bias = &bias_host; /* the synchronous reference takes the host copy */
    expect_same(&io, MXA_F32, &desc);
    mxa_buffer_destroy(ws);
    mxa_buffer_destroy(small);
    io_destroy(&io);
}

/* A 4-bit KV cache (mxa_prepare_kv) on the lent device, recorded: the same bytes as the
 * float32 K and V on mxa's own device. */
static void test_prepared_kv(void **state)
{
    (void)state;
    NEED_DEVICE();
    app_io io;
    io_create(&io);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;
    mxa_tensor kh = tu_tensor(g_k, B, HKV, NK, D), vh = tu_tensor(g_v, B, HKV, NK, D);
    mxa_kv *kv = NULL;
    assert_int_equal(mxa_prepare_kv(g_dev, &desc, &kh, &vh, &kv), MXA_OK);
    mxa_attention_desc with = desc;
    with.kv = kv;
    io_tensors t = io_tensors_of(&io, MXA_F32);
    mxa_tensor q = t.q, o = t.o, lse = t.lse;
    size_t bytes = 0;
    assert_int_equal(mxa_vulkan_workspace_size(g_dev, &with, &q, NULL, NULL, &o, &lse, &bytes), MXA_OK);
    assert_int_equal(mxa_vulkan_workspace_reserve(g_dev, bytes), MXA_OK);
    VkCommandBuffer cmd = vk_app_begin(&g_app);
    copy(cmd, io.staging.buffer, 0, io.inputs.buffer, 0, IN_BYTES);
    vk_app_barrier(&g_app, cmd);
    assert_int_equal(mxa_vulkan_attention_record(g_dev, cmd, &with, &q, NULL, NULL, &o, &lse, NULL), MXA_OK);
    vk_app_barrier(&g_app, cmd);
    copy(cmd, io.outputs.buffer, 64, io.staging.buffer, IN_BYTES, OUT_BYTES);
    assert_int_equal(vk_app_submit_wait(&g_app, cmd), 0);
    expect_same(&io, MXA_F32, &desc);
    mxa_kv_destroy(kv);
    io_destroy(&io);
}

/* Two different calls in one command buffer, one workspace: the second's first writes
 * must wait for the first's reads. */
static void test_two_calls_one_workspace(void **state)
{
    (void)state;
    NEED_DEVICE();
    app_io io;
    io_create(&io);
    mxa_buffer *o2 = NULL;
    assert_int_equal(mxa_buffer_create(g_dev, OB, &o2), MXA_OK);
    mxa_attention_desc d1, d2;
    mxa_attention_desc_init(&d1, MXA_RECIPE_MXATTENTION);
    mxa_attention_desc_init(&d2, MXA_RECIPE_OCP_DIRECT);
    d2.causal = MXA_CAUSAL_BOTTOM_RIGHT;
    reserve_for(&d1, &io, MXA_F32);
    reserve_for(&d2, &io, MXA_F32);
    io_tensors t = io_tensors_of(&io, MXA_F32);
    mxa_tensor oo = dev_tensor(o2, 0, MXA_F32, B, H, NQ, D);
    VkCommandBuffer cmd = vk_app_begin(&g_app);
    copy(cmd, io.staging.buffer, 0, io.inputs.buffer, 0, IN_BYTES);
    vk_app_barrier(&g_app, cmd);
    assert_int_equal(mxa_vulkan_attention_record(g_dev, cmd, &d1, &t.q, &t.k, &t.v, &t.o, NULL, NULL), MXA_OK);
    assert_int_equal(mxa_vulkan_attention_record(g_dev, cmd, &d2, &t.q, &t.k, &t.v, &oo, NULL, NULL), MXA_OK);
    vk_app_barrier(&g_app, cmd);
    assert_int_equal(vk_app_submit_wait(&g_app, cmd), 0);
    static float got1[B * H * NQ * D], got2[B * H * NQ * D], want[B * H * NQ * D], lse[B * H * NQ];
    assert_int_equal(mxa_buffer_download(io.out, OFF_O, got1, OB), MXA_OK);
    assert_int_equal(mxa_buffer_download(o2, 0, got2, OB), MXA_OK);
    run_sync(&d1, MXA_F32, want, lse);
    assert_memory_equal(got1, want, OB);
    run_sync(&d2, MXA_F32, want, lse);
    assert_memory_equal(got2, want, OB);
    mxa_buffer_destroy(o2);
    io_destroy(&io);
}

static void test_misuse(void **state)
{
    (void)state;
    NEED_DEVICE();
    app_io io;
    io_create(&io);
    mxa_buffer *foreign = NULL;
    assert_int_equal(mxa_buffer_create(g_own, QB, &foreign), MXA_OK);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    io_tensors t = io_tensors_of(&io, MXA_F32);
    mxa_tensor q = t.q, k = t.k, v = t.v, o = t.o, qf = dev_tensor(foreign, 0, MXA_F32, B, H, NQ, D), qh = tu_tensor(g_q, B, H, NQ, D);
    VkCommandBuffer cmd = vk_app_begin(&g_app);
    assert_int_equal(mxa_vulkan_attention_record(g_dev, cmd, &desc, &qf, &k, &v, &o, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "another device"));
    assert_int_equal(mxa_vulkan_attention_record(g_dev, cmd, &desc, &qh, &k, &v, &o, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "host tensor"));
    assert_int_equal(mxa_vulkan_attention_record(g_dev, VK_NULL_HANDLE, &desc, &q, &k, &v, &o, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_vulkan_attention_record(NULL, cmd, &desc, &q, &k, &v, &o, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    mxa_device *cpu = NULL;
    assert_int_equal(mxa_device_open(g_rt, "cpu", &cpu), MXA_OK);
    assert_int_equal(mxa_vulkan_attention_record(cpu, cmd, &desc, &q, &k, &v, &o, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "not a Vulkan device"));
    mxa_device_close(cpu);
    mxa_buffer *w = NULL;
    assert_int_equal(mxa_vulkan_buffer_wrap(g_dev, io.inputs.buffer, 2, 16, &w), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_vulkan_buffer_wrap(g_dev, VK_NULL_HANDLE, 0, 16, &w), MXA_ERR_INVALID_ARGUMENT);
    assert_null(w);
    mxa_vulkan_context bad = vk_app_context(&g_app);
    bad.device = VK_NULL_HANDLE;
    mxa_device *none = NULL;
    assert_int_equal(mxa_vulkan_device_create(g_rt, &bad, &none), MXA_ERR_INVALID_ARGUMENT);
    assert_null(none);
    assert_int_equal(vk_app_submit_wait(&g_app, cmd), 0);
    mxa_buffer_destroy(foreign);
    io_destroy(&io);
}

/* A device lent with no optional feature: it opens (the missing ones named), synchronous
 * calls work, recording is refused for want of VK_KHR_push_descriptor. */
static void test_features_not_enabled(void **state)
{
    (void)state;
    NEED_DEVICE();
    vk_app bare;
    char why[160];
    assert_int_equal(vk_app_instance(&bare, why, sizeof why), 0);
    assert_int_equal(vk_app_device(&bare, 0, why, sizeof why), 0);
    mxa_vulkan_context ctx = vk_app_context(&bare);
    mxa_device *dev = NULL;
    assert_int_equal(mxa_vulkan_device_create(g_rt, &ctx, &dev), MXA_OK);
    mxa_device_info info;
    mxa_device_info_of(dev, &info);
    fprintf(stderr, "bare: [%s] variant %s\n", info.capabilities, info.variant);
    const int has_push = vk_app_has_extension(&bare, "VK_KHR_push_descriptor");
    if (has_push) assert_non_null(strstr(info.capabilities, "push-descriptor"));
    assert_non_null(strstr(info.capabilities, "not-enabled(")); /* every GPU has one of the features mxa uses */
    static float o[B * H * NQ * D], ref[B * H * NQ * D];
    mxa_tensor q = tu_tensor(g_q, B, H, NQ, D), k = tu_tensor(g_k, B, HKV, NK, D), v = tu_tensor(g_v, B, HKV, NK, D),
               to = tu_tensor(o, B, H, NQ, D), tr = tu_tensor(ref, B, H, NQ, D);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    assert_int_equal(mxa_attention(dev, &desc, &q, &k, &v, &to, NULL, NULL), MXA_OK);
    assert_int_equal(mxa_reference_attention(&desc, 64, &q, &k, &v, &tr, NULL, NULL), MXA_OK);
    assert_true(tu_nmse(o, ref, B * H * NQ * D) < 1e-4);
    mxa_buffer *bq = NULL, *bo = NULL;
    assert_int_equal(mxa_buffer_create(dev, QB, &bq), MXA_OK);
    assert_int_equal(mxa_buffer_create(dev, OB, &bo), MXA_OK);
    mxa_buffer *bk = NULL, *bv = NULL;
    assert_int_equal(mxa_buffer_create(dev, KB, &bk), MXA_OK);
    assert_int_equal(mxa_buffer_create(dev, VB, &bv), MXA_OK);
    mxa_tensor dq = dev_tensor(bq, 0, MXA_F32, B, H, NQ, D), dk = dev_tensor(bk, 0, MXA_F32, B, HKV, NK, D),
               dv = dev_tensor(bv, 0, MXA_F32, B, HKV, NK, D), dout = dev_tensor(bo, 0, MXA_F32, B, H, NQ, D);
    assert_int_equal(mxa_vulkan_workspace_reserve(dev, 1 << 20), MXA_OK);
    VkCommandBuffer cmd = vk_app_begin(&bare);
    const mxa_status st = mxa_vulkan_attention_record(dev, cmd, &desc, &dq, &dk, &dv, &dout, NULL, NULL);
    assert_int_equal(st, MXA_ERR_UNSUPPORTED);
    assert_non_null(strstr(mxa_last_error_message(), "VK_KHR_push_descriptor"));
    assert_int_equal(vk_app_submit_wait(&bare, cmd), 0);
    mxa_device_close(dev); /* the buffers go with it */
    mxa_buffer_destroy(bq);
    mxa_buffer_destroy(bk);
    mxa_buffer_destroy(bv);
    mxa_buffer_destroy(bo);
    vk_app_destroy(&bare);
}

/* Exported memory, imported back by the application (what CUDA does on the GPU machine):
 * the importer reads what mxa wrote. */
static void test_export_fd(void **state)
{
    (void)state;
    NEED_DEVICE();
    if (!vk_app_has_extension(&g_app, "VK_KHR_external_memory_fd")) skip();
    enum { N = 4096 };
    mxa_buffer *buf = NULL;
    assert_int_equal(mxa_vulkan_buffer_create_exportable(g_dev, N, &buf), MXA_OK);
    uint32_t pattern[N / 4];
    for (int i = 0; i < N / 4; i++) pattern[i] = 0x9E3779B9u * (uint32_t)(i + 1);
    assert_int_equal(mxa_buffer_upload(buf, 0, pattern, N), MXA_OK);
    int fd = -1;
    uint64_t alloc = 0;
    assert_int_equal(mxa_vulkan_buffer_export_fd(buf, &fd, &alloc), MXA_OK);
    assert_true(fd >= 0 && alloc >= N);
    VkExternalMemoryBufferCreateInfo ebi = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                            .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .pNext = &ebi,
                              .size = N,
                              .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT};
    VkBuffer imported;
    assert_int_equal(g_app.f.vkCreateBuffer(g_app.device, &bci, NULL, &imported), VK_SUCCESS);
    VkMemoryRequirements req;
    g_app.f.vkGetBufferMemoryRequirements(g_app.device, imported, &req);
    uint32_t type = 0;
    while (type < 32 && !(req.memoryTypeBits & (1u << type))) type++;
    VkImportMemoryFdInfoKHR imp = {.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
                                   .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
                                   .fd = fd}; /* the import takes the fd */
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = &imp, .allocationSize = alloc,
                                .memoryTypeIndex = type};
    VkDeviceMemory mem;
    assert_int_equal(g_app.f.vkAllocateMemory(g_app.device, &mai, NULL, &mem), VK_SUCCESS);
    assert_int_equal(g_app.f.vkBindBufferMemory(g_app.device, imported, mem, 0), VK_SUCCESS);
    vk_app_buffer staging;
    assert_int_equal(vk_app_buffer_create(&g_app, N, 1, &staging), 0);
    VkCommandBuffer cmd = vk_app_begin(&g_app);
    copy(cmd, imported, 0, staging.buffer, 0, N);
    vk_app_barrier(&g_app, cmd);
    assert_int_equal(vk_app_submit_wait(&g_app, cmd), 0);
    assert_memory_equal(staging.mapped, pattern, N);
    vk_app_buffer_destroy(&g_app, &staging);
    g_app.f.vkDestroyBuffer(g_app.device, imported, NULL);
    g_app.f.vkFreeMemory(g_app.device, mem, NULL);
    mxa_buffer *plain = NULL;
    assert_int_equal(mxa_buffer_create(g_dev, 64, &plain), MXA_OK);
    assert_int_equal(mxa_vulkan_buffer_export_fd(plain, &fd, &alloc), MXA_ERR_INVALID_ARGUMENT);
    mxa_buffer_destroy(plain);
    mxa_buffer_destroy(buf);
}

/* mxa_attention_async on mxa's own device: two calls in flight, waited for in reverse
 * order, give what the synchronous calls give; a host output appears at the wait. */
static void test_async(void **state)
{
    (void)state;
    NEED_DEVICE();
    static float o1[B * H * NQ * D], o2[B * H * NQ * D], want1[B * H * NQ * D], want2[B * H * NQ * D];
    static float l1[B * H * NQ], l2[B * H * NQ], wl[B * H * NQ];
    mxa_attention_desc d1, d2;
    mxa_attention_desc_init(&d1, MXA_RECIPE_MXATTENTION);
    mxa_attention_desc_init(&d2, MXA_RECIPE_MXATTENTION);
    d2.causal = MXA_CAUSAL_BOTTOM_RIGHT;
    run_sync(&d1, MXA_F32, want1, wl);
    run_sync(&d2, MXA_F32, want2, wl);
    mxa_tensor q = tu_tensor(g_q, B, H, NQ, D), k = tu_tensor(g_k, B, HKV, NK, D), v = tu_tensor(g_v, B, HKV, NK, D);
    mxa_tensor t1 = tu_tensor(o1, B, H, NQ, D), t2 = tu_tensor(o2, B, H, NQ, D), tl1 = tu_tensor(l1, B, H, NQ, 1),
               tl2 = tu_tensor(l2, B, H, NQ, 1);
    mxa_event *e1 = NULL, *e2 = NULL;
    assert_int_equal(mxa_attention_async(g_own, &d1, &q, &k, &v, &t1, &tl1, &e1), MXA_OK);
    assert_int_equal(mxa_attention_async(g_own, &d2, &q, &k, &v, &t2, &tl2, &e2), MXA_OK);
    mxa_attention_info info;
    assert_int_equal(mxa_event_wait(e2, &info), MXA_OK);
    assert_true(info.variant[0] != 0);
    assert_int_equal(mxa_event_wait(e1, NULL), MXA_OK);
    assert_int_equal(mxa_event_wait(e1, NULL), MXA_OK); /* twice is fine */
    assert_memory_equal(o1, want1, sizeof o1);
    assert_memory_equal(o2, want2, sizeof o2);
    mxa_event_destroy(e1);
    mxa_event_destroy(e2);
    mxa_event *e3 = NULL; /* destroyed without a wait */
    assert_int_equal(mxa_attention_async(g_own, &d1, &q, &k, &v, &t1, NULL, &e3), MXA_OK);
    mxa_event_destroy(e3);
    assert_int_equal(mxa_event_wait(NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_command_buffer),   cmocka_unit_test(test_half_outputs),
        cmocka_unit_test(test_extras_and_caller_workspace), cmocka_unit_test(test_two_calls_one_workspace),
        cmocka_unit_test(test_misuse),               cmocka_unit_test(test_features_not_enabled),
        cmocka_unit_test(test_export_fd),            cmocka_unit_test(test_async),
        cmocka_unit_test(test_prepared_kv),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
