/*
 * The registry of live handles (internal). Runtimes, devices and buffers are
 * registered while they are usable, so that a handle used after it was
 * closed or destroyed (or one that never was an mxa handle) gets
 * MXA_ERR_INVALID_ARGUMENT instead of a crash. The check is a lookup of the
 * pointer's value: it cannot tell a stale handle from a new one that malloc
 * placed at the same address.
 *
 * The registry's lock is also the lock for every structural change (open,
 * close, create, destroy), so a device can safely orphan its buffers.
 */
#ifndef MXA_RUNTIME_HANDLES_H
#define MXA_RUNTIME_HANDLES_H

typedef enum mxa_handle_kind {
    MXA_HANDLE_RUNTIME = 1,
    MXA_HANDLE_DEVICE = 2,
    MXA_HANDLE_BUFFER = 3
} mxa_handle_kind;

/* The structural lock (not recursive). The _locked functions need it held. */
void mxa_handles_lock(void);
void mxa_handles_unlock(void);

/* Registers p; 0, or -1 when out of memory. */
int mxa_handle_add_locked(const void *p, mxa_handle_kind kind);
/* Unregisters p; 1 if it was registered as `kind`, else 0. */
int mxa_handle_remove_locked(const void *p, mxa_handle_kind kind);
/* 1 if p is registered as `kind`. */
int mxa_handle_live_locked(const void *p, mxa_handle_kind kind);

/* mxa_handle_live_locked under the lock. */
int mxa_handle_live(const void *p, mxa_handle_kind kind);

#endif
