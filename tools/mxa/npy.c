/*
 * The .npy reader and writer (see npy.h). The header is a Python dict literal;
 * we accept exactly what numpy writes for our dtypes (keys 'descr',
 * 'fortran_order', 'shape', any order, once each) and refuse everything else
 * with a message, never guessing.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy.h"

static const uint8_t npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* Each element is stored little-endian; swap on a big-endian host. */
static int host_is_big_endian(void)
{
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first == 0;
}

static void swap_bytes(void *data, int64_t count, size_t size)
{
    uint8_t *p = data;
    if (size < 2) return;
    for (int64_t i = 0; i < count; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static mxa_status fail(mxa_status st, char *err, size_t size, const char *fmt, ...)
{
    if (err && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return st;
}

size_t npy_dtype_size(npy_dtype dtype)
{
    switch (dtype) {
    case NPY_F32: return 4;
    case NPY_F16: return 2;
    case NPY_U8: return 1;
    case NPY_F64: return 8;
    case NPY_BOOL: return 1;
    }
    return 0;
}

const char *npy_dtype_name(npy_dtype dtype)
{
    switch (dtype) {
    case NPY_F32: return "float32";
    case NPY_F16: return "float16";
    case NPY_U8: return "uint8";
    case NPY_F64: return "float64";
    case NPY_BOOL: return "bool";
    }
    return "unknown";
}

static const char *dtype_descr(npy_dtype dtype)
{
    switch (dtype) {
    case NPY_F32: return "<f4";
    case NPY_F16: return "<f2";
    case NPY_U8: return "|u1";
    case NPY_F64: return "<f8";
    case NPY_BOOL: return "|b1";
    }
    return "?";
}

void npy_shape_string(int rank, const int64_t *shape, char *buf, size_t size)
{
    size_t at = 0;
    if (!size) return;
    buf[0] = '\0';
    at += (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < rank && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (at < size) snprintf(buf + at, size - at, rank == 1 ? ",)" : ")");
}

void npy_free(npy_array *a)
{
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ------------------------------------------------------------ header parse */

typedef struct cursor {
    const char *p, *end;
    char *err;
    size_t err_size;
} cursor;

static void skip_space(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* Skips blanks, then consumes `ch` if it comes next. */
static int accept(cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* What the cursor is looking at, for messages. */
static const char *seen(const cursor *c, char *buf, size_t size)
{
    if (c->p >= c->end) return "the end of the header";
    unsigned char ch = (unsigned char)*c->p;
    if (ch >= 0x20 && ch < 0x7f) snprintf(buf, size, "'%c'", ch);
    else snprintf(buf, size, "byte 0x%02x", ch);
    return buf;
}

static mxa_status syntax(cursor *c, const char *expected)
{
    char buf[16];
    return fail(MXA_ERR_FORMAT, c->err, c->err_size, "malformed header: expected %s, found %s", expected,
                seen(c, buf, sizeof buf));
}

/* A quoted string without escapes (numpy never writes them in our keys). */
static mxa_status parse_string(cursor *c, char *out, size_t size, const char *what)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return syntax(c, what);
    const char quote = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != quote) {
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '\\' || ch < 0x20 || ch >= 0x7f || n + 1 >= size)
            return fail(MXA_ERR_FORMAT, c->err, c->err_size, "malformed header: unexpected text in %s", what);
        out[n++] = (char)ch;
        c->p++;
    }
    if (c->p >= c->end) return fail(MXA_ERR_FORMAT, c->err, c->err_size, "malformed header: unterminated %s", what);
    c->p++;
    out[n] = '\0';
    return MXA_OK;
}

static mxa_status parse_bool(cursor *c, int *out)
{
    skip_space(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && memcmp(c->p, "True", 4) == 0) {
        c->p += 4;
        *out = 1;
    } else if (left >= 5 && memcmp(c->p, "False", 5) == 0) {
        c->p += 5;
        *out = 0;
    } else {
        return syntax(c, "True or False for 'fortran_order'");
    }
    return MXA_OK;
}

/* A shape tuple: "()", "(5,)", "(2, 3)", "(2, 3,)"; Python 2's "3L" too. */
static mxa_status parse_shape(cursor *c, npy_array *a)
{
    if (!accept(c, '(')) return syntax(c, "a tuple such as (2, 3) for 'shape'");
    a->rank = 0;
    if (accept(c, ')')) return MXA_OK;
    for (;;) {
        skip_space(c);
        if (c->p < c->end && *c->p == '-')
            return fail(MXA_ERR_FORMAT, c->err, c->err_size, "malformed header: negative dimension in 'shape'");
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') return syntax(c, "a dimension (a non-negative integer)");
        int64_t dim = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            dim = dim * 10 + (*c->p++ - '0');
            if (dim > ((int64_t)1 << 48))
                return fail(MXA_ERR_FORMAT, c->err, c->err_size, "dimension %d of 'shape' is too large", a->rank);
        }
        if (c->p < c->end && *c->p == 'L') c->p++;
        if (a->rank == NPY_MAX_RANK)
            return fail(MXA_ERR_FORMAT, c->err, c->err_size, "'shape' has more than %d dimensions", NPY_MAX_RANK);
        a->shape[a->rank++] = dim;
        if (accept(c, ',')) {
            if (accept(c, ')')) return MXA_OK;
            continue;
        }
        if (accept(c, ')')) {
            if (a->rank == 1)
                return fail(MXA_ERR_FORMAT, c->err, c->err_size,
                            "malformed header: 'shape' (%lld) is not a tuple (numpy writes (%lld,))",
                            (long long)dim, (long long)dim);
            return MXA_OK;
        }
        return syntax(c, "',' or ')' in 'shape'");
    }
}

static mxa_status parse_descr(cursor *c, npy_array *a)
{
    char descr[64];
    mxa_status st = parse_string(c, descr, sizeof descr, "a string for 'descr'");
    if (st) return st;
    for (int t = NPY_F32; t <= NPY_BOOL; t++)
        if (strcmp(descr, dtype_descr((npy_dtype)t)) == 0) {
            a->dtype = (npy_dtype)t;
            return MXA_OK;
        }
    return fail(MXA_ERR_FORMAT, c->err, c->err_size,
                "unsupported dtype '%s' (mxa reads '<f4' float32, '<f2' float16, '<f8' float64, '|u1' uint8 and '|b1' bool)",
                descr);
}

/* The header dictionary: every key once, nothing else, blanks after it. */
static mxa_status parse_dict(cursor *c, npy_array *a)
{
    mxa_status st;
    int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
    if (!accept(c, '{')) return syntax(c, "'{' (the header is a Python dict)");
    while (!accept(c, '}')) {
        char key[32];
        if ((st = parse_string(c, key, sizeof key, "a quoted key or '}'"))) return st;
        if (!accept(c, ':')) return syntax(c, "':' after a key");
        int *have;
        if (strcmp(key, "descr") == 0) {
            have = &have_descr;
            st = parse_descr(c, a);
        } else if (strcmp(key, "fortran_order") == 0) {
            have = &have_order;
            st = parse_bool(c, &fortran);
        } else if (strcmp(key, "shape") == 0) {
            have = &have_shape;
            st = parse_shape(c, a);
        } else {
            return fail(MXA_ERR_FORMAT, c->err, c->err_size, "malformed header: unexpected key '%s'", key);
        }
        if (st) return st;
        if (*have) return fail(MXA_ERR_FORMAT, c->err, c->err_size, "malformed header: key '%s' appears twice", key);
        *have = 1;
        if (accept(c, ',')) continue;
        if (accept(c, '}')) break;
        return syntax(c, "',' or '}' after a value");
    }
    skip_space(c);
    if (c->p != c->end) return syntax(c, "only blanks after the header dict");
    if (!have_descr || !have_order || !have_shape)
        return fail(MXA_ERR_FORMAT, c->err, c->err_size, "malformed header: the key '%s' is missing",
                    !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    if (fortran)
        return fail(MXA_ERR_FORMAT, c->err, c->err_size,
                    "Fortran-order (column-major) arrays are not supported; save np.ascontiguousarray(x)");
    return MXA_OK;
}

/* Magic, version and header length: the bytes before the dict. */
static mxa_status parse_prelude(const uint8_t *b, size_t size, size_t *prelude, size_t *hlen, char *err,
                                size_t err_size)
{
    if (size == 0) return fail(MXA_ERR_FORMAT, err, err_size, "the file is empty, not a .npy file");
    if (memcmp(b, npy_magic, size < 6 ? size : 6) != 0)
        return fail(MXA_ERR_FORMAT, err, err_size, "not a .npy file (it does not start with \\x93NUMPY)");
    if (size < 10) return fail(MXA_ERR_FORMAT, err, err_size, "truncated: the file ends inside the .npy preamble");
    if (b[6] < 1 || b[6] > 3 || b[7] != 0)
        return fail(MXA_ERR_FORMAT, err, err_size, "unsupported .npy format version %u.%u (mxa reads 1.0, 2.0, 3.0)",
                    b[6], b[7]);
    if (b[6] == 1) {
        *prelude = 10;
        *hlen = (size_t)b[8] | (size_t)b[9] << 8;
    } else {
        if (size < 12) return fail(MXA_ERR_FORMAT, err, err_size, "truncated: the file ends inside the .npy preamble");
        *prelude = 12;
        *hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    }
    if (*hlen > NPY_MAX_HEADER)
        return fail(MXA_ERR_FORMAT, err, err_size, "the header is %zu bytes, above the limit of %d", *hlen,
                    NPY_MAX_HEADER);
    return MXA_OK;
}

/* Parses the dict of `hlen` bytes and fills the metadata of `a` (no data). */
static mxa_status parse_header(const uint8_t *h, size_t hlen, npy_array *a, char *err, size_t err_size)
{
    cursor c = {(const char *)h, (const char *)h + hlen, err, err_size};
    memset(a, 0, sizeof *a);
    mxa_status st = parse_dict(&c, a);
    if (st) return st;
    int64_t count = 1;
    for (int i = 0; i < a->rank; i++) {
        /* dims are <= 2^48; keep count * 4 well inside int64 and size_t */
        if (a->shape[i] && count > (INT64_MAX / 8) / a->shape[i]) {
            char shape[160];
            npy_shape_string(a->rank, a->shape, shape, sizeof shape);
            return fail(MXA_ERR_FORMAT, err, err_size, "shape %s has too many elements", shape);
        }
        count *= a->shape[i];
    }
    if ((uint64_t)count * npy_dtype_size(a->dtype) > (uint64_t)SIZE_MAX)
        return fail(MXA_ERR_FORMAT, err, err_size, "the array is too large for this machine");
    a->count = count;
    return MXA_OK;
}

static mxa_status data_size_error(const npy_array *a, uint64_t have, char *err, size_t err_size)
{
    char shape[160];
    const uint64_t want = (uint64_t)a->count * npy_dtype_size(a->dtype);
    npy_shape_string(a->rank, a->shape, shape, sizeof shape);
    if (have < want)
        return fail(MXA_ERR_FORMAT, err, err_size, "truncated: %s %s needs %llu data bytes, the file has %llu",
                    npy_dtype_name(a->dtype), shape, (unsigned long long)want, (unsigned long long)have);
    return fail(MXA_ERR_FORMAT, err, err_size, "%llu bytes of trailing garbage after the %s %s data",
                (unsigned long long)(have - want), npy_dtype_name(a->dtype), shape);
}

/* float64 data (already in host order) to float32, once. Rounds to nearest; a
 * finite value that would round to Inf is refused (checked before the cast,
 * which C leaves undefined out of range). NaN and Inf pass: callers reject them. */
static mxa_status narrow_f64(npy_array *a, char *err, size_t err_size)
{
    const double *d = a->data, limit = 0x1.ffffffp+127; /* FLT_MAX + half an ulp: rounds to Inf */
    float *f = malloc(a->count ? (size_t)a->count * sizeof(float) : 1);
    if (!f) return fail(MXA_ERR_OUT_OF_MEMORY, err, err_size, "out of memory converting float64 to float32");
    for (int64_t i = 0; i < a->count; i++) {
        if (isfinite(d[i]) && fabs(d[i]) >= limit) {
            free(f);
            return fail(MXA_ERR_NON_FINITE, err, err_size,
                        "element %lld is %.9g, beyond float32's range (float64 input is converted to float32)",
                        (long long)i, d[i]);
        }
        f[i] = (float)d[i];
    }
    free(a->data);
    a->data = f;
    a->dtype = NPY_F32;
    a->file_dtype = NPY_F64;
    return MXA_OK;
}

/* The last step of reading: byte order, then float64 narrowed. */
static mxa_status finish_data(npy_array *a, char *err, size_t err_size)
{
    if (host_is_big_endian()) swap_bytes(a->data, a->count, npy_dtype_size(a->dtype));
    a->file_dtype = a->dtype;
    return a->dtype == NPY_F64 ? narrow_f64(a, err, err_size) : MXA_OK;
}

mxa_status npy_parse(const uint8_t *bytes, size_t size, npy_array *out, char *err, size_t err_size)
{
    size_t prelude, hlen;
    mxa_status st;
    if (!out) return fail(MXA_ERR_INVALID_ARGUMENT, err, err_size, "npy_parse: out is NULL");
    memset(out, 0, sizeof *out);
    if (!bytes && size) return fail(MXA_ERR_INVALID_ARGUMENT, err, err_size, "npy_parse: bytes is NULL");
    if ((st = parse_prelude(bytes, size, &prelude, &hlen, err, err_size))) return st;
    if (hlen > size - prelude)
        return fail(MXA_ERR_FORMAT, err, err_size, "truncated: the header claims %zu bytes, only %zu follow", hlen,
                    size - prelude);
    npy_array a;
    if ((st = parse_header(bytes + prelude, hlen, &a, err, err_size))) return st;
    const size_t nbytes = (size_t)a.count * npy_dtype_size(a.dtype), have = size - prelude - hlen;
    if (have != nbytes) return data_size_error(&a, have, err, err_size);
    a.data = malloc(nbytes ? nbytes : 1);
    if (!a.data) return fail(MXA_ERR_OUT_OF_MEMORY, err, err_size, "out of memory (%zu bytes)", nbytes);
    memcpy(a.data, bytes + prelude + hlen, nbytes);
    if ((st = finish_data(&a, err, err_size))) {
        npy_free(&a);
        return st;
    }
    *out = a;
    return MXA_OK;
}

mxa_status npy_read(const char *path, npy_array *out, char *err, size_t err_size)
{
    mxa_status st = MXA_OK;
    uint8_t *head = NULL;
    npy_array a;
    memset(&a, 0, sizeof a);
    if (!out || !path) return fail(MXA_ERR_INVALID_ARGUMENT, err, err_size, "npy_read: NULL argument");
    memset(out, 0, sizeof *out);
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are read. */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return fail(errno == ENOENT ? MXA_ERR_NOT_FOUND : MXA_ERR_IO, err, err_size, "cannot open: %s", strerror(errno));
    struct stat sb;
    const char *kind = NULL;
    if (fstat(fd, &sb) != 0) kind = "cannot be examined (fstat failed)";
    else if (S_ISDIR(sb.st_mode)) kind = "is a directory";
    else if (S_ISFIFO(sb.st_mode)) kind = "is a FIFO (named pipe)";
    else if (S_ISCHR(sb.st_mode)) kind = "is a character device";
    else if (S_ISBLK(sb.st_mode)) kind = "is a block device";
    else if (S_ISSOCK(sb.st_mode)) kind = "is a socket";
    else if (!S_ISREG(sb.st_mode)) kind = "is not a regular file";
    FILE *f = kind ? NULL : fdopen(fd, "rb");
    if (!f) {
        if (kind) st = fail(MXA_ERR_IO, err, err_size, "%s, not a .npy file (mxa reads regular files only)", kind);
        else st = fail(MXA_ERR_IO, err, err_size, "cannot open: %s", strerror(errno));
        close(fd);
        return st;
    }
    uint8_t pre[12];
    size_t got = fread(pre, 1, sizeof pre, f), prelude, hlen;
    if (ferror(f)) {
        st = fail(MXA_ERR_IO, err, err_size, "cannot read: %s", strerror(errno));
        goto out;
    }
    if ((st = parse_prelude(pre, got, &prelude, &hlen, err, err_size))) goto out;
    /* The dict starts inside the 12 bytes already read for a version 1 file. */
    head = malloc(prelude + hlen + 1);
    if (!head) {
        st = fail(MXA_ERR_OUT_OF_MEMORY, err, err_size, "out of memory reading the header");
        goto out;
    }
    size_t have = got < prelude + hlen ? got : prelude + hlen;
    memcpy(head, pre, have);
    if (have < got && fseek(f, (long)(prelude + hlen), SEEK_SET) != 0) {
        st = fail(MXA_ERR_IO, err, err_size, "cannot seek: %s", strerror(errno));
        goto out;
    }
    if (have < prelude + hlen) have += fread(head + have, 1, prelude + hlen - have, f);
    if (have < prelude + hlen) {
        st = fail(MXA_ERR_FORMAT, err, err_size, "truncated: the header claims %zu bytes, only %zu follow", hlen,
                  have - prelude);
        goto out;
    }
    if ((st = parse_header(head + prelude, hlen, &a, err, err_size))) goto out;
    const size_t nbytes = (size_t)a.count * npy_dtype_size(a.dtype);
    /* Check the file's size before allocating what its header claims. */
    if ((uint64_t)sb.st_size != (uint64_t)(prelude + hlen) + nbytes) {
        uint64_t rest = (uint64_t)sb.st_size > prelude + hlen ? (uint64_t)sb.st_size - (prelude + hlen) : 0;
        st = data_size_error(&a, rest, err, err_size);
        goto out;
    }
    a.data = malloc(nbytes ? nbytes : 1);
    if (!a.data) {
        st = fail(MXA_ERR_OUT_OF_MEMORY, err, err_size, "out of memory (%zu bytes of data)", nbytes);
        goto out;
    }
    size_t n = fread(a.data, 1, nbytes, f);
    uint64_t extra = 0;
    uint8_t sink[4096];
    for (size_t k; (k = fread(sink, 1, sizeof sink, f)) > 0;) extra += k;
    if (ferror(f)) {
        st = fail(MXA_ERR_IO, err, err_size, "cannot read: %s", strerror(errno));
        goto out;
    }
    if (n != nbytes || extra) {
        st = data_size_error(&a, n + extra, err, err_size);
        goto out;
    }
    if ((st = finish_data(&a, err, err_size))) goto out;
    *out = a;
    memset(&a, 0, sizeof a);
out:
    npy_free(&a);
    free(head);
    fclose(f);
    return st;
}

/* ------------------------------------------------------------------ write */

mxa_status npy_format_header(npy_dtype dtype, int rank, const int64_t *shape, uint8_t *buf, size_t size,
                             size_t *len, char *err, size_t err_size)
{
    if (npy_dtype_size(dtype) == 0) return fail(MXA_ERR_INVALID_ARGUMENT, err, err_size, "unknown dtype %d", (int)dtype);
    if (rank < 0 || rank > NPY_MAX_RANK || (rank && !shape))
        return fail(MXA_ERR_INVALID_ARGUMENT, err, err_size, "rank %d is outside 0..%d", rank, NPY_MAX_RANK);
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0) return fail(MXA_ERR_INVALID_ARGUMENT, err, err_size, "negative dimension %d", i);
    char dict[400], shp[NPY_MAX_RANK * 24 + 8];
    npy_shape_string(rank, shape, shp, sizeof shp);
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", dtype_descr(dtype),
                     shp);
    /* numpy's layout: pad with blanks and a final newline to a multiple of 64 */
    size_t hlen = (size_t)n + 1, total = 10 + hlen;
    total += (64 - total % 64) % 64;
    hlen = total - 10;
    if (!buf || total > size) return fail(MXA_ERR_INVALID_ARGUMENT, err, err_size, "header buffer too small");
    memcpy(buf, npy_magic, 6);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (uint8_t)(hlen & 0xff);
    buf[9] = (uint8_t)(hlen >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    memset(buf + 10 + n, ' ', hlen - (size_t)n - 1);
    buf[total - 1] = '\n';
    *len = total;
    return MXA_OK;
}

static int write_data(outfile *f, const void *data, int64_t count, size_t esize, char *err, size_t err_size)
{
    if (!host_is_big_endian()) return outfile_write(f, data, (size_t)count * esize, err, err_size);
    uint8_t chunk[4096];
    const int64_t per = (int64_t)(sizeof chunk / esize);
    for (int64_t i = 0; i < count; i += per) {
        int64_t k = count - i < per ? count - i : per;
        memcpy(chunk, (const uint8_t *)data + i * (int64_t)esize, (size_t)k * esize);
        swap_bytes(chunk, k, esize);
        if (outfile_write(f, chunk, (size_t)k * esize, err, err_size)) return -1;
    }
    return 0;
}

void npy_discard(npy_pending *p)
{
    if (p) outfile_discard(&p->file);
}

mxa_status npy_write_temp(const char *path, npy_dtype dtype, int rank, const int64_t *shape, const void *data,
                          npy_pending *p, char *err, size_t err_size)
{
    mxa_status st;
    uint8_t header[512];
    size_t hlen;
    if (!p || !path || !*path) return fail(MXA_ERR_INVALID_ARGUMENT, err, err_size, "npy_write_temp: no path");
    memset(p, 0, sizeof *p);
    if ((st = npy_format_header(dtype, rank, shape, header, sizeof header, &hlen, err, err_size))) return st;
    int64_t count = 1;
    for (int i = 0; i < rank; i++) count *= shape[i];
    if (count && !data) return fail(MXA_ERR_INVALID_ARGUMENT, err, err_size, "npy_write_temp: data is NULL");
    if (outfile_open(path, &p->file, err, err_size)) return MXA_ERR_IO;
    if (outfile_write(&p->file, header, hlen, err, err_size) ||
        write_data(&p->file, data, count, npy_dtype_size(dtype), err, err_size) ||
        outfile_close(&p->file, err, err_size)) {
        outfile_discard(&p->file);
        return MXA_ERR_IO;
    }
    return MXA_OK;
}

mxa_status npy_commit(npy_pending *p, char *err, size_t err_size)
{
    if (!p || !p->file.path) return fail(MXA_ERR_INVALID_ARGUMENT, err, err_size, "npy_commit: nothing pending");
    return outfile_commit(&p->file, err, err_size) ? MXA_ERR_IO : MXA_OK;
}

mxa_status npy_write(const char *path, npy_dtype dtype, int rank, const int64_t *shape, const void *data, char *err,
                     size_t err_size)
{
    npy_pending p;
    mxa_status st = npy_write_temp(path, dtype, rank, shape, data, &p, err, err_size);
    return st ? st : npy_commit(&p, err, err_size);
}
