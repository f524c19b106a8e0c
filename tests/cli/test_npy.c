/*
 * The .npy reader and writer of the CLI (tools/mxa/npy.c): every header
 * form numpy writes, every way a file can be wrong (with the message it
 * gives), and the all-or-nothing writer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include "tools/mxa/npy.h"

/* A .npy image: preamble of `version` with `dict` as the header, then `data`. */
static size_t make_npy(uint8_t *buf, int version, const char *dict, const void *data, size_t data_len)
{
    const size_t dlen = strlen(dict), pre = version == 1 ? 10 : 12;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)version;
    buf[7] = 0;
    const size_t hlen = dlen + 1;
    buf[8] = (uint8_t)(hlen & 0xff);
    buf[9] = (uint8_t)((hlen >> 8) & 0xff);
    if (version != 1) {
        buf[10] = (uint8_t)((hlen >> 16) & 0xff);
        buf[11] = (uint8_t)(hlen >> 24);
    }
    memcpy(buf + pre, dict, dlen);
    buf[pre + dlen] = '\n';
    if (data_len) memcpy(buf + pre + hlen, data, data_len);
    return pre + hlen + data_len;
}

/* Parses `dict` + `data_len` bytes of data; returns the status, fills err. */
static mxa_status parse_dict(int version, const char *dict, size_t data_len, npy_array *a, char *err)
{
    static uint8_t buf[1 << 17];
    static uint8_t data[4096];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)i;
    size_t n = make_npy(buf, version, dict, data, data_len);
    return npy_parse(buf, n, a, err, NPY_ERR_LEN);
}

static int contains(const uint8_t *buf, size_t len, const char *s)
{
    const size_t n = strlen(s);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(buf + i, s, n) == 0) return 1;
    return 0;
}

static void expect_error(int version, const char *dict, size_t data_len, const char *substring)
{
    npy_array a;
    char err[NPY_ERR_LEN] = "";
    mxa_status st = parse_dict(version, dict, data_len, &a, err);
    if (st == MXA_OK || !strstr(err, substring)) {
        print_error("dict %s: status %d, message '%s', expected '%s'\n", dict, (int)st, err, substring);
        fail();
    }
    assert_null(a.data);
    assert_null(strchr(err, '\n'));
}

static void test_header_forms(void **state)
{
    (void)state;
    npy_array a;
    char err[NPY_ERR_LEN];
    static const struct {
        int version;
        const char *dict;
        int dtype, rank;
        int64_t shape0, count;
    } ok[] = {
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", NPY_F32, 2, 2, 6},
        {1, "{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }   ", NPY_F16, 1, 5, 5},
        {1, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }", NPY_U8, 0, 0, 1},
        {1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 5), }", NPY_BOOL, 2, 2, 10},
        {2, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 1, 2), }", NPY_F32, 3, 4, 8},
        {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", NPY_F32, 1, 3, 3},
        {1, "{\"shape\": (2,3,), \"descr\": \"<f4\", \"fortran_order\": False}", NPY_F32, 2, 2, 6},
        {1, "{'descr':'<f4','fortran_order':False,'shape':(3L, 2L)}", NPY_F32, 2, 3, 6},
        {1, "  {'descr': '<f4', 'fortran_order': False, 'shape': (0, 7), }", NPY_F32, 2, 0, 0},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 2), }", NPY_F32, 8, 1, 2},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        const size_t bytes = (size_t)ok[i].count * (ok[i].dtype == NPY_F32 ? 4 : ok[i].dtype == NPY_F16 ? 2 : 1);
        mxa_status st = parse_dict(ok[i].version, ok[i].dict, bytes, &a, err);
        if (st != MXA_OK) {
            print_error("dict %s: %s\n", ok[i].dict, err);
            fail();
        }
        assert_int_equal(a.dtype, ok[i].dtype);
        assert_int_equal(a.rank, ok[i].rank);
        assert_int_equal(a.count, ok[i].count);
        if (a.rank) assert_int_equal(a.shape[0], ok[i].shape0);
        assert_non_null(a.data);
        if (bytes > 1 && ((uint8_t *)a.data)[1] != 1) { /* the data bytes, in order */
            print_error("dict %s: data byte 1 is 0x%x\n", ok[i].dict, ((uint8_t *)a.data)[1]);
            fail();
        }
        npy_free(&a);
        assert_null(a.data);
    }
}

static void test_header_errors(void **state)
{
    (void)state;
    expect_error(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", 16, "unsupported dtype '>f8'");
    expect_error(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "unsupported dtype '>f4'");
    expect_error(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 8, "unsupported dtype '<i4'");
    expect_error(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8, "'descr'");
    expect_error(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16, "Fortran-order");
    expect_error(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", 8, "True or False");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, }", 4, "'shape' is missing");
    expect_error(1, "{'descr': '<f4', 'shape': (1,), }", 4, "'fortran_order' is missing");
    expect_error(1, "{'fortran_order': False, 'shape': (1,), }", 4, "'descr' is missing");
    expect_error(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4, "twice");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1, }", 4, "unexpected key 'extra'");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5), }", 20, "not a tuple");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': 5, }", 20, "a tuple");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 4, "negative dimension");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (,), }", 4, "a dimension");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", 24, "',' or ')'");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", 4,
                 "more than 8 dimensions");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 4, "too large");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (281474976710656, 281474976710656), }", 4,
                 "too many elements");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", 8, "',' or '}'");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", 8, "only blanks");
    expect_error(1, "['descr', '<f4']", 8, "'{'");
    expect_error(1, "{'descr: '<f4', 'fortran_order': False, 'shape': (2,), }", 8, "malformed header");
    expect_error(1, "{'des\\cr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, "unexpected text");
    expect_error(1, "{descr: '<f4', 'fortran_order': False, 'shape': (2,), }", 8, "quoted key");
    expect_error(1, "", 0, "'{'");
    /* Data of the wrong length. */
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20, "truncated: float32 (2, 3) needs 24");
    expect_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 28, "4 bytes of trailing garbage");
    expect_error(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }", 0, "truncated");
}

static void test_preamble_errors(void **state)
{
    (void)state;
    npy_array a;
    char err[NPY_ERR_LEN];
    uint8_t buf[256];
    size_t n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", "abcd", 4);
    assert_int_equal(npy_parse(buf, n, &a, err, sizeof err), MXA_OK);
    npy_free(&a);
    assert_int_equal(npy_parse(buf, 0, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_non_null(strstr(err, "empty"));
    assert_int_equal(npy_parse(NULL, 0, &a, err, sizeof err), MXA_ERR_FORMAT);
    for (size_t cut = 1; cut < n; cut++) /* every truncation fails cleanly */
        assert_int_equal(npy_parse(buf, cut, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_int_equal(npy_parse(buf, 8, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_non_null(strstr(err, "preamble"));
    buf[1] = 'X';
    assert_int_equal(npy_parse(buf, n, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_non_null(strstr(err, "not a .npy file"));
    buf[1] = 'N';
    buf[6] = 4;
    assert_int_equal(npy_parse(buf, n, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_non_null(strstr(err, "version 4.0"));
    buf[6] = 1;
    buf[7] = 1;
    assert_int_equal(npy_parse(buf, n, &a, err, sizeof err), MXA_ERR_FORMAT);
    buf[7] = 0;
    /* A header length beyond the file, and beyond the 64 KiB limit. */
    buf[8] = 0xff;
    buf[9] = 0x7f;
    assert_int_equal(npy_parse(buf, n, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_non_null(strstr(err, "header claims"));
    static uint8_t big[NPY_MAX_HEADER + 4096];
    char *dict = malloc(NPY_MAX_HEADER + 100);
    assert_non_null(dict);
    const char *head = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }";
    strcpy(dict, head);
    memset(dict + strlen(head), ' ', NPY_MAX_HEADER + 50 - strlen(head));
    dict[NPY_MAX_HEADER + 50] = '\0';
    n = make_npy(big, 2, dict, "abcd", 4);
    assert_int_equal(npy_parse(big, n, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_non_null(strstr(err, "above the limit"));
    /* Just under the limit is fine (version 2). */
    dict[NPY_MAX_HEADER - 1] = '\0';
    n = make_npy(big, 2, dict, "abcd", 4);
    assert_int_equal(npy_parse(big, n, &a, err, sizeof err), MXA_OK);
    npy_free(&a);
    free(dict);
}

/* The writer produces numpy's bytes exactly (numpy 1.x: header padded to 64). */
static void test_format_header_matches_numpy(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t len;
    char err[NPY_ERR_LEN];
    const int64_t shape[2] = {2, 3};
    assert_int_equal(npy_format_header(NPY_F32, 2, shape, buf, sizeof buf, &len, err, sizeof err), MXA_OK);
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    assert_int_equal(len, 128);
    assert_memory_equal(buf, "\x93NUMPY\x01\x00\x76\x00", 10);
    assert_memory_equal(buf + 10, dict, strlen(dict));
    for (size_t i = 10 + strlen(dict); i < len - 1; i++) assert_int_equal(buf[i], ' ');
    assert_int_equal(buf[len - 1], '\n');
    const int64_t five = 5;
    assert_int_equal(npy_format_header(NPY_U8, 1, &five, buf, sizeof buf, &len, err, sizeof err), MXA_OK);
    assert_true(contains(buf, len, "'shape': (5,), }"));
    assert_int_equal(npy_format_header(NPY_F16, 0, NULL, buf, sizeof buf, &len, err, sizeof err), MXA_OK);
    assert_true(contains(buf, len, "'<f2', 'fortran_order': False, 'shape': (), }"));
    assert_int_equal(len % 64, 0);
    assert_int_not_equal(npy_format_header(NPY_F32, 9, shape, buf, sizeof buf, &len, err, sizeof err), MXA_OK);
    assert_int_not_equal(npy_format_header(NPY_F32, 2, shape, buf, 20, &len, err, sizeof err), MXA_OK);
}

static int count_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* Write then read back every dtype at every rank 0..8. */
static void test_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/mxa_test_npy_XXXXXX", path[128], err[NPY_ERR_LEN];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/a.npy", dir);
    uint8_t data[4 * 512];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 3);
    for (int dtype = NPY_F32; dtype <= NPY_U8; dtype++)
        for (int rank = 0; rank <= NPY_MAX_RANK; rank++) {
            int64_t shape[NPY_MAX_RANK], count = 1;
            for (int i = 0; i < rank; i++) count *= shape[i] = 1 + (i % 3 == 0) + (i == rank - 1) * 3;
            assert_int_equal(npy_write(path, (npy_dtype)dtype, rank, shape, data, err, sizeof err), MXA_OK);
            npy_array a;
            if (npy_read(path, &a, err, sizeof err) != MXA_OK) {
                print_error("dtype %d rank %d: %s\n", dtype, rank, err);
                fail();
            }
            assert_int_equal(a.dtype, dtype);
            assert_int_equal(a.rank, rank);
            assert_int_equal(a.count, count);
            assert_memory_equal(a.shape, shape, (size_t)rank * sizeof shape[0]);
            assert_memory_equal(a.data, data, (size_t)count * npy_dtype_size((npy_dtype)dtype));
            npy_free(&a);
            assert_int_equal(count_entries(dir), 1); /* no temporary left behind */
        }
    /* An empty array round-trips too. */
    const int64_t empty[2] = {0, 4};
    assert_int_equal(npy_write(path, NPY_F32, 2, empty, NULL, err, sizeof err), MXA_OK);
    npy_array a;
    assert_int_equal(npy_read(path, &a, err, sizeof err), MXA_OK);
    assert_int_equal(a.count, 0);
    npy_free(&a);
    unlink(path);
    rmdir(dir);
}

static void write_bytes(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

static void test_read_errors(void **state)
{
    (void)state;
    char dir[] = "/tmp/mxa_test_npy_XXXXXX", path[128], err[NPY_ERR_LEN];
    npy_array a;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/missing.npy", dir);
    assert_int_equal(npy_read(path, &a, err, sizeof err), MXA_ERR_NOT_FOUND);
    assert_non_null(strstr(err, "No such file"));
    assert_int_not_equal(npy_read(dir, &a, err, sizeof err), MXA_OK);
    assert_non_null(strstr(err, "directory"));

    uint8_t buf[512];
    snprintf(path, sizeof path, "%s/bad.npy", dir);
    /* A header claiming 2^40 elements in a tiny file: refused before allocating. */
    size_t n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", "abcd", 4);
    write_bytes(path, buf, n);
    assert_int_equal(npy_read(path, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_non_null(strstr(err, "truncated"));
    /* Trailing garbage and truncation through the file path. */
    n = make_npy(buf, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", "abcdef", 6);
    write_bytes(path, buf, n);
    assert_int_equal(npy_read(path, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_non_null(strstr(err, "2 bytes of trailing garbage"));
    write_bytes(path, buf, n - 3);
    assert_int_equal(npy_read(path, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_non_null(strstr(err, "needs 4 data bytes, the file has 3"));
    write_bytes(path, buf, 30);
    assert_int_equal(npy_read(path, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_non_null(strstr(err, "header claims"));
    write_bytes(path, buf, 5);
    assert_int_equal(npy_read(path, &a, err, sizeof err), MXA_ERR_FORMAT);
    write_bytes(path, "hello world, not npy", 20);
    assert_int_equal(npy_read(path, &a, err, sizeof err), MXA_ERR_FORMAT);
    assert_non_null(strstr(err, "not a .npy file"));
    /* A FIFO without a writer is refused at once (alarm: a hang fails the test). */
    char fifo[160];
    snprintf(fifo, sizeof fifo, "%s/fifo.npy", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(20);
    assert_int_equal(npy_read(fifo, &a, err, sizeof err), MXA_ERR_IO);
    alarm(0);
    assert_non_null(strstr(err, "is a FIFO"));
    assert_null(a.data);
    unlink(fifo);
    assert_int_equal(npy_read("/dev/null", &a, err, sizeof err), MXA_ERR_IO);
    assert_non_null(strstr(err, "is a character device"));
    /* Version 1 with a header shorter than the 12 bytes read first. */
    n = make_npy(buf, 1, "", NULL, 0);
    write_bytes(path, buf, n);
    assert_int_equal(npy_read(path, &a, err, sizeof err), MXA_ERR_FORMAT);
    unlink(path);
    rmdir(dir);
}

static void test_writer_all_or_nothing(void **state)
{
    (void)state;
    char dir[] = "/tmp/mxa_test_npy_XXXXXX", path[160], err[NPY_ERR_LEN];
    const int64_t shape[1] = {4};
    const float data[4] = {1, 2, 3, 4};
    npy_pending p;
    assert_non_null(mkdtemp(dir));
    /* A missing directory: an error, and nothing created. */
    snprintf(path, sizeof path, "%s/nodir/out.npy", dir);
    assert_int_equal(npy_write(path, NPY_F32, 1, shape, data, err, sizeof err), MXA_ERR_IO);
    assert_non_null(strstr(err, "cannot create"));
    assert_int_equal(count_entries(dir), 0);
    /* Pending files are invisible until committed; discarding leaves nothing. */
    snprintf(path, sizeof path, "%s/out.npy", dir);
    assert_int_equal(npy_write_temp(path, NPY_F32, 1, shape, data, &p, err, sizeof err), MXA_OK);
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(count_entries(dir), 1);
    npy_discard(&p);
    assert_int_equal(count_entries(dir), 0);
    npy_discard(&p); /* twice is harmless */
    assert_int_equal(npy_write_temp(path, NPY_F32, 1, shape, data, &p, err, sizeof err), MXA_OK);
    assert_int_equal(npy_commit(&p, err, sizeof err), MXA_OK);
    assert_int_equal(access(path, F_OK), 0);
    assert_int_equal(count_entries(dir), 1);
    /* A directory as the target is refused before anything is written. */
    char sub[160];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    char inner[200];
    snprintf(inner, sizeof inner, "%s/x", sub);
    write_bytes(inner, "x", 1);
    assert_int_not_equal(npy_write_temp(sub, NPY_F32, 1, shape, data, &p, err, sizeof err), MXA_OK);
    assert_non_null(strstr(err, "is a directory"));
    assert_int_equal(count_entries(dir), 2); /* out.npy and sub, no temporary */
    /* Renaming fails when the directory goes away meanwhile: the error is reported. */
    char gone[200];
    snprintf(gone, sizeof gone, "%s/y.npy", sub);
    assert_int_equal(npy_write_temp(gone, NPY_F32, 1, shape, data, &p, err, sizeof err), MXA_OK);
    char temp[260];
    snprintf(temp, sizeof temp, "%s.tmp.%ld", gone, (long)getpid());
    assert_int_equal(access(temp, F_OK), 0);
    assert_int_equal(chmod(sub, 0500), 0);
    if (access(sub, W_OK) != 0) { /* not as root: root may rename in a read-only directory */
        assert_int_not_equal(npy_commit(&p, err, sizeof err), MXA_OK);
        assert_non_null(strstr(err, "cannot rename"));
    } else {
        npy_discard(&p);
    }
    assert_int_equal(chmod(sub, 0700), 0);
    unlink(gone);
    unlink(temp);
    /* Bad arguments. */
    assert_int_not_equal(npy_write(path, NPY_F32, 1, shape, NULL, err, sizeof err), MXA_OK);
    assert_int_not_equal(npy_write("", NPY_F32, 1, shape, data, err, sizeof err), MXA_OK);
    assert_int_not_equal(npy_write(path, (npy_dtype)7, 1, shape, data, err, sizeof err), MXA_OK);
    unlink(inner);
    rmdir(sub);
    unlink(path);
    rmdir(dir);
}

static int exists(const char *dir, const char *name)
{
    char p[300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* A fatal signal while an output is pending removes its temporary file. */
static void test_signal_removes_temp(void **state)
{
    (void)state;
    const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
    char dir[] = "/tmp/mxa_test_npy_XXXXXX", path[160];
    const int64_t shape[1] = {4};
    const float data[4] = {1, 2, 3, 4};
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.npy", dir);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        const pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
            npy_pending p;
            char err[NPY_ERR_LEN];
            if (npy_write_temp(path, NPY_F32, 1, shape, data, &p, err, sizeof err) != MXA_OK) _exit(3);
            if (count_entries(dir) != 1) _exit(4); /* the temporary exists */
            raise(sigs[i]);
            _exit(5); /* not reached: the signal kills */
        }
        int status = 0;
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), sigs[i]);
        assert_int_equal(count_entries(dir), 0);
    }
    rmdir(dir);
}

/* A file-size limit fails the write (EFBIG) instead of killing the process, and leaves nothing. */
static void test_file_size_limit(void **state)
{
    (void)state;
    char dir[] = "/tmp/mxa_test_npy_XXXXXX", path[160];
    static float data[4096];
    const int64_t shape[1] = {4096};
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.npy", dir);
    const pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        char err[NPY_ERR_LEN];
        struct rlimit lim = {1024, 1024};
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(3);
        if (npy_write(path, NPY_F32, 1, shape, data, err, sizeof err) != MXA_ERR_IO) _exit(4);
        _exit(strstr(err, "cannot write: File too large") ? 0 : 5);
    }
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(count_entries(dir), 0);
    rmdir(dir);
}

/* Stale temporaries of the target whose pid is gone are removed; others stay. */
static void test_stale_temps(void **state)
{
    (void)state;
    char dir[] = "/tmp/mxa_test_npy_XXXXXX", path[160], name[300], err[NPY_ERR_LEN];
    const int64_t shape[1] = {4};
    const float data[4] = {1, 2, 3, 4};
    assert_non_null(mkdtemp(dir));
    const pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0) _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    const char *names[] = {"out.npy.tmp.%ld", "out.npy.tmp.1", "out.npy.tmp.x%ld", "other.npy.tmp.%ld"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char base[64];
        snprintf(base, sizeof base, names[i], (long)dead);
        snprintf(name, sizeof name, "%s/%s", dir, base);
        write_bytes(name, "x", 1);
    }
    /* Our own pid's name: stale by definition; a link there must not be followed. */
    char victim[200];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    write_bytes(victim, "keep", 4);
    snprintf(name, sizeof name, "%s/out.npy.tmp.%ld", dir, (long)getpid());
    assert_int_equal(symlink(victim, name), 0);
    snprintf(path, sizeof path, "%s/out.npy", dir);
    assert_int_equal(npy_write(path, NPY_F32, 1, shape, data, err, sizeof err), MXA_OK);
    char base[64];
    snprintf(base, sizeof base, "out.npy.tmp.%ld", (long)dead);
    assert_false(exists(dir, base));                   /* dead pid: removed */
    assert_true(exists(dir, "out.npy.tmp.1"));         /* init is alive */
    snprintf(base, sizeof base, "out.npy.tmp.x%ld", (long)dead);
    assert_true(exists(dir, base));                    /* not a pid */
    snprintf(base, sizeof base, "other.npy.tmp.%ld", (long)dead);
    assert_true(exists(dir, base));                    /* another target's */
    assert_false(exists(dir, "out.npy.tmp.0"));
    snprintf(base, sizeof base, "out.npy.tmp.%ld", (long)getpid());
    assert_false(exists(dir, base));
    FILE *f = fopen(victim, "rb");
    char got[8] = "";
    assert_non_null(f);
    assert_int_equal(fread(got, 1, sizeof got, f), 4);
    fclose(f);
    assert_memory_equal(got, "keep", 4);
    /* clean up whatever is left */
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') {
            snprintf(name, sizeof name, "%s/%s", dir, e->d_name);
            unlink(name);
        }
    if (d) closedir(d);
    rmdir(dir);
}

/* float64 is read as float32, rounded to nearest; a finite value that would round to Inf is refused. */
static void test_float64_narrowed(void **state)
{
    (void)state;
    const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }";
    const double ok[6] = {1.0 / 3.0, -2.5, 0x1.fffffefffffffp+127 /* rounds down to FLT_MAX */, 1e-50, INFINITY, NAN};
    uint8_t buf[512];
    char err[NPY_ERR_LEN];
    npy_array a;
    size_t n = make_npy(buf, 1, dict, ok, sizeof ok);
    assert_int_equal(npy_parse(buf, n, &a, err, sizeof err), MXA_OK);
    assert_int_equal(a.dtype, NPY_F32);
    assert_int_equal(a.file_dtype, NPY_F64);
    const float *f = a.data;
    assert_true(f[0] == (float)(1.0 / 3.0) && f[1] == -2.5f && f[2] == FLT_MAX && f[3] == 0.0f);
    assert_true(isinf(f[4]) && isnan(f[5])); /* passed on: the library rejects them with its message */
    npy_free(&a);
    const double over[2][2] = {{1.0, 0x1.ffffffp+127}, {-1e39, 0.0}}; /* FLT_MAX + half an ulp rounds to Inf */
    for (int i = 0; i < 2; i++) {
        const char *d2 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
        n = make_npy(buf, 1, d2, over[i], sizeof over[i]);
        assert_int_equal(npy_parse(buf, n, &a, err, sizeof err), MXA_ERR_NON_FINITE);
        assert_null(a.data);
        assert_non_null(strstr(err, i ? "element 0 is -1e+39, beyond float32's range" : "element 1 is"));
    }
    /* float32 files keep their dtype as the file's. */
    n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "\0\0\x80\x3f", 4);
    assert_int_equal(npy_parse(buf, n, &a, err, sizeof err), MXA_OK);
    assert_int_equal(a.file_dtype, NPY_F32);
    npy_free(&a);
}

static void test_names(void **state)
{
    (void)state;
    char buf[64];
    const int64_t s[3] = {1, 22, 333};
    npy_shape_string(0, s, buf, sizeof buf);
    assert_string_equal(buf, "()");
    npy_shape_string(1, s, buf, sizeof buf);
    assert_string_equal(buf, "(1,)");
    npy_shape_string(3, s, buf, sizeof buf);
    assert_string_equal(buf, "(1, 22, 333)");
    npy_shape_string(3, s, buf, 6); /* truncates safely */
    assert_int_equal(strlen(buf), 5);
    assert_string_equal(npy_dtype_name(NPY_F16), "float16");
    assert_int_equal(npy_dtype_size(NPY_U8), 1);
    assert_int_equal(npy_dtype_size((npy_dtype)9), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_forms),
        cmocka_unit_test(test_header_errors),
        cmocka_unit_test(test_preamble_errors),
        cmocka_unit_test(test_format_header_matches_numpy),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_read_errors),
        cmocka_unit_test(test_writer_all_or_nothing),
        cmocka_unit_test(test_signal_removes_temp),
        cmocka_unit_test(test_file_size_limit),
        cmocka_unit_test(test_stale_temps),
        cmocka_unit_test(test_float64_narrowed),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
