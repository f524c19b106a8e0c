/* The runtime: backend registry, probing, device listing and opening. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "log.h"
#include "runtime_internal.h"
#include "status.h"

typedef struct backend_entry {
    const char *name;
    const mxa_backend_ops *ops;
} backend_entry;

/* Every backend this project knows, built or not, best first for "auto" ties. */
static const backend_entry all_backends[MXA_MAX_BACKENDS] = {
#ifdef MXA_HAVE_HIP
    {"hip", &mxa_hip_backend},
#else
    {"hip", NULL},
#endif
#ifdef MXA_HAVE_VULKAN
    {"vulkan", &mxa_vulkan_backend},
#else
    {"vulkan", NULL},
#endif
#ifdef MXA_HAVE_OPENCL
    {"opencl", &mxa_opencl_backend},
#else
    {"opencl", NULL},
#endif
    {"cpu", &mxa_cpu_backend},
};

static void probe_backend(mxa_backend_slot *slot, const char *name, const char *disable)
{
    mxa_backend_info *info = &slot->info;
    snprintf(info->name, sizeof info->name, "%s", name);
    info->built = slot->ops != NULL;
    if (!slot->ops) {
        snprintf(info->reason, sizeof info->reason, "not built into this library (configure with MXA_WITH_%s=ON and its dependencies)",
                 strcmp(name, "vulkan") == 0 ? "VULKAN" : strcmp(name, "opencl") == 0 ? "OPENCL" : "HIP");
        return;
    }
    if (mxa_list_contains(disable, name)) {
        snprintf(info->reason, sizeof info->reason, "disabled by MXA_DISABLE");
        return;
    }
    int count = 0;
    mxa_status st = slot->ops->probe(slot->devices, MXA_MAX_DEVICES_PER_BACKEND, &count, info->reason,
                                     sizeof info->reason);
    if (st != MXA_OK) {
        snprintf(info->reason, sizeof info->reason, "probe failed: %s", mxa_last_error_message());
        count = 0;
    }
    slot->device_count = count;
    info->device_count = count;
    info->present = count > 0;
    for (int i = 0; i < count; i++) {
        mxa_device_info *d = &slot->devices[i].info;
        snprintf(d->backend, sizeof d->backend, "%s", name);
        d->index = i;
        if (strcmp(name, "cpu") == 0) snprintf(d->id, sizeof d->id, "cpu");
        else snprintf(d->id, sizeof d->id, "%s:%d", name, i);
    }
    MXA_LOG_I("backend %s: %s", name, info->present ? "present" : info->reason);
}

mxa_status mxa_runtime_create(const mxa_runtime_options *opts, mxa_runtime **out)
{
    if (!out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_runtime_create: out is NULL");
    *out = NULL;
    mxa_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_runtime_create: out of memory");
    const char *disable = (opts && opts->disable) ? opts->disable : mxa_env_string("MXA_DISABLE");
    if (mxa_list_contains(disable, "cpu"))
        MXA_LOG_W("MXA_DISABLE lists cpu: the CPU backend cannot be disabled");
    for (int i = 0; i < MXA_MAX_BACKENDS; i++) {
        mxa_backend_slot *slot = &rt->backends[i];
        slot->ops = all_backends[i].ops;
        probe_backend(slot, all_backends[i].name,
                      strcmp(all_backends[i].name, "cpu") == 0 ? NULL : disable);
    }
    rt->backend_count = MXA_MAX_BACKENDS;
    mxa_clear_error();
    *out = rt;
    return MXA_OK;
}

void mxa_runtime_destroy(mxa_runtime *rt)
{
    if (!rt) return;
    for (int i = 0; i < rt->backend_count; i++) {
        mxa_backend_slot *slot = &rt->backends[i];
        if (slot->ops && slot->ops->release) slot->ops->release(slot->devices, slot->device_count);
    }
    free(rt);
}

mxa_status mxa_backend_count(const mxa_runtime *rt, int *count)
{
    if (!rt || !count) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_backend_count: NULL argument");
    *count = rt->backend_count;
    return MXA_OK;
}

mxa_status mxa_backend_get_info(const mxa_runtime *rt, int index, mxa_backend_info *info)
{
    if (!rt || !info) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_backend_get_info: NULL argument");
    if (index < 0 || index >= rt->backend_count)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_backend_get_info: index %d is outside 0..%d", index,
                        rt->backend_count - 1);
    *info = rt->backends[index].info;
    return MXA_OK;
}

/* The probed device at flat index `index` over all backends, or NULL. */
static const mxa_probed_device *device_at(const mxa_runtime *rt, int index, const mxa_backend_slot **slot_out)
{
    for (int b = 0; b < rt->backend_count; b++) {
        const mxa_backend_slot *slot = &rt->backends[b];
        if (index < slot->device_count) {
            if (slot_out) *slot_out = slot;
            return &slot->devices[index];
        }
        index -= slot->device_count;
    }
    return NULL;
}

mxa_status mxa_device_count(const mxa_runtime *rt, int *count)
{
    if (!rt || !count) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_device_count: NULL argument");
    int n = 0;
    for (int b = 0; b < rt->backend_count; b++) n += rt->backends[b].device_count;
    *count = n;
    return MXA_OK;
}

mxa_status mxa_device_get_info(const mxa_runtime *rt, int index, mxa_device_info *info)
{
    if (!rt || !info) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_device_get_info: NULL argument");
    const mxa_probed_device *d = index >= 0 ? device_at(rt, index, NULL) : NULL;
    if (!d) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_device_get_info: no device %d", index);
    *info = d->info;
    return MXA_OK;
}

/* Resolves an id ("auto", "cpu", "vulkan", "opencl:1") to a probed device. */
static mxa_status find_device(const mxa_runtime *rt, const char *id, const mxa_probed_device **out,
                              const mxa_backend_slot **slot_out)
{
    if (strcmp(id, "auto") == 0) {
        const char *env = mxa_env_string("MXA_DEVICE");
        if (env && strcmp(env, "auto") != 0) return find_device(rt, env, out, slot_out);
        const mxa_probed_device *best = NULL;
        for (int b = 0; b < rt->backend_count; b++)
            for (int i = 0; i < rt->backends[b].device_count; i++) {
                const mxa_probed_device *d = &rt->backends[b].devices[i];
                if (!best || d->info.score > best->info.score) {
                    best = d;
                    *slot_out = &rt->backends[b];
                }
            }
        if (!best) return mxa_fail(MXA_ERR_NOT_FOUND, "no device is present");
        *out = best;
        return MXA_OK;
    }
    char name[32];
    int index = 0;
    const char *colon = strchr(id, ':');
    size_t len = colon ? (size_t)(colon - id) : strlen(id);
    if (len == 0 || len >= sizeof name) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "bad device id '%s'", id);
    memcpy(name, id, len);
    name[len] = '\0';
    if (colon) {
        char *end;
        long v = strtol(colon + 1, &end, 10);
        if (*end || end == colon + 1 || v < 0 || v >= MXA_MAX_DEVICES_PER_BACKEND)
            return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "bad device index in '%s' (expected e.g. vulkan:0)", id);
        index = (int)v;
    }
    for (int b = 0; b < rt->backend_count; b++) {
        const mxa_backend_slot *slot = &rt->backends[b];
        if (strcmp(slot->info.name, name) != 0) continue;
        if (!slot->info.present)
            return mxa_fail(MXA_ERR_NOT_FOUND, "backend %s is absent: %s", name, slot->info.reason);
        if (index >= slot->device_count)
            return mxa_fail(MXA_ERR_NOT_FOUND, "backend %s has %d device(s); there is no %s", name,
                            slot->device_count, id);
        *out = &slot->devices[index];
        *slot_out = slot;
        return MXA_OK;
    }
    return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "unknown backend '%s' in device id '%s' (expected auto, cpu, vulkan, opencl or hip)",
                    name, id);
}

mxa_status mxa_device_open(mxa_runtime *rt, const char *id, mxa_device **out)
{
    if (!rt || !out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_device_open: NULL argument");
    *out = NULL;
    const mxa_probed_device *probed = NULL;
    const mxa_backend_slot *slot = NULL;
    mxa_status st = find_device(rt, id ? id : "auto", &probed, &slot);
    if (st) return st;
    mxa_device *dev = calloc(1, sizeof *dev);
    if (!dev) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_device_open: out of memory");
    dev->rt = rt;
    dev->ops = slot->ops;
    dev->probed = probed;
    if ((st = slot->ops->open(probed, &dev->impl))) {
        free(dev);
        return st;
    }
    pthread_mutex_init(&dev->lock, NULL);
    *out = dev;
    return MXA_OK;
}

void mxa_device_close(mxa_device *dev)
{
    if (!dev) return;
    dev->ops->close(dev->impl);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
}

mxa_status mxa_device_info_of(const mxa_device *dev, mxa_device_info *info)
{
    if (!dev || !info) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_device_info_of: NULL argument");
    *info = dev->probed->info;
    return MXA_OK;
}
