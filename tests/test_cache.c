/* The kernel cache: round trip, every way a file can be bad is ignored, and only files
 * the current user alone could have written are trusted. */
#define _GNU_SOURCE /* SEEK_HOLE */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fstree.h"
#include "runtime/cache.h"

static char dir[520]; /* the cache directory, inside a fresh temporary tree (created by mxa_cache_store) */

static int setup(void **state)
{
    (void)state;
    if (!fst_begin()) return -1;
    snprintf(dir, sizeof dir, "%s", fst_path("nested/dir"));
    setenv("MXA_CACHE_DIR", dir, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    chmod(dir, 0700); /* a test may have left it refused */
    return fst_end();
}

/* The cache's log lines, captured at info level: the worst level seen and the last line. */
static struct {
    int worst;
    char last[1400];
} logged;

static void capture(mxa_log_level level, const char *message, void *user)
{
    (void)user;
    if (strncmp(message, "cache:", 6) != 0) return;
    if ((int)level < logged.worst) logged.worst = (int)level;
    snprintf(logged.last, sizeof logged.last, "%s", message);
}

static void capture_start(void)
{
    logged.worst = MXA_LOG_DEBUG + 1;
    logged.last[0] = '\0';
    mxa_log_set_level(MXA_LOG_INFO);
    mxa_log_set_callback(capture, NULL);
}

/* Stops capturing and checks a line at `level` or worse said `why`. */
static void expect_logged(mxa_log_level level, const char *why)
{
    mxa_log_set_callback(NULL, NULL);
    mxa_log_set_level(MXA_LOG_WARN);
    if (!strstr(logged.last, why)) fail_msg("expected a cache log line with '%s', got '%s'", why, logged.last);
    assert_true(logged.worst <= (int)level);
}

/* Loading `key` fails, logging `why` at `level` or worse. */
static void expect_refused(const char *key, mxa_log_level level, const char *why)
{
    void *data = (void *)1;
    size_t size = 1;
    capture_start();
    assert_int_equal(mxa_cache_load("unit", key, &data, &size), MXA_ERR_NOT_FOUND);
    expect_logged(level, why);
    assert_null(data);
    assert_int_equal(size, 0);
}

static void expect_loads(const char *key, const void *payload, size_t n)
{
    void *data;
    size_t size;
    assert_int_equal(mxa_cache_load("unit", key, &data, &size), MXA_OK);
    assert_int_equal(size, n);
    assert_memory_equal(data, payload, n);
    free(data);
}

static void rewrite(const char *path, long offset, int whence, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, offset, whence);
    fwrite(bytes, 1, n, f);
    fclose(f);
}

static void test_round_trip_and_corruption(void **state)
{
    (void)state;
    const char *key = "vendor=test;device=1;driver=2;src=abc";
    const char payload[] = "compiled kernel bytes";
    void *data;
    size_t size;
    assert_int_equal(mxa_cache_load("unit", key, &data, &size), MXA_ERR_NOT_FOUND); /* miss */
    assert_int_equal(mxa_cache_store("unit", key, payload, sizeof payload), MXA_OK); /* creates dirs */
    assert_int_equal(mxa_cache_load("unit", key, &data, &size), MXA_OK);             /* hit */
    assert_int_equal(size, sizeof payload);
    assert_memory_equal(data, payload, size);
    free(data);
    assert_int_equal(mxa_cache_load("unit", "other key", &data, &size), MXA_ERR_NOT_FOUND);

    char path[1200];
    assert_int_equal(mxa_cache_path("unit", key, path, sizeof path), MXA_OK);
    /* a flipped payload byte fails the checksum */
    rewrite(path, -3, SEEK_END, "X", 1);
    assert_int_equal(mxa_cache_load("unit", key, &data, &size), MXA_ERR_NOT_FOUND);
    assert_null(data);
    /* a rebuilt entry replaces it */
    assert_int_equal(mxa_cache_store("unit", key, payload, sizeof payload), MXA_OK);
    assert_int_equal(mxa_cache_load("unit", key, &data, &size), MXA_OK);
    free(data);
    /* truncation */
    assert_int_equal(truncate(path, 30), 0);
    assert_int_equal(mxa_cache_load("unit", key, &data, &size), MXA_ERR_NOT_FOUND);
    /* bad magic */
    assert_int_equal(mxa_cache_store("unit", key, payload, sizeof payload), MXA_OK);
    rewrite(path, 0, SEEK_SET, "NOTCACHE", 8);
    assert_int_equal(mxa_cache_load("unit", key, &data, &size), MXA_ERR_NOT_FOUND);
    /* trailing garbage */
    assert_int_equal(mxa_cache_store("unit", key, payload, sizeof payload), MXA_OK);
    FILE *f = fopen(path, "ab");
    fputs("junk", f);
    fclose(f);
    assert_int_equal(mxa_cache_load("unit", key, &data, &size), MXA_ERR_NOT_FOUND);
    /* an empty file */
    fclose(fopen(path, "wb"));
    assert_int_equal(mxa_cache_load("unit", key, &data, &size), MXA_ERR_NOT_FOUND);
    unlink(path);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    void *data;
    size_t size;
    char path[16];
    assert_int_equal(mxa_cache_store("unit", "k", NULL, 4), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_cache_store("unit", "k", "x", 0), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_cache_load("unit", "k", NULL, &size), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_cache_path("unit", "k", path, sizeof path), MXA_ERR_INVALID_ARGUMENT);
    setenv("MXA_CACHE_DIR", "/proc/mxa-cannot-write-here", 1);
    assert_int_equal(mxa_cache_store("unit", "k", "x", 1), MXA_ERR_IO);
    assert_int_equal(mxa_cache_load("unit", "k", &data, &size), MXA_ERR_NOT_FOUND);
    setenv("MXA_CACHE_DIR", dir, 1);
    assert_int_equal(mxa_hash64("abc", 3, MXA_HASH_SEED), 0xe71fa2190541574bull); /* FNV-1a test vector */
}

/* Threads storing the same key at once: the entry that survives is whole. */
static void *store_many(void *arg)
{
    char payload[4096];
    memset(payload, *(const char *)arg, sizeof payload);
    for (int i = 0; i < 50; i++) mxa_cache_store("unit", "shared key", payload, sizeof payload);
    return NULL;
}

static void test_concurrent_stores(void **state)
{
    (void)state;
    const char fills[4] = {'a', 'b', 'c', 'd'};
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, store_many, (void *)&fills[i]);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    void *data;
    size_t size;
    assert_int_equal(mxa_cache_load("unit", "shared key", &data, &size), MXA_OK);
    assert_int_equal(size, 4096);
    const char *p = data;
    for (size_t i = 1; i < size; i++) assert_int_equal(p[i], p[0]);
    free(data);
}

static const char trusted_key[] = "vendor=test;device=1;driver=2;src=trust";
static const char trusted_payload[] = "a binary a driver would be handed";

static void store_trusted(char *path, size_t size)
{
    assert_int_equal(mxa_cache_store("unit", trusted_key, trusted_payload, sizeof trusted_payload), MXA_OK);
    assert_int_equal(mxa_cache_path("unit", trusted_key, path, size), MXA_OK);
}

/* A FIFO where an entry should be is refused without blocking, and replaced by the next store. */
static void test_fifo_entry(void **state)
{
    (void)state;
    char path[1200];
    store_trusted(path, sizeof path);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(20); /* a blocking open or read would hang here: fail instead */
    expect_refused(trusted_key, MXA_LOG_WARN, "not a regular file");
    alarm(0);
    store_trusted(path, sizeof path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    expect_loads(trusted_key, trusted_payload, sizeof trusted_payload);
}

/* The directory is created 0700 and entries 0600 even under a permissive umask. */
static void test_private_modes(void **state)
{
    (void)state;
    char path[1200];
    const mode_t old = umask(0);
    store_trusted(path, sizeof path);
    umask(old);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
}

/* Entries writable by group or others, or owned by another user, are never read. */
static void test_untrusted_entry(void **state)
{
    (void)state;
    char path[1200];
    store_trusted(path, sizeof path);
    const mode_t modes[] = {0620, 0602, 0666};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(chmod(path, modes[i]), 0);
        expect_refused(trusted_key, MXA_LOG_WARN, "writable by group or others");
    }
    assert_int_equal(chmod(path, 0600), 0);
    expect_loads(trusted_key, trusted_payload, sizeof trusted_payload);
    if (geteuid() == 0) {
        /* root can give the valid entry to another user */
        assert_int_equal(chown(path, 54321, (gid_t)-1), 0);
    } else {
        /* a file of another user (root's /etc/passwd) reached through a symlink */
        struct stat st;
        if (stat("/etc/passwd", &st) != 0 || st.st_uid == geteuid()) {
            print_message("skipped: no file owned by another user to point the entry at\n");
            return;
        }
        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlink("/etc/passwd", path), 0);
    }
    expect_refused(trusted_key, MXA_LOG_WARN, "not owned by the current user");
    store_trusted(path, sizeof path); /* replaced atomically */
    expect_loads(trusted_key, trusted_payload, sizeof trusted_payload);
}

/* A cache directory writable by group or others is neither read nor written. */
static void test_untrusted_dir(void **state)
{
    (void)state;
    char path[1200];
    store_trusted(path, sizeof path);
    const mode_t modes[] = {0770, 0707, 01777};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(chmod(dir, modes[i]), 0);
        expect_refused(trusted_key, MXA_LOG_INFO, "writable by group or others");
        capture_start();
        assert_int_equal(mxa_cache_store("unit", trusted_key, "x", 1), MXA_ERR_IO);
        expect_logged(MXA_LOG_INFO, "writable by group or others");
    }
    assert_int_equal(chmod(dir, 0700), 0);
    expect_loads(trusted_key, trusted_payload, sizeof trusted_payload); /* the refused store wrote nothing */
}

/* A header claiming 2 GiB is refused from the file size before anything is allocated or
 * hashed, also when a sparse file really is that large. */
static void test_huge_payload_size(void **state)
{
    (void)state;
    char path[1200];
    store_trusted(path, sizeof path);
    const uint64_t huge = (uint64_t)1 << 31;
    rewrite(path, 16, SEEK_SET, &huge, sizeof huge); /* payload_size follows magic, version, key_len */
    expect_refused(trusted_key, MXA_LOG_INFO, "size does not match the file");
    const off_t file_size = (off_t)(32 + strlen(trusted_key) + huge);
    assert_int_equal(truncate(path, file_size), 0);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    const off_t hole = lseek(fd, 0, SEEK_HOLE);
    close(fd);
    if (hole >= file_size) {
        print_message("skipped: this file system reports no holes\n");
        return;
    }
    expect_refused(trusted_key, MXA_LOG_INFO, "sparse file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_and_corruption, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_stores, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_untrusted_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_untrusted_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_huge_payload_size, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
