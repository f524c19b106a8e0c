/* The runtime: backend registry, probing, device listing and opening. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "handles.h"
#include "log.h"
#include "runtime_internal.h"
#include "speed.h"
#include "status.h"
#include "text.h"

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

/* Every GPU backend's name, for MXA_DISABLE's checks. */
static int known_gpu_backend(const char *name, size_t len)
{
    for (int i = 0; i < MXA_MAX_BACKENDS; i++)
        if (strcmp(all_backends[i].name, "cpu") != 0 && strlen(all_backends[i].name) == len &&
            strncmp(all_backends[i].name, name, len) == 0)
            return 1;
    return 0;
}

/* Warns once per process about names in MXA_DISABLE that are no backend. */
static void check_disable_list(const char *list)
{
    for (const char *p = list; p && *p;) {
        while (*p == ',' || *p == ' ') p++;
        const char *start = p;
        while (*p && *p != ',') p++;
        size_t len = (size_t)(p - start);
        while (len && start[len - 1] == ' ') len--;
        if (!len || (len == 3 && strncmp(start, "all", 3) == 0) || (len == 3 && strncmp(start, "cpu", 3) == 0) ||
            known_gpu_backend(start, len))
            continue;
        mxa_env_warn_once("MXA_DISABLE", "MXA_DISABLE: '%.*s' is not a backend (expected a list of vulkan, opencl, hip, or all); it is ignored",
                          (int)len, start);
    }
}

/* Fills a slot's name and what needs no library; the probe waits for first need. */
static void slot_init(mxa_backend_slot *slot, const backend_entry *entry, const char *disable)
{
    mxa_backend_info *info = &slot->info;
    slot->ops = entry->ops;
    snprintf(info->name, sizeof info->name, "%s", entry->name);
    info->built = slot->ops != NULL;
    const int cpu = strcmp(entry->name, "cpu") == 0;
    if (!slot->ops) {
        snprintf(info->reason, sizeof info->reason, "not built into this library (configure with MXA_WITH_%s=ON and its dependencies)",
                 strcmp(entry->name, "vulkan") == 0 ? "VULKAN" : strcmp(entry->name, "opencl") == 0 ? "OPENCL" : "HIP");
        slot->probed = 1;
    } else if (!cpu && (mxa_list_contains(disable, entry->name) || mxa_list_contains(disable, "all"))) {
        snprintf(info->reason, sizeof info->reason, "disabled by MXA_DISABLE");
        slot->disabled = slot->probed = 1;
    } else {
        snprintf(info->reason, sizeof info->reason, "not probed yet");
    }
}

/* Probes one backend on first need (loads its libraries); later calls return at once. */
static void slot_probe(mxa_runtime *rt, mxa_backend_slot *slot)
{
    pthread_mutex_lock(&rt->probe_lock);
    if (!slot->probed) {
        mxa_backend_info *info = &slot->info;
        const char *name = info->name;
        int count = 0;
        info->reason[0] = '\0';
        mxa_status st = slot->ops->probe(slot->devices, MXA_MAX_DEVICES_PER_BACKEND, &count, info->reason,
                                         sizeof info->reason);
        if (st != MXA_OK) {
            snprintf(info->reason, sizeof info->reason, "probe failed: %s", mxa_last_error_message());
            count = 0;
        }
        if (count < 0 || count > MXA_MAX_DEVICES_PER_BACKEND) count = 0;
        slot->device_count = count;
        info->device_count = count;
        info->present = count > 0;
        for (int i = 0; i < count; i++) {
            mxa_device_info *d = &slot->devices[i].info;
            snprintf(d->backend, sizeof d->backend, "%s", name);
            d->index = i;
            if (strcmp(name, "cpu") == 0) snprintf(d->id, sizeof d->id, "cpu");
            else snprintf(d->id, sizeof d->id, "%s:%d", name, i);
            mxa_device_info_sanitize(d); /* names and versions are the driver's bytes */
            if (!d->score_reason[0])
                snprintf(d->score_reason, sizeof d->score_reason, "%d: %s", d->score,
                         strcmp(name, "cpu") == 0 ? "the native CPU backend, unmeasured: below every GPU estimate"
                                                  : "no estimate");
            mxa_speed_apply_measured(d); /* mxa_device_measure's cached result, if any (speed.h) */
        }
        mxa_text_sanitize(info->reason); /* may quote a driver's or dlerror's text */
        MXA_LOG_I("backend %s: %s", name, info->present ? "present" : info->reason);
        slot->probed = 1;
        mxa_clear_error();
    }
    pthread_mutex_unlock(&rt->probe_lock);
}

/* Probes every backend not yet probed (listing devices, "auto"). */
static void probe_all(const mxa_runtime *crt)
{
    mxa_runtime *rt = (mxa_runtime *)crt; /* probing fills in what was always there to know */
    for (int b = 0; b < rt->backend_count; b++) slot_probe(rt, &rt->backends[b]);
}

/* MXA_OK if rt is a live runtime. */
static mxa_status runtime_check(const mxa_runtime *rt, const char *fn)
{
    if (!rt) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: runtime is NULL", fn);
    if (!mxa_handle_live(rt, MXA_HANDLE_RUNTIME))
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: not a live runtime (destroyed already?)", fn);
    return MXA_OK;
}

mxa_status mxa_runtime_create(const mxa_runtime_options *opts, mxa_runtime **out)
{
    if (!out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_runtime_create: out is NULL");
    *out = NULL;
    mxa_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_runtime_create: out of memory");
    const char *disable = (opts && opts->disable) ? opts->disable : mxa_env_string("MXA_DISABLE");
    if (mxa_list_contains(disable, "cpu"))
        mxa_env_warn_once("MXA_DISABLE", "MXA_DISABLE lists cpu: the CPU backend cannot be disabled");
    check_disable_list(disable);
    mxa_env_check_switches(); /* bad values of the other switches: one warning each, before any backend reads them */
    for (int i = 0; i < MXA_MAX_BACKENDS; i++) slot_init(&rt->backends[i], &all_backends[i], disable);
    rt->backend_count = MXA_MAX_BACKENDS;
    pthread_mutex_init(&rt->probe_lock, NULL);
    mxa_handles_lock();
    const int failed = mxa_handle_add_locked(rt, MXA_HANDLE_RUNTIME);
    mxa_handles_unlock();
    if (failed) {
        pthread_mutex_destroy(&rt->probe_lock);
        free(rt);
        return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_runtime_create: out of memory");
    }
    mxa_clear_error();
    *out = rt;
    return MXA_OK;
}

static void device_close_locked(mxa_device *dev);

void mxa_runtime_destroy(mxa_runtime *rt)
{
    if (!rt) return;
    mxa_handles_lock();
    if (!mxa_handle_remove_locked(rt, MXA_HANDLE_RUNTIME)) {
        mxa_handles_unlock();
        MXA_LOG_W("mxa_runtime_destroy: not a live runtime (destroyed twice?); nothing done");
        return;
    }
    int open = 0;
    for (mxa_device *d = rt->devices; d; d = d->next) open++;
    if (open)
        MXA_LOG_W("mxa_runtime_destroy: closing %d device%s still open (their handles are invalid from now on)", open,
                  open == 1 ? "" : "s");
    while (rt->devices) device_close_locked(rt->devices);
    mxa_handles_unlock();
    for (int i = 0; i < rt->backend_count; i++) {
        mxa_backend_slot *slot = &rt->backends[i];
        if (slot->ops && slot->ops->release && slot->device_count) slot->ops->release(slot->devices, slot->device_count);
    }
    pthread_mutex_destroy(&rt->probe_lock);
    free(rt);
}

mxa_status mxa_backend_count(const mxa_runtime *rt, int *count)
{
    mxa_status st = runtime_check(rt, "mxa_backend_count");
    if (st) return st;
    if (!count) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_backend_count: NULL argument");
    *count = rt->backend_count;
    return MXA_OK;
}

mxa_status mxa_backend_get_info(const mxa_runtime *rt, int index, mxa_backend_info *info)
{
    mxa_status st = runtime_check(rt, "mxa_backend_get_info");
    if (st) return st;
    if (!info) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_backend_get_info: NULL argument");
    if (index < 0 || index >= rt->backend_count)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_backend_get_info: index %d is outside 0..%d", index,
                        rt->backend_count - 1);
    mxa_runtime *mrt = (mxa_runtime *)rt;
    slot_probe(mrt, &mrt->backends[index]);
    pthread_mutex_lock(&mrt->probe_lock);
    *info = rt->backends[index].info;
    pthread_mutex_unlock(&mrt->probe_lock);
    return MXA_OK;
}

/* The probed device at flat index `index` over all backends, or NULL (every backend probed first). */
static const mxa_probed_device *device_at(const mxa_runtime *rt, int index)
{
    probe_all(rt);
    for (int b = 0; b < rt->backend_count; b++) {
        const mxa_backend_slot *slot = &rt->backends[b];
        if (index < slot->device_count) return &slot->devices[index];
        index -= slot->device_count;
    }
    return NULL;
}

mxa_status mxa_device_count(const mxa_runtime *rt, int *count)
{
    mxa_status st = runtime_check(rt, "mxa_device_count");
    if (st) return st;
    if (!count) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_device_count: NULL argument");
    probe_all(rt);
    int n = 0;
    for (int b = 0; b < rt->backend_count; b++) n += rt->backends[b].device_count;
    *count = n;
    return MXA_OK;
}

mxa_status mxa_device_get_info(const mxa_runtime *rt, int index, mxa_device_info *info)
{
    mxa_status st = runtime_check(rt, "mxa_device_get_info");
    if (st) return st;
    if (!info) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_device_get_info: NULL argument");
    const mxa_probed_device *d = index >= 0 ? device_at(rt, index) : NULL;
    if (!d) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_device_get_info: no device %d", index);
    *info = d->info;
    return MXA_OK;
}

/* Resolves an id ("auto", "cpu", "vulkan", "opencl:1") to a probed device,
 * probing only the backend it names. `origin` names where the id came from. */
static mxa_status find_device(mxa_runtime *rt, const char *id, const char *origin, const mxa_probed_device **out,
                              const mxa_backend_slot **slot_out)
{
    if (strcmp(id, "auto") == 0) {
        const char *env = mxa_env_string("MXA_DEVICE");
        if (env && strcmp(env, "auto") != 0) return find_device(rt, env, "MXA_DEVICE", out, slot_out);
        probe_all(rt);
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
    if (len == 0 || len >= sizeof name) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: bad device id '%s'", origin, id);
    memcpy(name, id, len);
    name[len] = '\0';
    if (colon) {
        char *end;
        long v = strtol(colon + 1, &end, 10);
        if (*end || end == colon + 1 || colon[1] == '-' || colon[1] == '+' || colon[1] == ' ' || v < 0 ||
            v >= MXA_MAX_DEVICES_PER_BACKEND)
            return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: bad device index in '%s' (expected e.g. vulkan:0)", origin, id);
        index = (int)v;
    }
    for (int b = 0; b < rt->backend_count; b++) {
        mxa_backend_slot *slot = &rt->backends[b];
        if (strcmp(slot->info.name, name) != 0) continue;
        slot_probe(rt, slot);
        if (!slot->info.present)
            return mxa_fail(MXA_ERR_NOT_FOUND, "%s: backend %s is absent: %s", origin, name, slot->info.reason);
        if (index >= slot->device_count)
            return mxa_fail(MXA_ERR_NOT_FOUND, "%s: backend %s has %d device(s); there is no %s", origin, name,
                            slot->device_count, id);
        *out = &slot->devices[index];
        *slot_out = slot;
        return MXA_OK;
    }
    return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: unknown backend '%s' in device id '%s' (expected auto, cpu, vulkan, opencl or hip)",
                    origin, name, id);
}

/* Links an opened device into its runtime; on failure closes it (and frees an owned probe). */
static mxa_status device_register(mxa_device *dev, const char *fn, mxa_device **out)
{
    pthread_mutex_init(&dev->lock, NULL);
    mxa_handles_lock();
    const int live = mxa_handle_live_locked(dev->rt, MXA_HANDLE_RUNTIME);
    const int failed = !live || mxa_handle_add_locked(dev, MXA_HANDLE_DEVICE);
    if (!failed) {
        dev->next = dev->rt->devices;
        dev->rt->devices = dev;
    }
    mxa_handles_unlock();
    if (failed) {
        dev->ops->close(dev->impl);
        if (dev->owned_probe) {
            if (dev->ops->release) dev->ops->release(dev->owned_probe, 1);
            free(dev->owned_probe);
        }
        pthread_mutex_destroy(&dev->lock);
        free(dev);
        return live ? mxa_fail(MXA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn)
                    : mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: the runtime was destroyed meanwhile", fn);
    }
    *out = dev;
    return MXA_OK;
}

mxa_status mxa_device_open(mxa_runtime *rt, const char *id, mxa_device **out)
{
    mxa_status st = runtime_check(rt, "mxa_device_open");
    if (st) return st;
    if (!out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_device_open: NULL argument");
    *out = NULL;
    const mxa_probed_device *probed = NULL;
    const mxa_backend_slot *slot = NULL;
    if ((st = find_device(rt, id ? id : "auto", "mxa_device_open", &probed, &slot))) return st;
    mxa_device *dev = calloc(1, sizeof *dev);
    if (!dev) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_device_open: out of memory");
    dev->rt = rt;
    dev->ops = slot->ops;
    dev->probed = probed;
    if ((st = slot->ops->open(probed, &dev->impl))) {
        free(dev);
        return st;
    }
    return device_register(dev, "mxa_device_open", out);
}

mxa_status mxa_device_adopt(mxa_runtime *rt, const mxa_backend_ops *ops, mxa_probed_device *owned_probe, void *impl,
                            mxa_device **out)
{
    mxa_status st = runtime_check(rt, "mxa_device_adopt");
    mxa_device *dev = st ? NULL : calloc(1, sizeof *dev);
    if (!dev) {
        ops->close(impl);
        if (ops->release) ops->release(owned_probe, 1);
        free(owned_probe);
        return st ? st : mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_device_adopt: out of memory");
    }
    mxa_device_info *d = &owned_probe->info;
    snprintf(d->backend, sizeof d->backend, "%s", ops->name);
    mxa_device_info_sanitize(d);
    dev->rt = rt;
    dev->ops = ops;
    dev->probed = dev->owned_probe = owned_probe;
    dev->impl = impl;
    return device_register(dev, "mxa_device_adopt", out);
}

/* Closes a registered device, handle lock held: waits for a call in flight,
 * frees the buffers still alive on it (their handles stay valid, orphaned,
 * until mxa_buffer_destroy) and unlinks it from its runtime. */
static void device_close_locked(mxa_device *dev)
{
    mxa_handle_remove_locked(dev, MXA_HANDLE_DEVICE);
    pthread_mutex_lock(&dev->lock);
    int orphaned = 0;
    for (mxa_buffer *b = dev->buffers; b; b = b->next, orphaned++) {
        dev->ops->buffer_destroy(dev->impl, b->handle);
        b->handle = NULL;
        b->dev = NULL;
    }
    if (orphaned) MXA_LOG_I("mxa_device_close: freed %d buffer%s still alive on %s", orphaned, orphaned == 1 ? "" : "s",
                            dev->probed->info.id);
    dev->ops->close(dev->impl);
    pthread_mutex_unlock(&dev->lock);
    if (dev->owned_probe) {
        if (dev->ops->release) dev->ops->release(dev->owned_probe, 1);
        free(dev->owned_probe);
    }
    for (mxa_device **p = &dev->rt->devices; *p; p = &(*p)->next)
        if (*p == dev) {
            *p = dev->next;
            break;
        }
    pthread_mutex_destroy(&dev->lock);
    free(dev);
}

void mxa_device_close(mxa_device *dev)
{
    if (!dev) return;
    mxa_handles_lock();
    if (!mxa_handle_live_locked(dev, MXA_HANDLE_DEVICE)) {
        mxa_handles_unlock();
        MXA_LOG_W("mxa_device_close: not an open device (closed twice, or its runtime was destroyed?); nothing done");
        return;
    }
    device_close_locked(dev);
    mxa_handles_unlock();
}

mxa_status mxa_device_check(const mxa_device *dev, const char *fn)
{
    if (!dev) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: device is NULL", fn);
    if (!mxa_handle_live(dev, MXA_HANDLE_DEVICE))
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: not an open device (closed, or its runtime was destroyed?)", fn);
    return MXA_OK;
}

mxa_status mxa_device_check_backend(const mxa_device *dev, const mxa_backend_ops *ops, const char *kind, const char *fn)
{
    mxa_status st = mxa_device_check(dev, fn);
    if (st) return st;
    if (dev->ops != ops) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: %s is not %s device", fn, dev->probed->info.id, kind);
    return MXA_OK;
}

mxa_status mxa_device_info_of(const mxa_device *dev, mxa_device_info *info)
{
    mxa_status st = mxa_device_check(dev, "mxa_device_info_of");
    if (st) return st;
    if (!info) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_device_info_of: NULL argument");
    *info = dev->probed->info;
    return MXA_OK;
}
