/*
 * The public API's contract on bad input: every function returns a status
 * with a one-line message, never crashes, and leaves outputs untouched.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

typedef struct fixture {
    mxa_runtime *rt;
    mxa_device *dev;
    float q[2 * 4 * 8 * 64], k[2 * 2 * 8 * 64], v[2 * 2 * 8 * 64], o[2 * 4 * 8 * 64], lse[2 * 4 * 8];
    mxa_tensor tq, tk, tv, to, tl;
    mxa_attention_desc desc;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || mxa_runtime_create(NULL, &f->rt) || mxa_device_open(f->rt, "cpu", &f->dev)) return -1;
    tu_rng rng = {1};
    tu_fill_attention(&rng, f->q, f->k, f->v, 2, 4, 2, 8, 8, 64);
    f->tq = tu_tensor(f->q, 2, 4, 8, 64);
    f->tk = tu_tensor(f->k, 2, 2, 8, 64);
    f->tv = tu_tensor(f->v, 2, 2, 8, 64);
    f->to = tu_tensor(f->o, 2, 4, 8, 64);
    f->tl = tu_tensor(f->lse, 2, 4, 8, 1);
    mxa_attention_desc_init(&f->desc, MXA_RECIPE_MXATTENTION);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    mxa_device_close(f->dev);
    mxa_runtime_destroy(f->rt);
    free(f);
    return 0;
}

/* Expects `call` to fail with `status`, a message, and o/lse untouched. */
#define EXPECT_FAIL(f, status, call)                                                    \
    do {                                                                                \
        memset((f)->o, 0x5a, sizeof (f)->o);                                            \
        memset((f)->lse, 0x5a, sizeof (f)->lse);                                        \
        assert_int_equal((call), (status));                                             \
        assert_true(strlen(mxa_last_error_message()) > 0);                              \
        assert_null(strchr(mxa_last_error_message(), '\n'));                            \
        for (size_t i_ = 0; i_ < sizeof (f)->o; i_++) assert_int_equal(((unsigned char *)(f)->o)[i_], 0x5a); \
        for (size_t i_ = 0; i_ < sizeof (f)->lse; i_++) assert_int_equal(((unsigned char *)(f)->lse)[i_], 0x5a); \
    } while (0)

static mxa_status attn(fixture *f)
{
    return mxa_attention(f->dev, &f->desc, &f->tq, &f->tk, &f->tv, &f->to, &f->tl, NULL);
}

static void test_good_call(void **state)
{
    fixture *f = *state;
    mxa_attention_info info;
    assert_int_equal(mxa_attention(f->dev, &f->desc, &f->tq, &f->tk, &f->tv, &f->to, &f->tl, &info), MXA_OK);
    assert_string_equal(mxa_last_error_message(), "");
}

static void test_attention_bad_arguments(void **state)
{
    fixture *f = *state;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, mxa_attention(NULL, &f->desc, &f->tq, &f->tk, &f->tv, &f->to, NULL, NULL));
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, mxa_attention(f->dev, NULL, &f->tq, &f->tk, &f->tv, &f->to, NULL, NULL));
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, mxa_attention(f->dev, &f->desc, NULL, &f->tk, &f->tv, &f->to, NULL, NULL));
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, mxa_attention(f->dev, &f->desc, &f->tq, &f->tk, &f->tv, NULL, NULL, NULL));

    mxa_tensor saved = f->tq;
    f->tq.dtype = (mxa_dtype)7;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->tq = saved;
    f->tq.shape[2] = 0;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->tq = saved;
    f->tq.strides[1] = -5;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->tq = saved;
    f->tq.data = NULL;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->tq = saved;

    saved = f->tk; /* kv heads must divide query heads */
    f->tk.shape[1] = 3;
    f->tv.shape[1] = 3;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->tk = saved;
    f->tv = saved, f->tv.data = f->v;
    f->tv.shape[2] = 7; /* k and v token counts differ */
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->tv.shape[2] = 8;
    f->to.shape[2] = 7;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->to.shape[2] = 8;
    f->tl.shape[3] = 2;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->tl.shape[3] = 1;
    f->tl.dtype = MXA_F16;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->tl.dtype = MXA_F32;
    f->tk.shape[0] = 1;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->tk.shape[0] = 2;

    mxa_attention_desc d = f->desc;
    f->desc.bc = 48;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->desc = d;
    f->desc.scale = -1.0f;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->desc.scale = NAN;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->desc = d;
    f->desc.rule.q = 9.0f;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->desc = d;
    f->desc.quantize = 0x80;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->desc = d;
    f->desc.placement = (mxa_placement)5;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, attn(f));
    f->desc = d;
}

static void test_unsupported_head_sizes(void **state)
{
    fixture *f = *state;
    /* D = 48 is not a multiple of 32; D = 96 has no Hadamard; D = 320 is too large */
    static float big[2 * 4 * 8 * 320];
    const int64_t ds[] = {48, 96, 320};
    for (int i = 0; i < 3; i++) {
        mxa_tensor q = tu_tensor(big, 1, 1, 2, ds[i]), k = q, v = q, o = tu_tensor(f->o, 1, 1, 2, ds[i]);
        memset(f->o, 0x5a, sizeof f->o);
        assert_int_equal(mxa_attention(f->dev, &f->desc, &q, &k, &v, &o, NULL, NULL), MXA_ERR_UNSUPPORTED);
        assert_non_null(strstr(mxa_last_error_message(), "D="));
    }
    /* D = 96 works without the rotation */
    mxa_attention_desc d = f->desc;
    d.hadamard = 0;
    mxa_tensor q = tu_tensor(big, 1, 1, 2, 96), o = tu_tensor(f->o, 1, 1, 2, 96);
    assert_int_equal(mxa_attention(f->dev, &d, &q, &q, &q, &o, NULL, NULL), MXA_OK);
}

static void test_non_finite_inputs(void **state)
{
    fixture *f = *state;
    const float bad[] = {NAN, INFINITY, -INFINITY, 1e30f};
    for (int i = 0; i < 4; i++) {
        float keep = f->v[77];
        f->v[77] = bad[i];
        EXPECT_FAIL(f, MXA_ERR_NON_FINITE, attn(f));
        assert_non_null(strstr(mxa_last_error_message(), "v:"));
        f->v[77] = keep;
    }
    /* propagation when asked: NaN in v reaches the output rows that use it */
    f->v[0] = NAN;
    f->desc.allow_non_finite = 1;
    assert_int_equal(attn(f), MXA_OK);
    assert_true(isnan(f->o[0]));
    f->desc.allow_non_finite = 0;
    f->v[0] = 0.5f;
}

static void test_reference_bad_arguments(void **state)
{
    fixture *f = *state;
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, mxa_reference_attention(&f->desc, 0, &f->tq, &f->tk, &f->tv, &f->to, NULL, NULL));
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, mxa_reference_attention(&f->desc, 33, &f->tq, &f->tk, &f->tv, &f->to, NULL, NULL));
    EXPECT_FAIL(f, MXA_ERR_INVALID_ARGUMENT, mxa_reference_attention(NULL, 64, &f->tq, &f->tk, &f->tv, &f->to, NULL, NULL));
    f->q[3] = NAN;
    EXPECT_FAIL(f, MXA_ERR_NON_FINITE, mxa_reference_attention(&f->desc, 64, &f->tq, &f->tk, &f->tv, &f->to, &f->tl, NULL));
    f->q[3] = 0.0f;
}

static void test_runtime_and_devices(void **state)
{
    fixture *f = *state;
    int n = 0;
    mxa_device *dev = NULL;
    assert_int_equal(mxa_runtime_create(NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_device_count(NULL, &n), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_device_count(f->rt, &n), MXA_OK);
    assert_true(n >= 1);
    mxa_device_info info;
    assert_int_equal(mxa_device_get_info(f->rt, n, &info), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_device_get_info(f->rt, -1, &info), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_backend_get_info(f->rt, 99, NULL), MXA_ERR_INVALID_ARGUMENT);
    int nb = 0, cpu_seen = 0;
    assert_int_equal(mxa_backend_count(f->rt, &nb), MXA_OK);
    for (int i = 0; i < nb; i++) {
        mxa_backend_info bi;
        assert_int_equal(mxa_backend_get_info(f->rt, i, &bi), MXA_OK);
        if (strcmp(bi.name, "cpu") == 0) cpu_seen = bi.present;
        else if (!bi.present) assert_true(strlen(bi.reason) > 0); /* absent says why */
    }
    assert_true(cpu_seen);
    const char *bad_ids[] = {"gpu", "cpu:x", "vulkan:99", ":1", "opencl:-1", ""};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        assert_int_not_equal(mxa_device_open(f->rt, bad_ids[i], &dev), MXA_OK);
        assert_null(dev);
        assert_true(strlen(mxa_last_error_message()) > 0);
    }
    assert_int_equal(mxa_device_open(f->rt, "auto", &dev), MXA_OK);
    assert_int_equal(mxa_device_info_of(dev, &info), MXA_OK);
    assert_true(strlen(info.id) > 0 && info.default_bc % 32 == 0);
    mxa_device_close(dev);
    mxa_device_close(NULL);
    mxa_runtime_destroy(NULL);
    /* MXA_DEVICE picks the device for "auto"; a bad value is an error */
    setenv("MXA_DEVICE", "cpu", 1);
    assert_int_equal(mxa_device_open(f->rt, "auto", &dev), MXA_OK);
    mxa_device_close(dev);
    setenv("MXA_DEVICE", "nonsense", 1);
    assert_int_not_equal(mxa_device_open(f->rt, "auto", &dev), MXA_OK);
    unsetenv("MXA_DEVICE");
    /* the CPU backend cannot be disabled; others can */
    mxa_runtime *rt2;
    mxa_runtime_options opts = {"vulkan,opencl,hip,cpu"};
    assert_int_equal(mxa_runtime_create(&opts, &rt2), MXA_OK);
    assert_int_equal(mxa_device_count(rt2, &n), MXA_OK);
    assert_int_equal(n, 1);
    mxa_runtime_destroy(rt2);
}

static void test_buffers(void **state)
{
    fixture *f = *state;
    mxa_buffer *buf = NULL;
    char data[64] = "hello", back[64];
    assert_int_equal(mxa_buffer_create(f->dev, 0, &buf), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_buffer_create(NULL, 64, &buf), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_buffer_create(f->dev, 64, &buf), MXA_OK);
    assert_int_equal(mxa_buffer_upload(buf, 60, data, 8), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_buffer_upload(buf, SIZE_MAX, data, 8), MXA_ERR_INVALID_ARGUMENT);
    /* an end past SIZE_MAX is named by offset and size, not as a wrapped-around range ("[8, 3)") */
    assert_int_equal(mxa_buffer_download(buf, 8, back, SIZE_MAX - 4), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "bytes at offset 8 do not fit the 64-byte buffer"));
    assert_int_equal(mxa_buffer_download(buf, 0, NULL, 8), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_buffer_upload(buf, 8, data, 6), MXA_OK);
    assert_int_equal(mxa_buffer_download(buf, 8, back, 6), MXA_OK);
    assert_string_equal(back, "hello");
    mxa_buffer_destroy(buf);
    mxa_buffer_destroy(NULL);

    /* attention with device-buffer tensors equals host tensors */
    size_t qn = sizeof f->q, kn = sizeof f->k;
    mxa_buffer *bq, *bk, *bv, *bo;
    assert_int_equal(mxa_buffer_create(f->dev, qn, &bq), MXA_OK);
    assert_int_equal(mxa_buffer_create(f->dev, kn, &bk), MXA_OK);
    assert_int_equal(mxa_buffer_create(f->dev, kn, &bv), MXA_OK);
    assert_int_equal(mxa_buffer_create(f->dev, qn, &bo), MXA_OK);
    mxa_buffer_upload(bq, 0, f->q, qn);
    mxa_buffer_upload(bk, 0, f->k, kn);
    mxa_buffer_upload(bv, 0, f->v, kn);
    mxa_tensor q = f->tq, k = f->tk, v = f->tv, o = f->to;
    q.data = k.data = v.data = o.data = NULL;
    q.buffer = bq; k.buffer = bk; v.buffer = bv; o.buffer = bo;
    assert_int_equal(mxa_attention(f->dev, &f->desc, &q, &k, &v, &o, NULL, NULL), MXA_OK);
    float *got = malloc(qn);
    mxa_buffer_download(bo, 0, got, qn);
    assert_int_equal(mxa_attention(f->dev, &f->desc, &f->tq, &f->tk, &f->tv, &f->to, NULL, NULL), MXA_OK);
    assert_memory_equal(got, f->o, qn);
    q.offset = 4; /* does not fit its buffer any more */
    assert_int_equal(mxa_attention(f->dev, &f->desc, &q, &k, &v, &o, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "do not fit"));
    q.offset = 2; /* misaligned: said so, not "do not fit" */
    assert_int_equal(mxa_attention(f->dev, &f->desc, &q, &k, &v, &o, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "offset 2 is not a multiple of 4"));
    q.offset = 0;
    mxa_buffer *small;
    assert_int_equal(mxa_buffer_create(f->dev, qn - 4, &small), MXA_OK);
    o.buffer = small; /* an output buffer one float too small */
    assert_int_equal(mxa_attention(f->dev, &f->desc, &q, &k, &v, &o, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "out:"));
    o.buffer = bo;
    mxa_buffer_destroy(small);
    q.dtype = MXA_BOOL; /* a float dtype only (test_input_half: the 16-bit ones in device buffers) */
    assert_int_equal(mxa_attention(f->dev, &f->desc, &q, &k, &v, &o, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "float tensors"));
    free(got);
    mxa_buffer_destroy(bq);
    mxa_buffer_destroy(bk);
    mxa_buffer_destroy(bv);
    mxa_buffer_destroy(bo);
}

static void test_quantize_api(void **state)
{
    fixture *f = *state;
    uint8_t codes[2 * 4 * 8 * 2 * 16], scales[2 * 4 * 8 * 2];
    assert_int_equal(mxa_quantize(f->dev, &f->tq, mxa_rule_uos(), codes, scales), MXA_OK);
    assert_int_equal(mxa_quantize(NULL, &f->tq, mxa_rule_uos(), codes, scales), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_quantize(f->dev, NULL, mxa_rule_uos(), codes, scales), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_quantize(f->dev, &f->tq, mxa_rule_uos(), NULL, scales), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_quantize(f->dev, &f->tq, (mxa_rule){MXA_RULE_CEIL, 5.0f}, codes, scales),
                     MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_quantize(f->dev, &f->tq, (mxa_rule){(mxa_rule_kind)9, 7.0f}, codes, scales),
                     MXA_ERR_INVALID_ARGUMENT);
    /* a tail: D = 40 gives two blocks per row, the second zero-padded */
    float x[40];
    for (int i = 0; i < 40; i++) x[i] = (float)(i - 20);
    mxa_tensor t = tu_tensor(x, 1, 1, 1, 40);
    uint8_t c2[32], s2[2];
    assert_int_equal(mxa_quantize(f->dev, &t, mxa_rule_ocp(), c2, s2), MXA_OK);
    for (int i = 20; i < 32; i++) assert_int_equal(c2[i], 0); /* padding codes */
    float y[40];
    assert_int_equal(mxa_dequantize(c2, s2, 1, 40, y), MXA_OK);
    /* block 0: M = 20, OCP e = 2, -20/4 = -5 is a tie -> -4; block 1: M = 19, 19/4 -> 4 */
    assert_true(y[0] == -16.0f && y[39] == 16.0f && y[33] == 12.0f);
}

static void test_names_and_misc(void **state)
{
    (void)state;
    mxa_recipe r;
    mxa_attention_desc d;
    assert_int_equal(mxa_recipe_parse("ocp-direct", &r), MXA_OK);
    assert_int_equal(r, MXA_RECIPE_OCP_DIRECT);
    assert_string_equal(mxa_recipe_name(MXA_RECIPE_MXATTENTION), "mxattention");
    assert_int_equal(mxa_recipe_parse("fp16", &r), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_attention_desc_init(NULL, MXA_RECIPE_FP32), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_attention_desc_init(&d, (mxa_recipe)9), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_attention_desc_init(&d, MXA_RECIPE_OCP_DIRECT), MXA_OK);
    assert_true(d.quantize == MXA_QUANT_ALL && d.placement == MXA_PLACEMENT_DIRECT && !d.hadamard);
    assert_string_equal(mxa_status_string(MXA_ERR_NON_FINITE), "MXA_ERR_NON_FINITE");
    assert_string_equal(mxa_status_string((mxa_status)1234), "MXA_ERR_UNKNOWN");
    assert_string_equal(mxa_version_string(), "0.1.0");
    assert_int_equal(mxa_dtype_size(MXA_BF16), 2);
    assert_int_equal(mxa_dtype_size((mxa_dtype)9), 0);
    assert_int_equal(mxa_tensor_init(NULL, MXA_F32, 1, 1, 1, 1, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_log_set_level((mxa_log_level)9), MXA_ERR_INVALID_ARGUMENT);
}

static int log_lines;
static void count_log(mxa_log_level level, const char *msg, void *user)
{
    (void)level;
    (void)msg;
    *(int *)user += 1;
}

static void test_logging(void **state)
{
    (void)state;
    assert_int_equal(mxa_log_set_callback(count_log, &log_lines), MXA_OK);
    assert_int_equal(mxa_log_set_level(MXA_LOG_DEBUG), MXA_OK);
    mxa_runtime *rt;
    int n = 0;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_count(rt, &n), MXA_OK); /* probes, logging each backend at info */
    mxa_runtime_destroy(rt);
    assert_true(log_lines > 0);
    int before = log_lines;
    assert_int_equal(mxa_log_set_level(MXA_LOG_ERROR), MXA_OK);
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_count(rt, &n), MXA_OK);
    mxa_runtime_destroy(rt);
    assert_int_equal(log_lines, before);
    mxa_log_set_callback(NULL, NULL);
    mxa_log_set_level(MXA_LOG_WARN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_good_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attention_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_head_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_non_finite_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reference_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runtime_and_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_buffers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quantize_api, setup, teardown),
        cmocka_unit_test(test_names_and_misc),
        cmocka_unit_test(test_logging),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
