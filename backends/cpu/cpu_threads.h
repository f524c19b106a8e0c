/* A per-device pool of worker threads that share out the items of a job. */
#ifndef MXA_CPU_THREADS_H
#define MXA_CPU_THREADS_H

#include <stdint.h>

#include "mxa/mxa.h"

typedef struct cpu_pool cpu_pool;

/* Runs item `item` of a job on worker `worker` (0 = the calling thread). */
typedef void (*cpu_task)(void *ctx, int64_t item, int worker);

/* Starts threads - 1 workers (the caller of cpu_pool_run is the last one). */
mxa_status cpu_pool_create(int threads, cpu_pool **out);

/* Stops and joins the workers. Safe on NULL. */
void cpu_pool_destroy(cpu_pool *pool);

/* Number of threads that run a job, the caller included. */
int cpu_pool_size(const cpu_pool *pool);

/* Runs fn on items [0, items) over all threads and returns when every item
 * is done. Items are handed out one at a time, so uneven items balance.
 * One job at a time per pool (the device lock guarantees it). */
void cpu_pool_run(cpu_pool *pool, int64_t items, cpu_task fn, void *ctx);

#endif
