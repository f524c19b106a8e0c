/*
 * mxa inside the test's own OpenCL context (include/mxa/mxa_opencl.h), as an application
 * would use it: its own context, queue and cl_mem buffers (OpenCL through the ICD loader,
 * dlopen'ed here like mxa does), inputs written without blocking, attention enqueued after
 * their events, the read-back waiting on `done`. Results are bit for bit the synchronous
 * mxa_attention on the same device (same kernels) and within the conformance NMSE of the
 * reference; f16/bf16 outputs; the wait list is honoured (a user event gates the inputs);
 * an enqueue on a pre-quantized K/V (mxa_prepare_kv) is bit for bit one on the float32 K/V;
 * calls on two queues of one device share its scratch safely; the application may drop its
 * references after handing them over; misuse gets one clear error and enqueues nothing.
 */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mxa/mxa_opencl.h"
#include "runtime/tensor.h"
#include "testutil.h"

/* The OpenCL entry points this test uses, from the ICD loader. */
static struct {
    cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
    cl_int (*GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
    cl_context (*CreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                void(CL_CALLBACK *)(const char *, const void *, size_t, void *), void *, cl_int *);
    cl_int (*ReleaseContext)(cl_context);
    cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties, cl_int *);
    cl_int (*ReleaseCommandQueue)(cl_command_queue);
    cl_mem (*CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
    cl_int (*ReleaseMemObject)(cl_mem);
    cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, cl_uint,
                                 const cl_event *, cl_event *);
    cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint, const cl_event *,
                                cl_event *);
    cl_int (*WaitForEvents)(cl_uint, const cl_event *);
    cl_int (*ReleaseEvent)(cl_event);
    cl_event (*CreateUserEvent)(cl_context, cl_int *);
    cl_int (*SetUserEventStatus)(cl_event, cl_int);
    cl_int (*GetEventInfo)(cl_event, cl_event_info, size_t, void *, size_t *);
    cl_int (*Finish)(cl_command_queue);
} cl;

static cl_platform_id platform;
static cl_device_id device;

enum { B = 2, H = 2, HKV = 1, NQ = 48, NK = 80, D = 64 };
#define QN (B * H * NQ * D)
#define KN (B * HKV * NK * D)
#define ROWS (B * H * NQ)
#define SIDE (B * H * NQ * NK)

/* Loads OpenCL and picks the first device of the first platform that has one; 0 if none. */
static int load_opencl(void)
{
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 0;
#define SYM(f) memcpy(&cl.f, &(void *){dlsym(lib, "cl" #f)}, sizeof(void *))
    SYM(GetPlatformIDs); SYM(GetDeviceIDs); SYM(CreateContext); SYM(ReleaseContext); SYM(CreateCommandQueue);
    SYM(ReleaseCommandQueue); SYM(CreateBuffer); SYM(ReleaseMemObject); SYM(EnqueueWriteBuffer);
    SYM(EnqueueReadBuffer); SYM(WaitForEvents); SYM(ReleaseEvent); SYM(CreateUserEvent); SYM(SetUserEventStatus);
    SYM(GetEventInfo); SYM(Finish);
#undef SYM
    cl_platform_id plats[8];
    cl_uint n = 0;
    if (!cl.GetPlatformIDs || cl.GetPlatformIDs(8, plats, &n) != CL_SUCCESS) return 0;
    for (cl_uint p = 0; p < n && p < 8; p++) {
        cl_uint nd = 0;
        if (cl.GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 1, &device, &nd) == CL_SUCCESS && nd > 0) {
            platform = plats[p];
            return 1;
        }
    }
    return 0;
}

static cl_context new_context(void)
{
    cl_int err = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    cl_context ctx = cl.CreateContext(props, 1, &device, NULL, NULL, &err);
    assert_non_null(ctx);
    return ctx;
}

static cl_mem new_mem(cl_context ctx, size_t bytes)
{
    cl_int err = CL_SUCCESS;
    cl_mem m = cl.CreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    assert_non_null(m);
    return m;
}

typedef struct fixture {
    mxa_runtime *rt;
    mxa_device *dev; /* adopted */
    cl_context ctx;
    cl_command_queue queue;
    float q[QN], k[KN], v[KN], bias[SIDE];
    uint8_t mask[SIDE];
} fixture;

static int setup(void **state)
{
    if (!load_opencl()) {
        printf("# no OpenCL device: skipped\n");
        *state = NULL;
        return 0;
    }
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->ctx = new_context();
    cl_int err = CL_SUCCESS;
    f->queue = cl.CreateCommandQueue(f->ctx, device, 0, &err);
    assert_non_null(f->queue);
    assert_int_equal(mxa_runtime_create(NULL, &f->rt), MXA_OK);
    mxa_status st = mxa_opencl_device_create(f->rt, f->ctx, device, &f->dev);
    if (st) printf("# %s\n", mxa_last_error_message());
    assert_int_equal(st, MXA_OK);
    tu_rng r = {21};
    tu_fill_attention(&r, f->q, f->k, f->v, B, H, HKV, NQ, NK, D);
    tu_fill_normal(&r, f->bias, SIDE, 1.5f);
    for (int i = 0; i < SIDE; i++) f->mask[i] = tu_uniform(&r) < 0.85;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f) return 0;
    mxa_device_close(f->dev);
    mxa_runtime_destroy(f->rt);
    cl.ReleaseCommandQueue(f->queue);
    cl.ReleaseContext(f->ctx);
    free(f);
    return 0;
}

#define NEED_OPENCL(f)                   \
    fixture *f = *state;                 \
    if (!f) skip();

static mxa_buffer *wrap(mxa_device *dev, cl_mem m, size_t offset, size_t size)
{
    mxa_buffer *b = NULL;
    mxa_status st = mxa_opencl_buffer_wrap(dev, m, offset, size, &b);
    if (st) printf("# wrap: %s\n", mxa_last_error_message());
    assert_int_equal(st, MXA_OK);
    return b;
}

static mxa_tensor buffer_tensor(mxa_dtype dtype, mxa_buffer *b, int64_t n0, int64_t n1, int64_t n2, int64_t n3)
{
    mxa_tensor t;
    mxa_tensor_init(&t, dtype, n0, n1, n2, n3, NULL);
    t.buffer = b;
    return t;
}

/* The synchronous call on the same device with host tensors: what the enqueue must equal. */
static void run_sync(fixture *f, const mxa_attention_desc *desc, float *o, float *lse)
{
    mxa_tensor tq = tu_tensor(f->q, B, H, NQ, D), tk = tu_tensor(f->k, B, HKV, NK, D), tv = tu_tensor(f->v, B, HKV, NK, D),
               to = tu_tensor(o, B, H, NQ, D), tl = tu_tensor(lse, B, H, NQ, 1), tb, tm;
    mxa_tensor_init(&tb, MXA_F32, 1, H, NQ, NK, f->bias);
    mxa_tensor_init(&tm, MXA_BOOL, B, 1, NQ, NK, f->mask);
    mxa_attention_desc d = *desc;
    if (d.bias) d.bias = &tb;
    if (d.mask) d.mask = &tm;
    mxa_status st = mxa_attention(f->dev, &d, &tq, &tk, &tv, &to, &tl, NULL);
    if (st) printf("# sync: %s\n", mxa_last_error_message());
    assert_int_equal(st, MXA_OK);
    float ref[QN];
    mxa_tensor tr = tu_tensor(ref, B, H, NQ, D);
    assert_int_equal(mxa_reference_attention(&d, 64, &tq, &tk, &tv, &tr, NULL, NULL), MXA_OK);
    const double e = tu_nmse(o, ref, QN);
    printf("# sync vs reference: nmse %.3g\n", e);
    assert_true(e <= 1e-5);
}

static cl_int event_status(cl_event ev)
{
    cl_int s = 0;
    assert_int_equal(cl.GetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL), CL_SUCCESS);
    return s;
}

/* The event chain: writes gated by a user event, enqueue after the writes, read after done. */
static void test_enqueue_event_chain(void **state)
{
    NEED_OPENCL(f);
    const size_t out_off = 64; /* o lives at an offset of its cl_mem */
    cl_mem mq = new_mem(f->ctx, sizeof f->q), mk = new_mem(f->ctx, sizeof f->k), mv = new_mem(f->ctx, sizeof f->v),
           mb = new_mem(f->ctx, (size_t)H * NQ * NK * 4), mm = new_mem(f->ctx, (size_t)B * NQ * NK),
           mo = new_mem(f->ctx, out_off + QN * 4), ml = new_mem(f->ctx, ROWS * 4);
    mxa_buffer *bq = wrap(f->dev, mq, 0, sizeof f->q), *bk = wrap(f->dev, mk, 0, sizeof f->k),
               *bv = wrap(f->dev, mv, 0, sizeof f->v), *bb = wrap(f->dev, mb, 0, (size_t)H * NQ * NK * 4),
               *bm = wrap(f->dev, mm, 0, (size_t)B * NQ * NK), *bo = wrap(f->dev, mo, out_off, QN * 4),
               *bl = wrap(f->dev, ml, 0, ROWS * 4);
    /* the application's references may go: mxa holds its own */
    cl_mem mems[7] = {mq, mk, mv, mb, mm, mo, ml};
    cl_int err = CL_SUCCESS;
    cl_event gate = cl.CreateUserEvent(f->ctx, &err), writes[5];
    assert_non_null(gate);
    const void *src[5] = {f->q, f->k, f->v, f->bias, f->mask};
    const size_t bytes[5] = {sizeof f->q, sizeof f->k, sizeof f->v, (size_t)H * NQ * NK * 4, (size_t)B * NQ * NK};
    for (int i = 0; i < 5; i++)
        assert_int_equal(cl.EnqueueWriteBuffer(f->queue, mems[i], CL_FALSE, 0, bytes[i], src[i], 1, &gate, &writes[i]),
                         CL_SUCCESS);
    for (int i = 0; i < 7; i++) cl.ReleaseMemObject(mems[i]);

    mxa_tensor tq = buffer_tensor(MXA_F32, bq, B, H, NQ, D), tk = buffer_tensor(MXA_F32, bk, B, HKV, NK, D),
               tv = buffer_tensor(MXA_F32, bv, B, HKV, NK, D), tb = buffer_tensor(MXA_F32, bb, 1, H, NQ, NK),
               tm = buffer_tensor(MXA_BOOL, bm, B, 1, NQ, NK), to = buffer_tensor(MXA_F32, bo, B, H, NQ, D),
               tl = buffer_tensor(MXA_F32, bl, B, H, NQ, 1);
    const int32_t lengths[B] = {61, NK};
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.bias = &tb;
    desc.mask = &tm;
    desc.key_lengths = lengths;
    desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;
    desc.bc = 64;
    /* the call builds its kernels while enqueueing, then returns with the gate still closed */
    cl_event done = NULL;
    mxa_status st = mxa_opencl_attention_enqueue(f->dev, f->queue, 5, writes, &done, &desc, &tq, &tk, &tv, &to, &tl);
    if (st) printf("# enqueue: %s\n", mxa_last_error_message());
    assert_int_equal(st, MXA_OK);
    assert_non_null(done);
    assert_true(event_status(done) != CL_COMPLETE); /* the gate holds the inputs back */
    for (int i = 0; i < 5; i++) assert_true(event_status(writes[i]) != CL_COMPLETE);
    assert_int_equal(cl.SetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    static float o[QN], lse[ROWS], o_sync[QN], lse_sync[ROWS];
    cl_event reads[2];
    assert_int_equal(cl.EnqueueReadBuffer(f->queue, mo, CL_FALSE, out_off, QN * 4, o, 1, &done, &reads[0]), CL_SUCCESS);
    assert_int_equal(cl.EnqueueReadBuffer(f->queue, ml, CL_FALSE, 0, ROWS * 4, lse, 1, &done, &reads[1]), CL_SUCCESS);
    assert_int_equal(cl.WaitForEvents(2, reads), CL_SUCCESS);
    assert_int_equal(event_status(done), CL_COMPLETE);
    run_sync(f, &desc, o_sync, lse_sync);
    assert_memory_equal(o, o_sync, sizeof o);
    assert_memory_equal(lse, lse_sync, sizeof lse);

    /* 16-bit outputs into the same cl_mem: the synchronous f32 result rounded once */
    static uint16_t o16[QN];
    for (int t = 0; t < 2; t++) {
        mxa_tensor t16 = buffer_tensor(t ? MXA_BF16 : MXA_F16, bo, B, H, NQ, D);
        cl_event d16 = NULL, r16 = NULL;
        assert_int_equal(mxa_opencl_attention_enqueue(f->dev, f->queue, 0, NULL, &d16, &desc, &tq, &tk, &tv, &t16, NULL),
                         MXA_OK);
        assert_int_equal(cl.EnqueueReadBuffer(f->queue, mo, CL_FALSE, out_off, QN * 2, o16, 1, &d16, &r16), CL_SUCCESS);
        assert_int_equal(cl.WaitForEvents(1, &r16), CL_SUCCESS);
        for (int i = 0; i < QN; i++)
            assert_int_equal(o16[i], t ? mxa_f32_to_bf16(o_sync[i]) : mxa_f32_to_f16(o_sync[i]));
        cl.ReleaseEvent(d16);
        cl.ReleaseEvent(r16);
    }
    /* the wrapped buffers work with the synchronous API too */
    float back[QN];
    assert_int_equal(mxa_opencl_attention_enqueue(f->dev, f->queue, 0, NULL, NULL, &desc, &tq, &tk, &tv, &to, NULL),
                     MXA_OK);
    assert_int_equal(mxa_buffer_download(bo, 0, back, sizeof back), MXA_OK); /* waits for the enqueued call */
    assert_memory_equal(back, o_sync, sizeof back);

    for (int i = 0; i < 5; i++) cl.ReleaseEvent(writes[i]);
    cl.ReleaseEvent(reads[0]);
    cl.ReleaseEvent(reads[1]);
    cl.ReleaseEvent(done);
    cl.ReleaseEvent(gate);
    mxa_buffer *all[7] = {bq, bk, bv, bb, bm, bo, bl};
    for (int i = 0; i < 7; i++) mxa_buffer_destroy(all[i]);
}

/* Pre-quantized K/V, prepared from the application's cl_mem: an enqueue on them (k = v = NULL)
 * after a gated write of q, read after `done`, is bit for bit the enqueue on the float32 K/V. */
static void test_enqueue_prepared_kv(void **state)
{
    NEED_OPENCL(f);
    cl_mem mq = new_mem(f->ctx, sizeof f->q), mk = new_mem(f->ctx, sizeof f->k), mv = new_mem(f->ctx, sizeof f->v),
           mo = new_mem(f->ctx, QN * 4), ml = new_mem(f->ctx, ROWS * 4);
    mxa_buffer *bq = wrap(f->dev, mq, 0, sizeof f->q), *bk = wrap(f->dev, mk, 0, sizeof f->k),
               *bv = wrap(f->dev, mv, 0, sizeof f->v), *bo = wrap(f->dev, mo, 0, QN * 4), *bl = wrap(f->dev, ml, 0, ROWS * 4);
    assert_int_equal(cl.EnqueueWriteBuffer(f->queue, mk, CL_TRUE, 0, sizeof f->k, f->k, 0, NULL, NULL), CL_SUCCESS);
    assert_int_equal(cl.EnqueueWriteBuffer(f->queue, mv, CL_TRUE, 0, sizeof f->v, f->v, 0, NULL, NULL), CL_SUCCESS);
    mxa_tensor tq = buffer_tensor(MXA_F32, bq, B, H, NQ, D), tk = buffer_tensor(MXA_F32, bk, B, HKV, NK, D),
               tv = buffer_tensor(MXA_F32, bv, B, HKV, NK, D), to = buffer_tensor(MXA_F32, bo, B, H, NQ, D),
               tl = buffer_tensor(MXA_F32, bl, B, H, NQ, 1);
    static const int32_t lengths[B] = {61, 17};
    for (int c = 0; c < 3; c++) {
        mxa_attention_desc desc;
        mxa_attention_desc_init(&desc, c == 1 ? MXA_RECIPE_OCP_DIRECT : MXA_RECIPE_MXATTENTION);
        desc.causal = c == 0 ? MXA_CAUSAL_BOTTOM_RIGHT : c == 2 ? MXA_CAUSAL_TOP_LEFT : MXA_CAUSAL_NONE;
        if (c == 2) desc.key_lengths = lengths;
        desc.bc = 64; /* the reference's */
        mxa_kv *kv = NULL;
        mxa_status st = mxa_prepare_kv(f->dev, &desc, &tk, &tv, &kv);
        if (st) printf("# prepare: %s\n", mxa_last_error_message());
        assert_int_equal(st, MXA_OK);
        static float o[2][QN], lse[2][ROWS];
        for (int prepared = 0; prepared < 2; prepared++) {
            mxa_attention_desc with = desc;
            if (prepared) with.kv = kv;
            cl_int err = CL_SUCCESS;
            cl_event gate = cl.CreateUserEvent(f->ctx, &err), write = NULL, done = NULL, reads[2];
            assert_non_null(gate);
            assert_int_equal(cl.EnqueueWriteBuffer(f->queue, mq, CL_FALSE, 0, sizeof f->q, f->q, 1, &gate, &write),
                             CL_SUCCESS);
            st = mxa_opencl_attention_enqueue(f->dev, f->queue, 1, &write, &done, &with, &tq, prepared ? NULL : &tk,
                                              prepared ? NULL : &tv, &to, &tl);
            if (st) printf("# enqueue: %s\n", mxa_last_error_message());
            assert_int_equal(st, MXA_OK);
            assert_true(event_status(done) != CL_COMPLETE); /* the gate holds q back */
            assert_int_equal(cl.SetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
            memset(o[prepared], 0xCD, sizeof o[prepared]);
            assert_int_equal(cl.EnqueueReadBuffer(f->queue, mo, CL_FALSE, 0, QN * 4, o[prepared], 1, &done, &reads[0]),
                             CL_SUCCESS);
            assert_int_equal(cl.EnqueueReadBuffer(f->queue, ml, CL_FALSE, 0, ROWS * 4, lse[prepared], 1, &done, &reads[1]),
                             CL_SUCCESS);
            assert_int_equal(cl.WaitForEvents(2, reads), CL_SUCCESS);
            cl_event all[5] = {gate, write, done, reads[0], reads[1]};
            for (int i = 0; i < 5; i++) cl.ReleaseEvent(all[i]);
        }
        printf("# enqueue on prepared K/V, case %d: %s\n", c,
               memcmp(o[0], o[1], sizeof o[0]) || memcmp(lse[0], lse[1], sizeof lse[0]) ? "differs" : "bit for bit");
        assert_memory_equal(o[0], o[1], sizeof o[0]);
        assert_memory_equal(lse[0], lse[1], sizeof lse[0]);
        static float ref[QN];
        mxa_tensor hq = tu_tensor(f->q, B, H, NQ, D), hk = tu_tensor(f->k, B, HKV, NK, D), hv = tu_tensor(f->v, B, HKV, NK, D),
                   hr = tu_tensor(ref, B, H, NQ, D);
        assert_int_equal(mxa_reference_attention(&desc, 64, &hq, &hk, &hv, &hr, NULL, NULL), MXA_OK);
        assert_true(tu_nmse(o[1], ref, QN) <= 1e-5);
        mxa_kv_destroy(kv);
    }
    mxa_buffer *bufs[5] = {bq, bk, bv, bo, bl};
    cl_mem mems[5] = {mq, mk, mv, mo, ml};
    for (int i = 0; i < 5; i++) {
        mxa_buffer_destroy(bufs[i]);
        cl.ReleaseMemObject(mems[i]);
    }
}

/* Two queues of one device: the second call waits for the first (shared scratch) by itself. */
static void test_two_queues(void **state)
{
    NEED_OPENCL(f);
    cl_int err = CL_SUCCESS;
    cl_command_queue q2 = cl.CreateCommandQueue(f->ctx, device, 0, &err);
    assert_non_null(q2);
    static float q2data[QN], o_a[QN], o_b[QN], ref_a[QN], ref_b[QN], lse[ROWS];
    for (int i = 0; i < QN; i++) q2data[i] = -f->q[(i + 7) % QN];
    cl_mem m[6];
    const size_t sizes[6] = {sizeof f->q, sizeof f->q, sizeof f->k, sizeof f->v, QN * 4, QN * 4};
    mxa_buffer *b[6];
    for (int i = 0; i < 6; i++) {
        m[i] = new_mem(f->ctx, sizes[i]);
        b[i] = wrap(f->dev, m[i], 0, sizes[i]);
    }
    assert_int_equal(mxa_buffer_upload(b[0], 0, f->q, sizeof f->q), MXA_OK);
    assert_int_equal(mxa_buffer_upload(b[1], 0, q2data, sizeof q2data), MXA_OK);
    assert_int_equal(mxa_buffer_upload(b[2], 0, f->k, sizeof f->k), MXA_OK);
    assert_int_equal(mxa_buffer_upload(b[3], 0, f->v, sizeof f->v), MXA_OK);
    mxa_tensor qa = buffer_tensor(MXA_F32, b[0], B, H, NQ, D), qb = buffer_tensor(MXA_F32, b[1], B, H, NQ, D),
               tk = buffer_tensor(MXA_F32, b[2], B, HKV, NK, D), tv = buffer_tensor(MXA_F32, b[3], B, HKV, NK, D),
               oa = buffer_tensor(MXA_F32, b[4], B, H, NQ, D), ob = buffer_tensor(MXA_F32, b[5], B, H, NQ, D);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    cl_event da = NULL, db = NULL;
    assert_int_equal(mxa_opencl_attention_enqueue(f->dev, f->queue, 0, NULL, &da, &desc, &qa, &tk, &tv, &oa, NULL), MXA_OK);
    assert_int_equal(mxa_opencl_attention_enqueue(f->dev, q2, 0, NULL, &db, &desc, &qb, &tk, &tv, &ob, NULL), MXA_OK);
    assert_int_equal(cl.EnqueueReadBuffer(q2, m[5], CL_TRUE, 0, QN * 4, o_b, 1, &db, NULL), CL_SUCCESS);
    assert_int_equal(cl.EnqueueReadBuffer(f->queue, m[4], CL_TRUE, 0, QN * 4, o_a, 1, &da, NULL), CL_SUCCESS);
    mxa_tensor hq = tu_tensor(f->q, B, H, NQ, D), hq2 = tu_tensor(q2data, B, H, NQ, D),
               hk = tu_tensor(f->k, B, HKV, NK, D), hv = tu_tensor(f->v, B, HKV, NK, D), ha = tu_tensor(ref_a, B, H, NQ, D),
               hb = tu_tensor(ref_b, B, H, NQ, D), hl = tu_tensor(lse, B, H, NQ, 1);
    assert_int_equal(mxa_attention(f->dev, &desc, &hq, &hk, &hv, &ha, &hl, NULL), MXA_OK);
    assert_int_equal(mxa_attention(f->dev, &desc, &hq2, &hk, &hv, &hb, &hl, NULL), MXA_OK);
    assert_memory_equal(o_a, ref_a, sizeof o_a);
    assert_memory_equal(o_b, ref_b, sizeof o_b);
    cl.ReleaseEvent(da);
    cl.ReleaseEvent(db);
    for (int i = 0; i < 6; i++) {
        mxa_buffer_destroy(b[i]);
        cl.ReleaseMemObject(m[i]);
    }
    cl.ReleaseCommandQueue(q2);
}

#define EXPECT_ERROR(call, code, text)                                                   \
    do {                                                                                 \
        mxa_status st_ = (call);                                                         \
        printf("# %s -> %s\n", #call, mxa_last_error_message());                       \
        assert_int_equal(st_, code);                                                     \
        assert_non_null(strstr(mxa_last_error_message(), text));                         \
    } while (0)

/* Misuse: one clear error each, and nothing enqueued (done stays NULL). */
static void test_misuse(void **state)
{
    NEED_OPENCL(f);
    cl_context other = new_context();
    cl_int err = CL_SUCCESS;
    cl_command_queue other_queue = cl.CreateCommandQueue(other, device, 0, &err);
    assert_non_null(other_queue);
    cl_mem foreign = new_mem(other, QN * 4), mine = new_mem(f->ctx, QN * 4);
    mxa_buffer *buf = NULL;
    EXPECT_ERROR(mxa_opencl_buffer_wrap(f->dev, foreign, 0, QN * 4, &buf), MXA_ERR_INVALID_ARGUMENT, "another context");
    assert_null(buf);
    EXPECT_ERROR(mxa_opencl_buffer_wrap(f->dev, mine, 2, 16, &buf), MXA_ERR_INVALID_ARGUMENT, "multiple of 4");
    EXPECT_ERROR(mxa_opencl_buffer_wrap(f->dev, mine, 8, QN * 4, &buf), MXA_ERR_INVALID_ARGUMENT, "do not fit");
    EXPECT_ERROR(mxa_opencl_buffer_wrap(f->dev, mine, 0, 0, &buf), MXA_ERR_INVALID_ARGUMENT, "size is 0");

    /* mxa's own OpenCL device has its own context: the application's cl_mem is foreign there */
    mxa_device *own = NULL, *cpu = NULL;
    if (mxa_device_open(f->rt, "opencl:0", &own) == MXA_OK) {
        EXPECT_ERROR(mxa_opencl_buffer_wrap(own, mine, 0, QN * 4, &buf), MXA_ERR_INVALID_ARGUMENT, "another context");
    }
    assert_int_equal(mxa_device_open(f->rt, "cpu", &cpu), MXA_OK);
    EXPECT_ERROR(mxa_opencl_buffer_wrap(cpu, mine, 0, QN * 4, &buf), MXA_ERR_INVALID_ARGUMENT, "not an OpenCL device");

    float *host = calloc(QN, sizeof(float));
    assert_non_null(host);
    mxa_buffer *bq = wrap(f->dev, mine, 0, QN * 4), *bk = NULL, *bv = NULL, *bo = NULL;
    assert_int_equal(mxa_buffer_create(f->dev, KN * 4, &bk), MXA_OK);
    assert_int_equal(mxa_buffer_create(f->dev, KN * 4, &bv), MXA_OK);
    assert_int_equal(mxa_buffer_create(f->dev, QN * 4, &bo), MXA_OK);
    mxa_tensor tq = buffer_tensor(MXA_F32, bq, B, H, NQ, D), tk = buffer_tensor(MXA_F32, bk, B, HKV, NK, D),
               tv = buffer_tensor(MXA_F32, bv, B, HKV, NK, D), to = buffer_tensor(MXA_F32, bo, B, H, NQ, D),
               th = tu_tensor(host, B, H, NQ, D);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    cl_event done = (cl_event)(uintptr_t)1;
    EXPECT_ERROR(mxa_opencl_attention_enqueue(f->dev, other_queue, 0, NULL, &done, &desc, &tq, &tk, &tv, &to, NULL),
                 MXA_ERR_INVALID_ARGUMENT, "another context");
    assert_null(done);
    EXPECT_ERROR(mxa_opencl_attention_enqueue(f->dev, f->queue, 0, NULL, &done, &desc, &th, &tk, &tv, &to, NULL),
                 MXA_ERR_INVALID_ARGUMENT, "q is a host tensor");
    EXPECT_ERROR(mxa_opencl_attention_enqueue(f->dev, f->queue, 0, NULL, &done, &desc, &tq, &tk, &tv, &th, NULL),
                 MXA_ERR_INVALID_ARGUMENT, "out is a host tensor");
    EXPECT_ERROR(mxa_opencl_attention_enqueue(f->dev, f->queue, 1, NULL, &done, &desc, &tq, &tk, &tv, &to, NULL),
                 MXA_ERR_INVALID_ARGUMENT, "wait is NULL");
    EXPECT_ERROR(mxa_opencl_attention_enqueue(f->dev, NULL, 0, NULL, &done, &desc, &tq, &tk, &tv, &to, NULL),
                 MXA_ERR_INVALID_ARGUMENT, "queue is NULL");
    EXPECT_ERROR(mxa_opencl_attention_enqueue(cpu, f->queue, 0, NULL, &done, &desc, &tq, &tk, &tv, &to, NULL),
                 MXA_ERR_INVALID_ARGUMENT, "not an OpenCL device");
    cl_command_queue ooo = cl.CreateCommandQueue(f->ctx, device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    if (ooo) {
        EXPECT_ERROR(mxa_opencl_attention_enqueue(f->dev, ooo, 0, NULL, &done, &desc, &tq, &tk, &tv, &to, NULL),
                     MXA_ERR_INVALID_ARGUMENT, "out of order");
        cl.ReleaseCommandQueue(ooo);
    }
    if (own) { /* a buffer of another mxa device */
        mxa_buffer *theirs = NULL;
        assert_int_equal(mxa_buffer_create(own, KN * 4, &theirs), MXA_OK);
        mxa_tensor tt = buffer_tensor(MXA_F32, theirs, B, HKV, NK, D);
        EXPECT_ERROR(mxa_opencl_attention_enqueue(f->dev, f->queue, 0, NULL, &done, &desc, &tq, &tt, &tv, &to, NULL),
                     MXA_ERR_INVALID_ARGUMENT, "another device");
        mxa_buffer_destroy(theirs);
    }
    assert_null(done);
    EXPECT_ERROR(mxa_opencl_device_create(f->rt, NULL, device, &own), MXA_ERR_INVALID_ARGUMENT, "NULL");
    mxa_buffer_destroy(bq);
    mxa_buffer_destroy(bk);
    mxa_buffer_destroy(bv);
    mxa_buffer_destroy(bo);
    mxa_device_close(own);
    mxa_device_close(cpu);
    free(host);
    cl.ReleaseMemObject(foreign);
    cl.ReleaseMemObject(mine);
    cl.ReleaseCommandQueue(other_queue);
    cl.ReleaseContext(other);
}

/* The adopted device outlives the application's references, shows up as "opencl:adopted",
 * and closes with its runtime; mxa_attention_async runs on it too. */
static void test_lifetimes(void **state)
{
    NEED_OPENCL(f);
    cl_context ctx = new_context();
    mxa_device *dev = NULL;
    assert_int_equal(mxa_opencl_device_create(f->rt, ctx, device, &dev), MXA_OK);
    cl.ReleaseContext(ctx); /* mxa holds the context now */
    mxa_device_info info;
    assert_int_equal(mxa_device_info_of(dev, &info), MXA_OK);
    assert_string_equal(info.id, "opencl:adopted");
    assert_string_equal(info.backend, "opencl");
    printf("# adopted: %s (%s)\n", info.name, info.variant);
    static float o[QN], o_async[QN];
    mxa_tensor tq = tu_tensor(f->q, B, H, NQ, D), tk = tu_tensor(f->k, B, HKV, NK, D), tv = tu_tensor(f->v, B, HKV, NK, D),
               to = tu_tensor(o, B, H, NQ, D), ta = tu_tensor(o_async, B, H, NQ, D);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_OCP_DIRECT);
    desc.causal = MXA_CAUSAL_TOP_LEFT;
    assert_int_equal(mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, NULL), MXA_OK);
    mxa_event *ev = NULL;
    assert_int_equal(mxa_attention_async(dev, &desc, &tq, &tk, &tv, &ta, NULL, &ev), MXA_OK);
    assert_int_equal(mxa_event_wait(ev, NULL), MXA_OK);
    mxa_event_destroy(ev);
    assert_memory_equal(o, o_async, sizeof o);
    mxa_buffer *left = NULL; /* a buffer left alive: closing the runtime frees it */
    assert_int_equal(mxa_buffer_create(dev, 64, &left), MXA_OK);
    mxa_runtime *rt2 = NULL;
    assert_int_equal(mxa_runtime_create(NULL, &rt2), MXA_OK);
    mxa_device *dev2 = NULL;
    cl_context ctx2 = new_context();
    assert_int_equal(mxa_opencl_device_create(rt2, ctx2, device, &dev2), MXA_OK);
    cl.ReleaseContext(ctx2);
    mxa_runtime_destroy(rt2); /* closes dev2 (and releases ctx2 for good) */
    mxa_device_close(dev);
    mxa_buffer_destroy(left);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_enqueue_event_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enqueue_prepared_kv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_queues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_misuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lifetimes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
