/*
 * The worker pool: workers sleep on a condition variable until a job's
 * generation number changes, take items from an atomic counter, and report
 * back under the mutex, which also publishes their writes to the caller.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "../../runtime/status.h"
#include "cpu_threads.h"

struct cpu_pool {
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    pthread_t *workers;
    int threads, started;
    uint64_t generation;
    int stop, running;
    cpu_task fn;
    void *ctx;
    int64_t items;
    atomic_llong next;
};

typedef struct worker_arg {
    cpu_pool *pool;
    int id;
} worker_arg;

static void drain(cpu_pool *p, cpu_task fn, void *ctx, int64_t items, int id)
{
    for (;;) {
        const long long i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= items) break;
        fn(ctx, i, id);
    }
}

static void *worker_main(void *arg)
{
    worker_arg *w = arg;
    cpu_pool *p = w->pool;
    const int id = w->id;
    free(w);
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->generation == seen && !p->stop) pthread_cond_wait(&p->start, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        cpu_task fn = p->fn;
        void *ctx = p->ctx;
        const int64_t items = p->items;
        pthread_mutex_unlock(&p->mu);
        drain(p, fn, ctx, items, id);
        pthread_mutex_lock(&p->mu);
        if (--p->running == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

mxa_status cpu_pool_create(int threads, cpu_pool **out)
{
    mxa_status st = MXA_OK;
    *out = NULL;
    cpu_pool *p = calloc(1, sizeof *p);
    if (!p) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "cpu: out of memory creating the thread pool");
    p->threads = threads < 1 ? 1 : threads;
    atomic_init(&p->next, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    if (p->threads > 1 && !(p->workers = calloc((size_t)p->threads - 1, sizeof *p->workers))) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "cpu: out of memory creating the thread pool");
        goto out;
    }
    for (int i = 1; i < p->threads; i++) {
        worker_arg *w = malloc(sizeof *w);
        if (!w) {
            st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "cpu: out of memory creating the thread pool");
            goto out;
        }
        w->pool = p;
        w->id = i;
        int rc = pthread_create(&p->workers[i - 1], NULL, worker_main, w);
        if (rc) {
            free(w);
            st = mxa_fail(MXA_ERR_BACKEND, "cpu: pthread_create failed (%d) for worker %d", rc, i);
            goto out;
        }
        p->started++;
    }
out:
    if (st) {
        cpu_pool_destroy(p);
        return st;
    }
    *out = p;
    return MXA_OK;
}

void cpu_pool_destroy(cpu_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->workers);
    free(p);
}

int cpu_pool_size(const cpu_pool *p)
{
    return p->started + 1;
}

void cpu_pool_run(cpu_pool *p, int64_t items, cpu_task fn, void *ctx)
{
    if (items <= 0) return;
    if (p->started == 0 || items == 1) {
        for (int64_t i = 0; i < items; i++) fn(ctx, i, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->items = items;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    p->running = p->started;
    p->generation++;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    drain(p, fn, ctx, items, 0);
    pthread_mutex_lock(&p->mu);
    while (p->running > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
