/* The runtime and device handles (internal). */
#ifndef MXA_RUNTIME_RUNTIME_INTERNAL_H
#define MXA_RUNTIME_RUNTIME_INTERNAL_H

#include <pthread.h>

#include "backend.h"

#define MXA_MAX_BACKENDS 4

typedef struct mxa_backend_slot {
    const mxa_backend_ops *ops; /* NULL when not built */
    mxa_backend_info info;
    mxa_probed_device devices[MXA_MAX_DEVICES_PER_BACKEND];
    int device_count;
} mxa_backend_slot;

struct mxa_runtime {
    mxa_backend_slot backends[MXA_MAX_BACKENDS];
    int backend_count;
};

struct mxa_device {
    mxa_runtime *rt;
    const mxa_backend_ops *ops;
    const mxa_probed_device *probed;
    void *impl;
    pthread_mutex_t lock; /* a device serialises its own queue */
};

struct mxa_buffer {
    mxa_device *dev;
    void *handle;
    size_t bytes;
};

#endif
