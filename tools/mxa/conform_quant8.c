/*
 * mxa conform: MXFP8 quantization on the device (mxa_quantize_mxfp8), bit-exact
 * against an exact host model written here from the format's definition (E4M3
 * values as a table built from sign, exponent and mantissa; the shared exponent
 * floor(log2 M) - 8; nearest value, ties to the even code, saturating at 448):
 * seeded random blocks of every magnitude, every code and every midpoint +-1 ulp
 * under scales across the E8M0 range, a tail, a device buffer.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

/* ------------------------------------------------------------ host model */

/* The 127 finite E4M3 magnitudes in units of 2^-9, in code order (increasing). */
static double e4m3_units(int code)
{
    const int e = code >> 3, m = code & 7;
    return e == 0 ? m : (8.0 + m) * ldexp(1.0, e - 1);
}

int conform_model_fp8_exponent(float max_abs)
{
    if (max_abs == 0.0f) return 0;
    if (max_abs < FLT_MIN) return -127;
    int ex;
    frexp((double)max_abs, &ex); /* floor(log2 M) = ex - 1 */
    const int e = ex - 1 - 8;
    return e < -127 ? -127 : e;
}

uint8_t conform_model_fp8_code(double v)
{
    const double u = ldexp(v, 9); /* in units of 2^-9, exact in double */
    int lo = 0, hi = 126;       /* the last code at or below u */
    if (u >= e4m3_units(126)) return 126;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (e4m3_units(mid) <= u) lo = mid;
        else hi = mid - 1;
    }
    const double below = e4m3_units(lo), above = e4m3_units(lo + 1);
    if (u - below < above - u) return (uint8_t)lo;
    if (u - below > above - u) return (uint8_t)(lo + 1);
    return (uint8_t)((lo & 1) ? lo + 1 : lo); /* a tie: the even code */
}

double conform_model_fp8_value(int code, int e)
{
    return ldexp(e4m3_units(code), e - 9);
}

static void model_row(const float *x, int64_t n, uint8_t *codes, uint8_t *scales)
{
    const int64_t nblk = (n + 31) / 32;
    memset(codes, 0, (size_t)nblk * 32);
    for (int64_t b = 0; b < nblk; b++) {
        const int64_t len = n - b * 32 < 32 ? n - b * 32 : 32;
        const float *xb = x + b * 32;
        float m;
        if (!conform_block_max(xb, len, &m)) { /* NaN scale, zero codes */
            scales[b] = 0xFF;
            continue;
        }
        const int e = conform_model_fp8_exponent(m);
        scales[b] = (uint8_t)(e + 127);
        for (int64_t i = 0; i < len; i++)
            codes[b * 32 + i] = (uint8_t)((signbit(xb[i]) ? 0x80 : 0) | conform_model_fp8_code(ldexp(fabs((double)xb[i]), -e)));
    }
}

/* ----------------------------------------------------------- the check */

static void check_quantize(conform_ctx *ctx, const float *x, int64_t rows, int64_t cols, const mxa_tensor *t,
                           conform_result *r)
{
    const int64_t nblk = (cols + 31) / 32;
    conform_guarded gc = {0}, gs = {0};
    uint8_t *codes = conform_guarded_alloc(&gc, (size_t)(rows * nblk * 32));
    uint8_t *scales = conform_guarded_alloc(&gs, (size_t)(rows * nblk));
    uint8_t *ec = malloc((size_t)(rows * nblk * 32)), *es = malloc((size_t)(rows * nblk));
    char msg[CONFORM_MSG_LEN];
    if (!codes || !scales || !ec || !es) {
        conform_fail(r, "out of memory");
        goto out;
    }
    for (int64_t i = 0; i < rows; i++) model_row(x + i * cols, cols, ec + i * nblk * 32, es + i * nblk);
    mxa_tensor local;
    if (!t) {
        mxa_tensor_init(&local, MXA_F32, 1, 1, rows, cols, (void *)x);
        t = &local;
    }
    const mxa_status st = mxa_quantize_mxfp8(ctx->dev, t, codes, scales);
    if (st == MXA_ERR_UNSUPPORTED) {
        r->status = CONFORM_UNSUPPORTED;
        snprintf(r->message, sizeof r->message, "%s", mxa_last_error_message());
        goto out;
    }
    if (st) {
        conform_fail(r, "mxa_quantize_mxfp8: %s: %s", mxa_status_string(st), mxa_last_error_message());
        goto out;
    }
    if (conform_guarded_check(&gc, "codes", msg, sizeof msg) || conform_guarded_check(&gs, "scales", msg, sizeof msg)) {
        conform_fail(r, "mxa_quantize_mxfp8: %s", msg);
        goto out;
    }
    for (int64_t i = 0; i < rows * nblk; i++) {
        const int64_t row = i / nblk, blk = i % nblk;
        if (scales[i] != es[i]) {
            conform_fail(r, "row %lld block %lld: scale byte 0x%02X, expected 0x%02X", (long long)row, (long long)blk,
                         scales[i], es[i]);
            goto out;
        }
        for (int j = 0; j < 32; j++)
            if (codes[i * 32 + j] != ec[i * 32 + j]) {
                const int64_t col = blk * 32 + j;
                conform_fail(r, "row %lld element %lld (%a): code 0x%02X, expected 0x%02X (scale byte 0x%02X)",
                             (long long)row, (long long)col, col < cols ? (double)x[row * cols + col] : 0.0,
                             codes[i * 32 + j], ec[i * 32 + j], es[i]);
                goto out;
            }
    }
out:
    conform_guarded_free(&gc);
    conform_guarded_free(&gs);
    free(ec);
    free(es);
}

/* ------------------------------------------------------------- the data */

/* A value of magnitude about 2^ex: full fraction, or few fraction bits (ties). */
static float random_value(conform_rng *g, int ex, int few_bits)
{
    const uint64_t r = conform_next(g);
    int e = ex - (int)(r % 12);
    if (e < -149) e = -149;
    if (e > 127) e = 127;
    double m = 1.0 + (double)((r >> 8) & 0x7fffff) / 8388608.0;
    if (few_bits) m = 1.0 + (double)((r >> 8) & 0xf) / 16.0;
    float v = (float)ldexp(m, e);
    if (!isfinite(v)) v = FLT_MAX;
    return (r >> 40) & 1 ? -v : v;
}

static void fill_random(conform_rng *g, float *x, int64_t rows, int64_t cols)
{
    for (int64_t i = 0; i < rows; i++) {
        float *row = x + i * cols;
        const int ex = -150 + (int)(conform_next(g) % 278);
        const int few = (int)(conform_next(g) % 3) == 0;
        for (int64_t j = 0; j < cols; j++) row[j] = random_value(g, ex, few);
        conform_special_row(g, row, cols, 32, 0);
    }
}

/* Rows of 32: one per scale e in [-127, 119] and group of codes, the block pinned
 * to e by 256 2^e, the rest every code's value and every midpoint with its float
 * neighbours (saturating ones above 448 included). */
#define CODES_PER_ROW 7 /* 1 + 7 * 4 elements of 32 */
#define BOUNDARY_GROUPS ((127 + CODES_PER_ROW - 1) / CODES_PER_ROW)
#define BOUNDARY_ROWS (247 * BOUNDARY_GROUPS)
static int64_t boundary_rows(float *x)
{
    int64_t rows = 0;
    for (int e = -127; e <= 119; e++)
        for (int g = 0; g < BOUNDARY_GROUPS; g++) {
            float *row = x + rows * 32;
            memset(row, 0, 32 * sizeof(float));
            row[0] = ldexpf(256.0f, e);
            int j = 1;
            for (int c = g * CODES_PER_ROW; c < (g + 1) * CODES_PER_ROW && c < 127 && j + 3 < 32; c++) {
                const double above = c < 126 ? e4m3_units(c + 1) : 480.0 * 512.0;
                const float mid = (float)ldexp((e4m3_units(c) + above) / 2.0, e - 9);
                row[j++] = (float)ldexp(e4m3_units(c), e - 9) * ((c & 1) ? -1.0f : 1.0f);
                row[j++] = nextafterf(mid, 0.0f);
                row[j] = mid, j++;
                if (j < 32) row[j++] = nextafterf(mid, INFINITY);
            }
            rows++;
        }
    return rows;
}

static void run_random(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    const int64_t rows = ctx->quick ? 256 : 2048, cols = c->index;
    float *x = malloc((size_t)(rows * cols) * sizeof(float));
    if (!x) {
        conform_fail(r, "out of memory");
        return;
    }
    conform_rng g = {conform_case_seed(ctx->seed, c->name)};
    fill_random(&g, x, rows, cols);
    check_quantize(ctx, x, rows, cols, NULL, r);
    free(x);
}

static void run_boundary(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    (void)c;
    float *x = malloc((size_t)BOUNDARY_ROWS * 32 * sizeof(float));
    if (!x) {
        conform_fail(r, "out of memory");
        return;
    }
    check_quantize(ctx, x, boundary_rows(x), 32, NULL, r);
    free(x);
}

static void run_buffer(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    const int64_t rows = 120, d = 96;
    const size_t off = 64, bytes = (size_t)(rows * d) * 4;
    float *x = malloc(bytes);
    mxa_buffer *buf = NULL;
    if (!x) {
        conform_fail(r, "out of memory");
        return;
    }
    conform_rng g = {conform_case_seed(ctx->seed, c->name)};
    fill_random(&g, x, rows, d);
    mxa_status st = mxa_buffer_create(ctx->dev, off + bytes, &buf);
    if (st == MXA_OK) st = mxa_buffer_upload(buf, off, x, bytes);
    if (st) {
        conform_fail(r, "device buffer: %s: %s", mxa_status_string(st), mxa_last_error_message());
    } else {
        mxa_tensor t;
        mxa_tensor_init(&t, MXA_F32, 1, 1, rows, d, NULL);
        t.buffer = buf;
        t.offset = off;
        check_quantize(ctx, x, rows, d, &t, r);
    }
    mxa_buffer_destroy(buf);
    free(x);
}

int conform_add_quant8_cases(conform_case_list *list)
{
    static const struct { const char *name, *what; conform_run_fn run; int index; unsigned flags; } cases[] = {
        {"quantize-mxfp8/random", "seeded blocks of every magnitude, ties, zero/-0/NaN/Inf blocks (2048 x 64)", run_random, 64,
         CF_QUICK | CF_VARIANT},
        {"quantize-mxfp8/boundary", "every E4M3 code and midpoint +-1 ulp under every scale 2^-127 .. 2^119, saturation",
         run_boundary, 0, CF_QUICK},
        {"quantize-mxfp8/tail/d48", "a row length that is not a multiple of 32 (zero padding)", run_random, 48, CF_QUICK},
        {"quantize-mxfp8/buffer", "input in a device buffer at an offset", run_buffer, 0, CF_QUICK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        conform_case c;
        memset(&c, 0, sizeof c);
        snprintf(c.name, sizeof c.name, "%s", cases[i].name);
        c.group = "quantize";
        c.what = cases[i].what;
        c.flags = cases[i].flags;
        c.run = cases[i].run;
        c.index = cases[i].index;
        if (!conform_case_add(list, &c)) return -1;
    }
    return 0;
}
