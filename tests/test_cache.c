/* The kernel cache: round trip, and every way a file can be bad is ignored. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/cache.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/mxa-cache-test-%ld/nested/dir", (long)getpid());
    setenv("MXA_CACHE_DIR", dir, 1);
    return 0;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_round_trip_and_corruption, setup),
        cmocka_unit_test_setup(test_bad_arguments, setup),
        cmocka_unit_test_setup(test_concurrent_stores, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
