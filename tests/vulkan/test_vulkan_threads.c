/*
 * Vulkan devices opened, used and closed from several threads at once (issue
 * 15, defect 9: volk's instance-level pointers were reloaded under the
 * loader's lock for every instance while other threads called through them).
 * Meant for ThreadSanitizer (CI runs it in the tsan build); without a Vulkan
 * device (lavapipe in CI) it is skipped.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#define THREADS 4
#define ROUNDS 2

typedef struct job {
    mxa_runtime *rt;
    pthread_barrier_t *start;
    float x[4 * 64];
    uint8_t codes[4 * 32], scales[4 * 2], expected_codes[4 * 32];
    mxa_status status;
    char error[512]; /* the failing thread's own mxa_last_error_message */
} job;

static void *worker(void *arg)
{
    job *j = arg;
    pthread_barrier_wait(j->start); /* every thread opens its device at the same moment */
    for (int r = 0; r < ROUNDS && !j->status; r++) {
        mxa_device *dev = NULL;
        mxa_tensor t;
        mxa_tensor_init(&t, MXA_F32, 1, 1, 4, 64, j->x);
        if ((j->status = mxa_device_open(j->rt, "vulkan:0", &dev))) break;
        j->status = mxa_quantize(dev, &t, mxa_rule_uos(), j->codes, j->scales);
        if (!j->status && memcmp(j->codes, j->expected_codes, sizeof j->codes) != 0) j->status = MXA_ERR_BACKEND;
        mxa_device_close(dev);
    }
    if (j->status) snprintf(j->error, sizeof j->error, "%s", mxa_last_error_message());
    return NULL;
}

static void test_open_from_threads(void **state)
{
    (void)state;
    static job jobs[THREADS];
    mxa_runtime *rt = NULL;
    mxa_device *probe_dev = NULL;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    if (mxa_device_open(rt, "vulkan:0", &probe_dev) != MXA_OK) {
        mxa_runtime_destroy(rt);
        skip();
    }
    mxa_device_close(probe_dev);
    mxa_runtime_destroy(rt);

    /* a fresh runtime: the threads race to the first instance of this one too */
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    mxa_device *cpu = NULL;
    assert_int_equal(mxa_device_open(rt, "cpu", &cpu), MXA_OK);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    pthread_t tid[THREADS];
    for (int i = 0; i < THREADS; i++) {
        tu_rng r = {(uint64_t)i + 11};
        jobs[i] = (job){.rt = rt, .start = &start};
        tu_fill_normal(&r, jobs[i].x, 4 * 64, 1.0f);
        mxa_tensor t;
        mxa_tensor_init(&t, MXA_F32, 1, 1, 4, 64, jobs[i].x);
        assert_int_equal(mxa_quantize(cpu, &t, mxa_rule_uos(), jobs[i].expected_codes, jobs[i].scales), MXA_OK);
    }
    for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&tid[i], NULL, worker, &jobs[i]), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++)
        if (jobs[i].status) fail_msg("thread %d: %s (%s)", i, mxa_status_string(jobs[i].status), jobs[i].error);
    mxa_device_close(cpu);
    mxa_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_open_from_threads)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
