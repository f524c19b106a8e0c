/*
 * One runtime shared by threads: some threads share a device handle, others
 * open their own; all run attention at once. Results must equal the
 * single-threaded ones bit for bit. Run under ThreadSanitizer in CI.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#define THREADS 4
#define ROUNDS 3
enum { H = 2, NQ = 40, NK = 70, D = 64 };

typedef struct job {
    mxa_runtime *rt;
    mxa_device *shared; /* NULL: open a device of its own */
    float q[H * NQ * D], k[H * NK * D], v[H * NK * D];
    float expected[H * NQ * D], got[H * NQ * D];
    mxa_status status;
    int mismatches;
} job;

static mxa_status run_once(mxa_device *dev, job *j, float *out)
{
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    desc.causal = 1;
    mxa_tensor q = tu_tensor(j->q, 1, H, NQ, D), k = tu_tensor(j->k, 1, H, NK, D), v = tu_tensor(j->v, 1, H, NK, D),
               o = tu_tensor(out, 1, H, NQ, D);
    return mxa_attention(dev, &desc, &q, &k, &v, &o, NULL, NULL);
}

static void *worker(void *arg)
{
    job *j = arg;
    mxa_device *dev = j->shared;
    if (!dev && (j->status = mxa_device_open(j->rt, "cpu", &dev))) return NULL;
    for (int r = 0; r < ROUNDS && !j->status; r++) {
        j->status = run_once(dev, j, j->got);
        if (!j->status && memcmp(j->got, j->expected, sizeof j->got) != 0) j->mismatches++;
    }
    if (!j->shared) mxa_device_close(dev);
    return NULL;
}

static void test_concurrent_attention(void **state)
{
    (void)state;
    mxa_runtime *rt;
    mxa_device *shared;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "cpu", &shared), MXA_OK);
    job *jobs = calloc(THREADS, sizeof *jobs);
    for (int t = 0; t < THREADS; t++) {
        tu_rng rng = {(uint64_t)(1000 + t)};
        tu_fill_attention(&rng, jobs[t].q, jobs[t].k, jobs[t].v, 1, H, H, NQ, NK, D);
        jobs[t].rt = rt;
        jobs[t].shared = (t % 2 == 0) ? shared : NULL;
        assert_int_equal(run_once(shared, &jobs[t], jobs[t].expected), MXA_OK);
    }
    pthread_t tid[THREADS];
    for (int t = 0; t < THREADS; t++) assert_int_equal(pthread_create(&tid[t], NULL, worker, &jobs[t]), 0);
    for (int t = 0; t < THREADS; t++) pthread_join(tid[t], NULL);
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(jobs[t].status, MXA_OK);
        assert_int_equal(jobs[t].mismatches, 0);
    }
    free(jobs);
    mxa_device_close(shared);
    mxa_runtime_destroy(rt);
}

/* The first use of a runtime from several threads at once: each thread lists
 * backends and devices (which probes them lazily), opens the CPU, makes and
 * frees buffers, and closes; the probe runs once and every thread sees the
 * same list. GPU backends are disabled: their drivers are not built for TSan. */
static void *first_use_worker(void *arg)
{
    mxa_runtime *rt = arg;
    int n = 0, nb = 0;
    mxa_backend_info info;
    mxa_device *dev = NULL;
    mxa_buffer *buf = NULL;
    if (mxa_device_count(rt, &n) || n != 1 || mxa_backend_count(rt, &nb)) return (void *)1;
    for (int i = 0; i < nb; i++)
        if (mxa_backend_get_info(rt, i, &info)) return (void *)2;
    for (int r = 0; r < ROUNDS; r++) {
        if (mxa_device_open(rt, "cpu", &dev) || mxa_buffer_create(dev, 4096, &buf)) return (void *)3;
        mxa_buffer_destroy(buf);
        mxa_device_close(dev);
    }
    return NULL;
}

static void test_concurrent_first_use(void **state)
{
    (void)state;
    mxa_runtime_options opts = {"all"};
    mxa_runtime *rt;
    assert_int_equal(mxa_runtime_create(&opts, &rt), MXA_OK);
    pthread_t tid[THREADS];
    for (int t = 0; t < THREADS; t++) assert_int_equal(pthread_create(&tid[t], NULL, first_use_worker, rt), 0);
    for (int t = 0; t < THREADS; t++) {
        void *rc = NULL;
        pthread_join(tid[t], &rc);
        assert_null(rc);
    }
    mxa_runtime_destroy(rt);
}

/* Error messages are per thread: one thread's failure does not leak into another's. */
static void *fail_worker(void *arg)
{
    mxa_rule r;
    mxa_rule_parse("bogus", &r);
    *(int *)arg = strstr(mxa_last_error_message(), "bogus") != NULL;
    return NULL;
}

static void test_thread_local_errors(void **state)
{
    (void)state;
    mxa_rule r;
    assert_int_equal(mxa_rule_parse("uos", &r), MXA_OK);
    mxa_rule_parse("q=99", &r);
    int seen = 0;
    pthread_t t;
    pthread_create(&t, NULL, fail_worker, &seen);
    pthread_join(t, NULL);
    assert_true(seen);
    assert_non_null(strstr(mxa_last_error_message(), "q=99"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_attention),
        cmocka_unit_test(test_concurrent_first_use),
        cmocka_unit_test(test_thread_local_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
