/*
 * The .npy format (numpy's np.save/np.load), the CLI's interchange format.
 *
 * Reads versions 1.0, 2.0 and 3.0 with dtypes '<f4', '<f2', '|u1', '|b1' and '<f8'
 * in C order, validating the header dictionary strictly. float64 (numpy's
 * default) is converted once to float32, the widest type the library takes; a
 * finite value beyond float32's range is an error, never a silent Inf. writes version 1.0 (2.0
 * when the header needs it) byte-for-byte as numpy does. Every failure
 * returns a status and one line in `err` saying what is wrong (without the
 * file name: callers print "mxa: <file>: <err>").
 */
#ifndef MXA_TOOLS_NPY_H
#define MXA_TOOLS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "mxa/mxa.h"
#include "outfile.h"

#define NPY_MAX_RANK 8
#define NPY_MAX_HEADER (64 * 1024) /* longer headers are rejected, not parsed */
#define NPY_ERR_LEN 256

typedef enum npy_dtype { NPY_F32 = 0, NPY_F16 = 1, NPY_U8 = 2, NPY_F64 = 3, NPY_BOOL = 4 /* '|b1', one byte */ } npy_dtype;

typedef struct npy_array {
    npy_dtype dtype;               /* never NPY_F64: float64 is narrowed to float32 on reading */
    npy_dtype file_dtype;          /* the dtype stored in the file (NPY_F64 for a narrowed array) */
    int rank;                      /* 0 for a scalar */
    int64_t shape[NPY_MAX_RANK];
    int64_t count;                 /* product of the shape (1 for a scalar) */
    void *data;                    /* count elements, host byte order; owned */
} npy_array;

/* A file written to a temporary name, waiting to be renamed into place
 * (where the data goes, and what happens to links and devices: outfile.h). */
typedef struct npy_pending {
    outfile file;
} npy_pending;

/** Bytes per element of `dtype`. */
size_t npy_dtype_size(npy_dtype dtype);

/** "float32", "float16", "uint8", "float64" or "bool". */
const char *npy_dtype_name(npy_dtype dtype);

/** Writes a shape as numpy prints it: "()", "(5,)", "(2, 3)". */
void npy_shape_string(int rank, const int64_t *shape, char *buf, size_t size);

/**
 * Parses a whole .npy file held in memory. On success `out` owns a copy of
 * the data (free with npy_free); on failure `out` is empty. Use this when the
 * bytes are already in memory (tests, fuzzing); npy_read wraps it for files.
 */
mxa_status npy_parse(const uint8_t *bytes, size_t size, npy_array *out, char *err, size_t err_size);

/** Reads and parses the .npy file at `path` (see npy_parse). */
mxa_status npy_read(const char *path, npy_array *out, char *err, size_t err_size);

/** Frees the data of an array and empties it. Safe on an empty array. */
void npy_free(npy_array *a);

/**
 * Formats the magic, version, header length and header dictionary of an
 * array into `buf` (at most `size` bytes); `*len` receives the length, a
 * multiple of 64 as numpy writes it.
 */
mxa_status npy_format_header(npy_dtype dtype, int rank, const int64_t *shape, uint8_t *buf,
                             size_t size, size_t *len, char *err, size_t err_size);

/**
 * Writes an array to a temporary file beside `path` (see outfile.h) and records it in `p`; nothing is
 * visible at `path` until npy_commit. On failure the temporary file is gone
 * and `p` is empty.
 */
mxa_status npy_write_temp(const char *path, npy_dtype dtype, int rank, const int64_t *shape,
                          const void *data, npy_pending *p, char *err, size_t err_size);

/** Renames a pending file into place; on failure removes it. Empties `p`. */
mxa_status npy_commit(npy_pending *p, char *err, size_t err_size);

/** Removes a pending file (if any) and empties `p`. Safe on an empty `p`. */
void npy_discard(npy_pending *p);

/** npy_write_temp then npy_commit: the file is written completely or not at all. */
mxa_status npy_write(const char *path, npy_dtype dtype, int rank, const int64_t *shape,
                     const void *data, char *err, size_t err_size);

#endif
