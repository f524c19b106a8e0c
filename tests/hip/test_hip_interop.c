/*
 * mxa/mxa_hip.h and asynchronous calls against the test double, whose streams defer
 * their work until waited for and whose launches run the real kernels on the host
 * emulator (fake_hip_emu): the test is the "application", holding the double's
 * hipMalloc / hipStreamCreate the way an engine holds the real ones. Results are
 * compared bit for bit with the reference (int8 MFMA and scalar follow its
 * operations). No AMD GPU is involved.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_fake_util.h"
#include "mxa/mxa_hip.h"
#include "runtime/tensor.h"
#include "testutil.h"

enum { B = 1, H = 2, HKV = 1, NQ = 40, NK = 70, D = 64, BC = 64 };
enum { QN = B * H * NQ * D, KN = B * HKV * NK * D, ROWS = B * H * NQ };

/* The double's entry points, as the application calls them. */
static struct {
    int (*malloc)(void **, size_t);
    int (*free)(void *);
    int (*set_device)(int);
    int (*get_device)(int *);
    int (*stream_create)(hipStream_t *);
    int (*stream_destroy)(hipStream_t);
    int (*stream_sync)(hipStream_t);
} hip;
static void *lib;

static void resolve(const char *name, void *field)
{
    void *p = dlsym(lib, name);
    if (!p) fail_msg("the double lacks %s", name);
    memcpy(field, &p, sizeof p);
}

static float q[QN], k[KN], v[KN], o[QN], o_ref[QN], lse[ROWS], l_ref[ROWS], bias[H * NQ * NK];
static uint16_t o16[QN];

static void emulate(void)
{
    use_fake(FAKE_HIP_EMU_PATH);
    setenv("MXA_HIPRTC_LIBRARY", FAKE_HIP_EMU_PATH, 1);
    setenv("FAKE_HIP_EMULATE", "1", 1);
    setenv("FAKE_HIP_ARCH", "gfx942", 1);
    setenv("FAKE_HIP_DEVICES", "2", 1);
}

static void fill(uint64_t seed)
{
    tu_rng rng = {seed};
    tu_fill_attention(&rng, q, k, v, B, H, HKV, NQ, NK, D);
    tu_fill_normal(&rng, bias, H * NQ * NK, 2.0f);
}

static mxa_attention_desc make_desc(int causal, const mxa_tensor *bias_t)
{
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.bc = BC;
    desc.causal = causal;
    desc.bias = bias_t;
    return desc;
}

/* The reference of the current inputs into o_ref / l_ref. */
static void reference(const mxa_attention_desc *desc)
{
    mxa_tensor tq, tk, tv, to, tl;
    mxa_tensor_init(&tq, MXA_F32, B, H, NQ, D, q);
    mxa_tensor_init(&tk, MXA_F32, B, HKV, NK, D, k);
    mxa_tensor_init(&tv, MXA_F32, B, HKV, NK, D, v);
    mxa_tensor_init(&to, MXA_F32, B, H, NQ, D, o_ref);
    mxa_tensor_init(&tl, MXA_F32, B, H, NQ, 1, l_ref);
    if (mxa_reference_attention(desc, BC, &tq, &tk, &tv, &to, &tl, NULL)) fail_msg("%s", mxa_last_error_message());
}

static void expect_exact(const float *got, const float *want, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], 4) != 0) fail_msg("%s[%d]: %.9g vs reference %.9g", what, i, got[i], want[i]);
}

static void host_tensors(mxa_tensor *tq, mxa_tensor *tk, mxa_tensor *tv, mxa_tensor *to, mxa_tensor *tl)
{
    mxa_tensor_init(tq, MXA_F32, B, H, NQ, D, q);
    mxa_tensor_init(tk, MXA_F32, B, HKV, NK, D, k);
    mxa_tensor_init(tv, MXA_F32, B, HKV, NK, D, v);
    mxa_tensor_init(to, MXA_F32, B, H, NQ, D, o);
    mxa_tensor_init(tl, MXA_F32, B, H, NQ, 1, lse);
}

/* ---- asynchronous calls on mxa's own stream */

static void test_async(void **state)
{
    (void)state;
    emulate();
    fill(11);
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_event *ev = NULL;
    mxa_tensor tq, tk, tv, to, tl;
    host_tensors(&tq, &tk, &tv, &to, &tl);
    const mxa_attention_desc desc = make_desc(MXA_CAUSAL_BOTTOM_RIGHT, NULL);
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "hip:0", &dev), MXA_OK);
    memset(o, 0xff, sizeof o);
    assert_int_equal(mxa_attention_async(dev, &desc, &tq, &tk, &tv, &to, &tl, &ev), MXA_OK);
    assert_true(log_has("launch mxa_attention 2 2 1 64 args stream")); /* on mxa's stream, not run yet */
    assert_int_equal(log_count("event sync"), 0);
    mxa_attention_info info;
    assert_int_equal(mxa_event_wait(ev, &info), MXA_OK);
    assert_int_equal(log_count("event sync"), 1);
    assert_string_equal(info.variant, "hip-mfma-i8");
    assert_true(fabs(info.kernel_seconds - 0.25e-3) < 1e-9); /* the events' time, not the host's */
    assert_int_equal(mxa_event_wait(ev, NULL), MXA_OK);       /* twice is fine */
    mxa_event_destroy(ev);
    reference(&desc);
    expect_exact(o, o_ref, QN, "O");
    expect_exact(lse, l_ref, ROWS, "LSE");
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    assert_int_equal(log_count("malloc"), log_count("free"));
}

/* A later call reuses the scratch: it must complete the pending one (read its outputs back) first. */
static void test_async_then_call(void **state)
{
    (void)state;
    emulate();
    static float q2[QN], o2[QN], first_q[QN];
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_event *ev = NULL;
    mxa_tensor tq, tk, tv, to, tl, tq2, to2;
    host_tensors(&tq, &tk, &tv, &to, &tl);
    const mxa_attention_desc desc = make_desc(MXA_CAUSAL_NONE, NULL);
    fill(12);
    memcpy(first_q, q, sizeof q);
    tu_rng rng = {99};
    tu_fill_normal(&rng, q2, QN, 1.0f);
    mxa_tensor_init(&tq2, MXA_F32, B, H, NQ, D, q2);
    mxa_tensor_init(&to2, MXA_F32, B, H, NQ, D, o2);
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "hip:0", &dev), MXA_OK);
    assert_int_equal(mxa_attention_async(dev, &desc, &tq, &tk, &tv, &to, &tl, &ev), MXA_OK);
    assert_int_equal(mxa_attention(dev, &desc, &tq2, &tk, &tv, &to2, NULL, NULL), MXA_OK);
    assert_int_equal(mxa_event_wait(ev, NULL), MXA_OK);
    mxa_event_destroy(ev);
    reference(&desc);
    expect_exact(o, o_ref, QN, "O of the first call");
    expect_exact(lse, l_ref, ROWS, "LSE of the first call");
    memcpy(q, q2, sizeof q);
    reference(&desc);
    expect_exact(o2, o_ref, QN, "O of the second call");

    /* Closing the device completes a pending call: its outputs are there to wait for. */
    memcpy(q, first_q, sizeof q);
    memset(o, 0, sizeof o);
    assert_int_equal(mxa_attention_async(dev, &desc, &tq, &tk, &tv, &to, &tl, &ev), MXA_OK);
    mxa_device_close(dev);
    assert_int_equal(mxa_event_wait(ev, NULL), MXA_OK);
    mxa_event_destroy(ev);
    reference(&desc);
    expect_exact(o, o_ref, QN, "O completed by close");
    mxa_runtime_destroy(rt);
    assert_int_equal(log_count("malloc"), log_count("free"));
}

/* ---- mxa/mxa_hip.h */

static void test_device_create(void **state)
{
    (void)state;
    emulate();
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL, *cpu = NULL;
    mxa_device_info info;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_hip_device_create(rt, 1, &dev), MXA_OK);
    assert_int_equal(mxa_device_info_of(dev, &info), MXA_OK);
    assert_string_equal(info.id, "hip:1");
    assert_string_equal(info.backend, "hip");
    assert_string_equal(info.variant, "hip-mfma-i8");
    mxa_device_close(dev);
    assert_int_equal(mxa_hip_device_create(rt, 2, &dev), MXA_ERR_NOT_FOUND);
    assert_null(dev);
    assert_non_null(strstr(mxa_last_error_message(), "no HIP device 2"));
    assert_int_equal(mxa_hip_device_create(rt, -1, &dev), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_hip_device_create(NULL, 0, &dev), MXA_ERR_INVALID_ARGUMENT);
    setenv("FAKE_HIP_ARCH", "sm_90", 1);
    assert_int_equal(mxa_hip_device_create(rt, 0, &dev), MXA_ERR_UNSUPPORTED);
    assert_non_null(strstr(mxa_last_error_message(), "gcnArchName"));
    /* Entry points on a device of another backend. */
    static char mem[64];
    mxa_buffer *buf = NULL;
    assert_int_equal(mxa_device_open(rt, "cpu", &cpu), MXA_OK);
    assert_int_equal(mxa_hip_buffer_wrap(cpu, mem, sizeof mem, &buf), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "not a HIP device"));
    mxa_device_close(cpu);
    mxa_runtime_destroy(rt);
}

/* The application's memory and streams. */
typedef struct app {
    mxa_runtime *rt;
    mxa_device *dev;
    void *dq, *dk, *dv, *dout, *dlse, *dbias;
    mxa_buffer *bq, *bk, *bv, *bout, *blse, *bbias;
    hipStream_t s1, s2;
} app;

static void app_open(app *a)
{
    memset(a, 0, sizeof *a);
    assert_int_equal(mxa_runtime_create(NULL, &a->rt), MXA_OK);
    assert_int_equal(mxa_hip_device_create(a->rt, 0, &a->dev), MXA_OK);
    void **ptrs[6] = {&a->dq, &a->dk, &a->dv, &a->dout, &a->dlse, &a->dbias};
    mxa_buffer **bufs[6] = {&a->bq, &a->bk, &a->bv, &a->bout, &a->blse, &a->bbias};
    const size_t bytes[6] = {sizeof q, sizeof k, sizeof v, sizeof o, sizeof lse, sizeof bias};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(hip.malloc(ptrs[i], bytes[i]), 0);
        if (mxa_hip_buffer_wrap(a->dev, *ptrs[i], bytes[i], bufs[i])) fail_msg("wrap: %s", mxa_last_error_message());
    }
    assert_int_equal(hip.stream_create(&a->s1), 0);
    assert_int_equal(hip.stream_create(&a->s2), 0);
}

static void app_close(app *a)
{
    mxa_buffer *bufs[6] = {a->bq, a->bk, a->bv, a->bout, a->blse, a->bbias};
    void *ptrs[6] = {a->dq, a->dk, a->dv, a->dout, a->dlse, a->dbias};
    for (int i = 0; i < 6; i++) mxa_buffer_destroy(bufs[i]);
    mxa_device_close(a->dev);
    mxa_runtime_destroy(a->rt);
    /* mxa freed what it allocated and nothing of the application's */
    assert_int_equal(log_count("malloc") - 6, log_count("free"));
    for (int i = 0; i < 6; i++) assert_int_equal(hip.free(ptrs[i]), 0);
    hip.stream_destroy(a->s1);
    hip.stream_destroy(a->s2);
}

static void device_tensors(const app *a, mxa_tensor *tq, mxa_tensor *tk, mxa_tensor *tv, mxa_tensor *to,
                           mxa_tensor *tl)
{
    host_tensors(tq, tk, tv, to, tl);
    tq->data = tk->data = tv->data = to->data = tl->data = NULL;
    tq->buffer = a->bq, tk->buffer = a->bk, tv->buffer = a->bv, to->buffer = a->bout, tl->buffer = a->blse;
}

static void test_enqueue(void **state)
{
    (void)state;
    emulate();
    fill(21);
    app a;
    app_open(&a);
    mxa_tensor tq, tk, tv, to, tl, tb;
    device_tensors(&a, &tq, &tk, &tv, &to, &tl);
    assert_int_equal(mxa_buffer_upload(a.bq, 0, q, sizeof q), MXA_OK);
    assert_int_equal(mxa_buffer_upload(a.bk, 0, k, sizeof k), MXA_OK);
    assert_int_equal(mxa_buffer_upload(a.bv, 0, v, sizeof v), MXA_OK);
    assert_int_equal(mxa_buffer_upload(a.bbias, 0, bias, sizeof bias), MXA_OK);

    /* Stream order is the synchronization: nothing has run when the call returns. */
    mxa_attention_desc desc = make_desc(MXA_CAUSAL_BOTTOM_RIGHT, NULL);
    if (mxa_hip_attention_enqueue(a.dev, a.s1, &desc, &tq, &tk, &tv, &to, &tl))
        fail_msg("enqueue: %s", mxa_last_error_message());
    static const float zeros[QN];
    assert_memory_equal(a.dout, zeros, sizeof o); /* the double's device memory is host memory */
    assert_int_equal(hip.stream_sync(a.s1), 0);
    reference(&desc);
    expect_exact(a.dout, o_ref, QN, "O");
    expect_exact(a.dlse, l_ref, ROWS, "LSE");

    /* A second stream: ordered behind the first call (the scratch), f16 out, a device-buffer bias. */
    mxa_tensor_init(&tb, MXA_F32, 1, H, NQ, NK, NULL);
    tb.data = NULL, tb.buffer = a.bbias;
    desc = make_desc(MXA_CAUSAL_TOP_LEFT, &tb);
    to.dtype = MXA_F16;
    assert_int_equal(mxa_hip_attention_enqueue(a.dev, a.s2, &desc, &tq, &tk, &tv, &to, &tl), MXA_OK);
    assert_true(log_has("stream wait"));
    assert_true(log_has("-DMXA_EXTRAS=1 -DMXA_OUT=1")); /* the bias build, f16 out */
    assert_int_equal(hip.stream_sync(a.s2), 0);
    mxa_tensor hb;
    mxa_tensor_init(&hb, MXA_F32, 1, H, NQ, NK, bias);
    desc.bias = &hb;
    reference(&desc);
    memcpy(o16, a.dout, sizeof o16);
    for (int i = 0; i < QN; i++)
        if (o16[i] != mxa_f32_to_f16(o_ref[i])) fail_msg("O16[%d]: 0x%04x vs 0x%04x", i, o16[i], mxa_f32_to_f16(o_ref[i]));
    expect_exact(a.dlse, l_ref, ROWS, "LSE (top-left, bias)");

    /* A device-buffer mask and key lengths: the host array is read before the call returns. */
    static uint8_t mask[B * NQ * NK];
    for (int i = 0; i < B * NQ * NK; i++) mask[i] = (i * 7) % 5 != 0;
    void *dmask = NULL;
    mxa_buffer *bmask = NULL;
    assert_int_equal(hip.malloc(&dmask, sizeof mask), 0);
    assert_int_equal(mxa_hip_buffer_wrap(a.dev, dmask, sizeof mask, &bmask), MXA_OK);
    assert_int_equal(mxa_buffer_upload(bmask, 0, mask, sizeof mask), MXA_OK);
    mxa_tensor tmask, hmask;
    mxa_tensor_init(&hmask, MXA_BOOL, B, 1, NQ, NK, mask);
    tmask = hmask;
    tmask.data = NULL, tmask.buffer = bmask;
    int32_t lengths[B] = {45};
    desc = make_desc(MXA_CAUSAL_BOTTOM_RIGHT, NULL);
    desc.mask = &tmask;
    desc.key_lengths = lengths;
    to.dtype = MXA_F32;
    assert_int_equal(mxa_hip_attention_enqueue(a.dev, a.s1, &desc, &tq, &tk, &tv, &to, &tl), MXA_OK);
    lengths[0] = 7; /* after the call: must not reach the kernel */
    assert_int_equal(hip.stream_sync(a.s1), 0);
    lengths[0] = 45;
    desc.mask = &hmask;
    reference(&desc);
    expect_exact(a.dout, o_ref, QN, "O (mask buffer, key lengths)");
    expect_exact(a.dlse, l_ref, ROWS, "LSE (mask buffer, key lengths)");
    mxa_buffer_destroy(bmask);
    assert_int_equal(hip.free(dmask), 0);

    /* NULL is HIP's default stream. */
    memset(a.dout, 0, sizeof o);
    to.dtype = MXA_F32;
    desc = make_desc(MXA_CAUSAL_NONE, NULL);
    assert_int_equal(mxa_hip_attention_enqueue(a.dev, NULL, &desc, &tq, &tk, &tv, &to, NULL), MXA_OK);
    assert_int_equal(hip.stream_sync(NULL), 0);
    reference(&desc);
    expect_exact(a.dout, o_ref, QN, "O (default stream)");

    /* The same device takes mxa_attention with host tensors, on mxa's own stream. */
    mxa_tensor hq, hk, hv, ho, hl;
    host_tensors(&hq, &hk, &hv, &ho, &hl);
    assert_int_equal(mxa_attention(a.dev, &desc, &hq, &hk, &hv, &ho, &hl, NULL), MXA_OK);
    expect_exact(o, o_ref, QN, "O (mxa_attention on the created device)");
    app_close(&a);
}

/* A K/V prepared on the application's device (from its own buffers), enqueued with k = v = NULL
 * (first on a fresh device): bit for bit the enqueue on the float32 K and V on another stream. */
static void test_enqueue_kv(void **state)
{
    (void)state;
    emulate();
    fill(41);
    app a;
    app_open(&a);
    mxa_tensor tq, tk, tv, to, tl;
    device_tensors(&a, &tq, &tk, &tv, &to, &tl);
    assert_int_equal(mxa_buffer_upload(a.bq, 0, q, sizeof q), MXA_OK);
    assert_int_equal(mxa_buffer_upload(a.bk, 0, k, sizeof k), MXA_OK);
    assert_int_equal(mxa_buffer_upload(a.bv, 0, v, sizeof v), MXA_OK);
    int32_t lengths[B] = {45};
    static const mxa_recipe recipes[2] = {MXA_RECIPE_MXATTENTION, MXA_RECIPE_OCP_DIRECT};
    for (int r = 0; r < 2; r++) { /* with key lengths, then without */
        mxa_attention_desc desc;
        mxa_attention_desc_init(&desc, recipes[r]);
        desc.bc = BC;
        desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;
        desc.key_lengths = r == 0 ? lengths : NULL;
        mxa_kv *kv = NULL;
        if (mxa_prepare_kv(a.dev, &desc, &tk, &tv, &kv)) fail_msg("mxa_prepare_kv: %s", mxa_last_error_message());
        desc.kv = kv;
        if (mxa_hip_attention_enqueue(a.dev, a.s2, &desc, &tq, NULL, NULL, &to, &tl))
            fail_msg("enqueue on the prepared K/V: %s", mxa_last_error_message());
        assert_int_equal(hip.stream_sync(a.s2), 0);
        memcpy(o, a.dout, sizeof o);
        memcpy(lse, a.dlse, sizeof lse);
        mxa_kv_destroy(kv);
        desc.kv = NULL;
        assert_int_equal(mxa_hip_attention_enqueue(a.dev, a.s1, &desc, &tq, &tk, &tv, &to, &tl), MXA_OK);
        assert_int_equal(hip.stream_sync(a.s1), 0);
        expect_exact(o, a.dout, QN, "O (prepared K/V)");
        expect_exact(lse, a.dlse, ROWS, "LSE (prepared K/V)");
    }
    app_close(&a);
}

static void test_misuse(void **state)
{
    (void)state;
    emulate();
    fill(31);
    app a;
    app_open(&a);
    mxa_buffer *buf = NULL;
    static float host[64];
    assert_int_equal(mxa_hip_buffer_wrap(a.dev, host, sizeof host, &buf), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "is not device memory"));
    assert_null(buf);
    assert_int_equal(mxa_hip_buffer_wrap(a.dev, (char *)a.dq + 8, sizeof q, &buf), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "run past the end"));
    assert_int_equal(mxa_hip_buffer_wrap(a.dev, a.dq, 0, &buf), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_hip_buffer_wrap(a.dev, NULL, 16, &buf), MXA_ERR_INVALID_ARGUMENT);
    void *other = NULL;
    assert_int_equal(hip.set_device(1), 0);
    assert_int_equal(hip.malloc(&other, 256), 0);
    /* mxa gives the thread its device back: it is still on device 1 after a call on device 0 */
    assert_int_equal(mxa_hip_buffer_wrap(a.dev, other, 256, &buf), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "memory of HIP device 1, not of device 0"));
    assert_int_equal(mxa_buffer_upload(a.bq, 0, q, sizeof q), MXA_OK);
    int current = -1;
    assert_int_equal(hip.get_device(&current), 0);
    assert_int_equal(current, 1);
    assert_int_equal(hip.set_device(0), 0);

    mxa_tensor tq, tk, tv, to, tl, hq;
    device_tensors(&a, &tq, &tk, &tv, &to, &tl);
    mxa_tensor_init(&hq, MXA_F32, B, H, NQ, D, q);
    mxa_attention_desc desc = make_desc(MXA_CAUSAL_NONE, NULL);
    assert_int_equal(mxa_hip_attention_enqueue(a.dev, a.s1, &desc, &hq, &tk, &tv, &to, &tl), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "q is a host tensor"));
    assert_int_equal(log_count("launch"), 0);
    int not_a_stream;
    const mxa_status st = mxa_hip_attention_enqueue(a.dev, (hipStream_t)(void *)&not_a_stream, &desc, &tq, &tk, &tv, &to, &tl);
    assert_int_equal(st, MXA_ERR_BACKEND);
    assert_non_null(strstr(mxa_last_error_message(), "hipErrorInvalidHandle"));
    assert_int_equal(mxa_hip_attention_enqueue(a.dev, a.s1, NULL, &tq, &tk, &tv, &to, &tl), MXA_ERR_INVALID_ARGUMENT);
    /* hip takes float32 inputs only: a float16 q buffer is one clear error, and nothing launches */
    tq.dtype = MXA_F16;
    assert_int_equal(mxa_hip_attention_enqueue(a.dev, a.s1, &desc, &tq, &tk, &tv, &to, &tl), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "q: device-buffer tensors here must be float32"));
    assert_int_equal(log_count("launch"), 0);
    tq.dtype = MXA_F32;
    /* A wrap of another device's memory on that device is fine. */
    mxa_device *dev1 = NULL;
    assert_int_equal(mxa_hip_device_create(a.rt, 1, &dev1), MXA_OK);
    assert_int_equal(mxa_hip_buffer_wrap(dev1, other, 256, &buf), MXA_OK);
    /* ... and a tensor of it is refused on device 0 */
    tq.buffer = buf;
    assert_int_equal(mxa_hip_attention_enqueue(a.dev, a.s1, &desc, &tq, &tk, &tv, &to, &tl), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "another device"));
    /* ... and so is a K/V prepared on it */
    mxa_tensor hk, hv;
    mxa_tensor_init(&hk, MXA_F32, B, HKV, NK, D, k);
    mxa_tensor_init(&hv, MXA_F32, B, HKV, NK, D, v);
    mxa_kv *kv1 = NULL;
    assert_int_equal(mxa_prepare_kv(dev1, &desc, &hk, &hv, &kv1), MXA_OK);
    tq.buffer = a.bq;
    desc.kv = kv1;
    assert_int_equal(mxa_hip_attention_enqueue(a.dev, a.s1, &desc, &tq, NULL, NULL, &to, &tl), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "prepared on another device"));
    mxa_kv_destroy(kv1);
    mxa_buffer_destroy(buf);
    mxa_device_close(dev1);
    assert_int_equal(hip.free(other), 0);
    app_close(&a);
}

static int setup(void **state)
{
    (void)state;
    if (fake_begin()) return -1;
    lib = dlopen(FAKE_HIP_EMU_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return -1;
    resolve("hipMalloc", &hip.malloc);
    resolve("hipFree", &hip.free);
    resolve("hipSetDevice", &hip.set_device);
    resolve("hipGetDevice", &hip.get_device);
    resolve("hipStreamCreate", &hip.stream_create);
    resolve("hipStreamDestroy", &hip.stream_destroy);
    resolve("hipStreamSynchronize", &hip.stream_sync);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dlclose(lib);
    fake_end();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_async),         cmocka_unit_test(test_async_then_call),
        cmocka_unit_test(test_device_create), cmocka_unit_test(test_enqueue),
        cmocka_unit_test(test_enqueue_kv),    cmocka_unit_test(test_misuse),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
