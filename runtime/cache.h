/*
 * The on-disk cache for compiled kernels (pipeline caches, program binaries,
 * code objects), shared by the GPU backends (internal).
 *
 * Files live under $MXA_CACHE_DIR, else $XDG_CACHE_HOME/mxa, else ~/.cache/mxa.
 * An entry is keyed by a string the backend builds from everything that must
 * match (vendor, device, driver version, source hash, options). Each file
 * carries a magic, format version, the full key, the payload size and a
 * checksum: a corrupt, truncated or mismatched file is ignored (and logged),
 * never trusted. Writes go to a temporary file that is renamed into place.
 *
 * A driver may crash on a crafted binary, so only what the current user alone
 * could have written is read: the directory (created 0700) and each entry
 * (created 0600) must be owned by the effective user and not writable by group
 * or others, and an entry must be a regular file (a FIFO is never opened for a
 * blocking read) whose size matches its header, without holes.
 */
#ifndef MXA_RUNTIME_CACHE_H
#define MXA_RUNTIME_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "mxa/mxa.h"

/* 64-bit FNV-1a of `size` bytes, continuing from `seed` (use MXA_HASH_SEED). */
#define MXA_HASH_SEED 0xcbf29ce484222325ull
uint64_t mxa_hash64(const void *data, size_t size, uint64_t seed);

/* Loads the entry of `kind` ("vulkan-pipeline", "opencl-binary", ...) and
 * `key` into a malloc'd buffer. MXA_ERR_NOT_FOUND when absent, unreadable,
 * corrupt or keyed differently (the reason is logged at info level). */
mxa_status mxa_cache_load(const char *kind, const char *key, void **data, size_t *size);

/* Stores an entry atomically (temp file + rename). Failure to write is not
 * fatal for callers: it returns a status and logs a warning. */
mxa_status mxa_cache_store(const char *kind, const char *key, const void *data, size_t size);

/* Deletes the entry of `kind` and `key` (absent is fine). */
mxa_status mxa_cache_remove(const char *kind, const char *key);

/* mxa_cache_load, and the entry is deleted: for a binary handed to a driver, which may
 * crash on one it does not like (PoCL does on a truncated binary with a valid checksum).
 * The caller stores the entry again once the driver has accepted it, so an entry that
 * crashed a process, or that the driver rejected, is gone and rebuilt in the next run. */
mxa_status mxa_cache_take(const char *kind, const char *key, void **data, size_t *size);

/* The path an entry would have (for tests and `mxa probe`). */
mxa_status mxa_cache_path(const char *kind, const char *key, char *path, size_t size);

#endif
