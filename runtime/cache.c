/* The on-disk kernel cache: keyed, checksummed, written atomically, trusted only when the
 * current user alone could have written it. */
#define _GNU_SOURCE /* SEEK_HOLE */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "env.h"
#include "log.h"

#define CACHE_MAGIC "MXACACHE"
#define CACHE_VERSION 1u

/* File layout: magic[8] version:u32 key_len:u32 payload_size:u64 checksum:u64 key payload.
 * The checksum covers key and payload. */
typedef struct cache_header {
    char magic[8];
    uint32_t version;
    uint32_t key_len;
    uint64_t payload_size;
    uint64_t checksum;
} cache_header;

uint64_t mxa_hash64(const void *data, size_t size, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = seed;
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static mxa_status cache_dir(char *dir, size_t size)
{
    const char *base = mxa_env_string("MXA_CACHE_DIR");
    int n;
    if (base) n = snprintf(dir, size, "%s", base);
    else if ((base = mxa_env_string("XDG_CACHE_HOME"))) n = snprintf(dir, size, "%s/mxa", base);
    else if ((base = mxa_env_string("HOME"))) n = snprintf(dir, size, "%s/.cache/mxa", base);
    else return mxa_fail(MXA_ERR_NOT_FOUND, "no cache directory (set MXA_CACHE_DIR)");
    if (n < 0 || (size_t)n >= size) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "cache directory path too long");
    return MXA_OK;
}

mxa_status mxa_cache_path(const char *kind, const char *key, char *path, size_t size)
{
    if (!kind || !key || !path) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_cache_path: NULL argument");
    char dir[1024];
    mxa_status st = cache_dir(dir, sizeof dir);
    if (st) return st;
    int n = snprintf(path, size, "%s/%s-%016llx.bin", dir, kind,
                     (unsigned long long)mxa_hash64(key, strlen(key), MXA_HASH_SEED));
    if (n < 0 || (size_t)n >= size) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "cache path too long");
    return MXA_OK;
}

static uint64_t entry_checksum(const char *key, const void *payload, size_t size)
{
    return mxa_hash64(payload, size, mxa_hash64(key, strlen(key), MXA_HASH_SEED));
}

/* Why a file or directory another user could have written is not trusted (NULL: trusted).
 * A driver may crash on a crafted binary, so, as ssh does with keys, only the current
 * user's own files, writable by nobody else, are handed to it. */
static const char *untrusted(const struct stat *st)
{
    if (st->st_uid != geteuid()) return "not owned by the current user";
    if (st->st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
    return NULL;
}

/* MXA_OK when `dir` is a directory the current user alone can write; MXA_ERR_NOT_FOUND when
 * it does not exist (quietly); `refused` when it is refused (logged: a warning the first
 * time, then info, so one bad directory does not repeat itself per entry). */
static mxa_status check_dir(const char *dir, mxa_status refused)
{
    static atomic_int warned;
    struct stat st;
    if (stat(dir, &st) != 0) return mxa_fail(MXA_ERR_NOT_FOUND, "no cache directory %s", dir);
    const char *why = S_ISDIR(st.st_mode) ? untrusted(&st) : "not a directory";
    if (!why) return MXA_OK;
    mxa_log(atomic_exchange(&warned, 1) ? MXA_LOG_INFO : MXA_LOG_WARN,
            "cache: not using %s: %s (fix its owner or mode, or set MXA_CACHE_DIR)", dir, why);
    return mxa_fail(refused, "cache directory %s refused: %s", dir, why);
}

/* Why an open entry is refused before any byte of it is read (NULL: read it); *foreign
 * says the file is not one mxa wrote (another kind of file, or another writer). */
static const char *check_entry(int fd, const struct stat *st, uint64_t min_size, int *foreign)
{
    *foreign = 1;
    if (!S_ISREG(st->st_mode)) return "not a regular file"; /* a FIFO would block the read */
    const char *why = untrusted(st);
    if (why) return why;
    *foreign = 0;
    if ((uint64_t)st->st_size < min_size) return "truncated header";
#ifdef SEEK_HOLE
    /* mxa writes every byte; a hole means a crafted file whose size costs nothing on disk */
    if (lseek(fd, 0, SEEK_HOLE) < st->st_size) return "sparse file";
    if (lseek(fd, 0, SEEK_SET) != 0) return "cannot seek";
#else
    (void)fd;
#endif
    return NULL;
}

mxa_status mxa_cache_load(const char *kind, const char *key, void **data, size_t *size)
{
    if (!data || !size) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_cache_load: NULL argument");
    *data = NULL;
    *size = 0;
    char dir[1024], path[1200];
    mxa_status st = mxa_cache_path(kind, key, path, sizeof path);
    if (st || (st = cache_dir(dir, sizeof dir)) || (st = check_dir(dir, MXA_ERR_NOT_FOUND))) return st;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return mxa_fail(MXA_ERR_NOT_FOUND, "no cache entry %s", path);
    struct stat fst;
    int foreign = 0;
    const char *why = fstat(fd, &fst) != 0 ? "cannot stat" : check_entry(fd, &fst, sizeof(cache_header), &foreign);
    FILE *f = why ? NULL : fdopen(fd, "rb");
    if (!why && !f) why = "cannot open";
    if (!f) close(fd);
    cache_header hdr;
    const size_t key_len = strlen(key);
    char *stored_key = NULL;
    void *payload = NULL;
    if (why) {
    } else if (fread(&hdr, sizeof hdr, 1, f) != 1) why = "truncated header";
    else if (memcmp(hdr.magic, CACHE_MAGIC, 8) != 0) why = "bad magic";
    else if (hdr.version != CACHE_VERSION) why = "other format version";
    else if (hdr.key_len != key_len) why = "key mismatch";
    else if (hdr.payload_size == 0 || hdr.payload_size > ((uint64_t)1 << 31)) why = "implausible size";
    /* bounded by the file before anything is allocated, read or hashed */
    else if (sizeof hdr + key_len + hdr.payload_size != (uint64_t)fst.st_size) why = "size does not match the file";
    if (!why) {
        stored_key = malloc(key_len + 1);
        payload = malloc((size_t)hdr.payload_size);
        if (!stored_key || !payload) why = "out of memory";
        else if (fread(stored_key, 1, key_len, f) != key_len) why = "truncated key";
        else if (memcmp(stored_key, key, key_len) != 0) why = "key mismatch";
        else if (fread(payload, 1, (size_t)hdr.payload_size, f) != hdr.payload_size) why = "truncated payload";
        else if (entry_checksum(key, payload, (size_t)hdr.payload_size) != hdr.checksum) why = "checksum mismatch";
    }
    if (f) fclose(f);
    free(stored_key);
    if (why) {
        free(payload);
        /* corruption is routine (a killed writer, a full disk); a foreign file is not */
        mxa_log(foreign ? MXA_LOG_WARN : MXA_LOG_INFO, "cache: ignoring %s (%s); it will be rebuilt", path, why);
        return mxa_fail(MXA_ERR_NOT_FOUND, "cache entry %s is unusable: %s", path, why);
    }
    *data = payload;
    *size = (size_t)hdr.payload_size;
    return MXA_OK;
}

mxa_status mxa_cache_remove(const char *kind, const char *key)
{
    char path[1200];
    mxa_status st = mxa_cache_path(kind, key, path, sizeof path);
    if (st) return st;
    if (unlink(path) != 0 && errno != ENOENT)
        return mxa_fail(MXA_ERR_IO, "cannot remove cache entry %s: %s", path, strerror(errno));
    return MXA_OK;
}

mxa_status mxa_cache_take(const char *kind, const char *key, void **data, size_t *size)
{
    mxa_status st = mxa_cache_load(kind, key, data, size);
    if (st == MXA_OK && mxa_cache_remove(kind, key) != MXA_OK) {
        MXA_LOG_I("cache: %s", mxa_last_error_message()); /* unprotected, but still usable */
        mxa_clear_error();
    }
    return st;
}

/* Directories are created 0700 (the XDG cache mode): entries are private to the user. */
static mxa_status make_dirs(char *dir)
{
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int r = mkdir(dir, 0700);
        *p = '/';
        if (r != 0 && errno != EEXIST) return MXA_ERR_IO;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return MXA_ERR_IO;
    return MXA_OK;
}

mxa_status mxa_cache_store(const char *kind, const char *key, const void *data, size_t size)
{
    if (!data || size == 0) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_cache_store: empty entry");
    char dir[1024], path[1200], tmp[1300];
    mxa_status st = cache_dir(dir, sizeof dir);
    if (st || (st = mxa_cache_path(kind, key, path, sizeof path))) return st;
    if (make_dirs(dir)) {
        MXA_LOG_W("cache: cannot create %s: %s", dir, strerror(errno));
        return mxa_fail(MXA_ERR_IO, "cannot create cache directory %s: %s", dir, strerror(errno));
    }
    if ((st = check_dir(dir, MXA_ERR_IO))) return st;
    /* unique per process and call: threads storing the same key never share a temp file */
    static atomic_uint serial;
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), atomic_fetch_add(&serial, 1u));
    /* 0600 whatever the umask lets through: only the user may read or replace entries */
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        MXA_LOG_W("cache: cannot write %s: %s", tmp, strerror(errno));
        return mxa_fail(MXA_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    }
    cache_header hdr;
    memset(&hdr, 0, sizeof hdr);
    memcpy(hdr.magic, CACHE_MAGIC, 8);
    hdr.version = CACHE_VERSION;
    hdr.key_len = (uint32_t)strlen(key);
    hdr.payload_size = size;
    hdr.checksum = entry_checksum(key, data, size);
    int ok = fwrite(&hdr, sizeof hdr, 1, f) == 1 && fwrite(key, 1, hdr.key_len, f) == hdr.key_len &&
             fwrite(data, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        MXA_LOG_W("cache: writing %s failed", path);
        return mxa_fail(MXA_ERR_IO, "writing cache entry %s failed", path);
    }
    return MXA_OK;
}
