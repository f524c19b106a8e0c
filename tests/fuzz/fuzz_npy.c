/*
 * libFuzzer target: the .npy reader of the CLI (tools/mxa/npy.c).
 * Invariants: no crash, leak or undefined behaviour; a failure leaves no data
 * and one non-empty line of message; a success round-trips through the
 * writer's header; reading the same bytes from a file gives the same answer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/mxa/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_failure(const npy_array *a, const char *err)
{
    if (a->data || !err[0] || strchr(err, '\n')) abort();
}

static int same_array(const npy_array *a, const npy_array *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->count != b->count) return 0;
    if (memcmp(a->shape, b->shape, (size_t)a->rank * sizeof a->shape[0]) != 0) return 0;
    return memcmp(a->data, b->data, (size_t)a->count * npy_dtype_size(a->dtype)) == 0;
}

/* The same bytes through npy_read, from a new file of this process (mkstemp in
 * $TMPDIR: no fixed name another process or user could own or race). */
static void check_file_path(const uint8_t *data, size_t size, const npy_array *parsed, mxa_status parsed_st)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/fuzz_npy.XXXXXX", dir && *dir ? dir : "/tmp");
    const int fd = mkstemp(path);
    if (fd < 0) abort(); /* a check skipped silently would pass for nothing */
    for (size_t done = 0; done < size;) {
        const ssize_t k = write(fd, data + done, size - done);
        if (k <= 0) abort();
        done += (size_t)k;
    }
    close(fd);
    npy_array r;
    char err[NPY_ERR_LEN] = "";
    mxa_status st = npy_read(path, &r, err, sizeof err);
    unlink(path);
    if ((st == MXA_OK) != (parsed_st == MXA_OK)) abort();
    if (st != MXA_OK) {
        check_failure(&r, err);
        return;
    }
    if (!same_array(&r, parsed)) abort();
    npy_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    npy_array a;
    char err[NPY_ERR_LEN] = "";
    mxa_status st = npy_parse(data, size, &a, err, sizeof err);
    check_file_path(data, size, &a, st);
    if (st != MXA_OK) {
        check_failure(&a, err);
        return 0;
    }
    if (a.rank < 0 || a.rank > NPY_MAX_RANK || !a.data || npy_dtype_size(a.dtype) == 0) abort();
    int64_t count = 1;
    for (int i = 0; i < a.rank; i++) count *= a.shape[i];
    if (count != a.count) abort();

    /* Write the header the way the CLI does, append the data, parse again. */
    uint8_t header[512];
    size_t hlen;
    if (npy_format_header(a.dtype, a.rank, a.shape, header, sizeof header, &hlen, err, sizeof err) != MXA_OK) abort();
    const size_t nbytes = (size_t)a.count * npy_dtype_size(a.dtype);
    uint8_t *copy = malloc(hlen + nbytes);
    if (!copy) abort();
    memcpy(copy, header, hlen);
    memcpy(copy + hlen, a.data, nbytes);
    npy_array b;
    if (npy_parse(copy, hlen + nbytes, &b, err, sizeof err) != MXA_OK || !same_array(&a, &b)) abort();
    npy_free(&b);
    free(copy);
    npy_free(&a);
    return 0;
}
