/*
 * mxa conform: MXFP4 quantization on the device (mxa_quantize), bit-exact
 * against an exact host model of SPEC §1 written here from the definitions
 * (not the library's format core, so a bug there is caught too): the SPEC
 * vector table, seeded random blocks of every magnitude, every q*2^k +-1 ulp
 * boundary, tails, half-precision and strided inputs, device buffers.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

/* ------------------------------------------------------------ host model */

/* The shared exponent by the definitions of SPEC §1, in exact double arithmetic:
 * OCP e = floor(log2 M) - 2; ceiling rule e = min{k : M <= q 2^k}; subnormal
 * M -> -127; clamp to [-127, 127]. */
static int model_exponent(float m, mxa_rule rule)
{
    if (m == 0.0f) return 0;
    if (m < FLT_MIN) return -127;
    int ex;
    frexp((double)m, &ex); /* m = f 2^ex, f in [0.5, 1): floor(log2 m) = ex - 1 */
    int e;
    if (rule.kind == MXA_RULE_OCP) {
        e = ex - 1 - 2;
    } else {
        e = ex - 1 - 4; /* q >= 6 > 2^2: the minimum is above this */
        while (!((double)m <= (double)rule.q * ldexp(1.0, e))) e++;
    }
    return e < -127 ? -127 : e > 127 ? 127 : e;
}

/* E2M1 round-to-nearest-even with saturation, by the table of SPEC §1. */
static uint8_t model_code(double v)
{
    if (v <= 0.25) return 0;
    if (v < 0.75) return 1;
    if (v <= 1.25) return 2;
    if (v < 1.75) return 3;
    if (v <= 2.5) return 4;
    if (v < 3.5) return 5;
    if (v <= 5.0) return 6;
    return 7;
}

/* One row of n values into packed codes and scale bytes (the mxa_quantize layout). */
static void model_row(const float *x, int64_t n, mxa_rule rule, uint8_t *packed, uint8_t *scales)
{
    const int64_t nblk = (n + 31) / 32;
    memset(packed, 0, (size_t)nblk * 16);
    for (int64_t b = 0; b < nblk; b++) {
        const int64_t len = n - b * 32 < 32 ? n - b * 32 : 32;
        const float *xb = x + b * 32;
        float m;
        if (!conform_block_max(xb, len, &m)) { /* NaN scale, zero codes */
            scales[b] = 0xFF;
            continue;
        }
        const int e = model_exponent(m, rule);
        scales[b] = (uint8_t)(e + 127);
        for (int64_t i = 0; i < len; i++) {
            const double v = ldexp(fabs((double)xb[i]), -e); /* exact in double */
            const uint8_t c = (uint8_t)((signbit(xb[i]) ? 8 : 0) | model_code(v));
            packed[b * 16 + i / 2] |= (uint8_t)(i % 2 ? c << 4 : c);
        }
        /* padding elements are +0: code 0, already there */
    }
}

int conform_block_max(const float *x, int64_t len, float *max_abs)
{
    int finite = 1;
    float m = 0.0f;
    for (int64_t i = 0; i < len; i++) {
        if (!isfinite(x[i])) finite = 0;
        else if (fabsf(x[i]) > m) m = fabsf(x[i]);
    }
    *max_abs = m;
    return finite;
}

void conform_special_row(conform_rng *g, float *row, int64_t cols, uint64_t one_in, int keep_one)
{
    const uint64_t special = conform_next(g) % one_in;
    const int64_t at = (int64_t)(conform_next(g) % (uint64_t)cols);
    if (special == 0) row[at] = NAN;
    else if (special == 1) row[at] = (conform_next(g) & 1) ? INFINITY : -INFINITY;
    else if (special == 2) memset(row, 0, (size_t)cols * sizeof(float));
    else if (special == 3) for (int64_t j = 0; j < cols; j++) row[j] = -0.0f;
    else if (special == 4 && keep_one) for (int64_t j = 0; j < cols; j++) row[j] = j == at ? row[j] : 0.0f;
}

int conform_model_exponent(float max_abs, mxa_rule rule)
{
    return model_exponent(max_abs, rule);
}

uint8_t conform_model_code(double v)
{
    return model_code(v);
}

/* ------------------------------------------------------- the SPEC table */

typedef struct spec_vector {
    const char *what;
    int n;
    float x[5];
    int e[3];          /* OCP, TFS, UOS; 999 = NaN scale */
    uint8_t codes[3][5];
} spec_vector;

#define NOE 999
static const spec_vector spec_vectors[] = {
    {"6 0.25 0.75 1.25 1.75", 5, {6, 0.25f, 0.75f, 1.25f, 1.75f}, {0, 0, 0}, {{7, 0, 2, 2, 4}, {7, 0, 2, 2, 4}, {7, 0, 2, 2, 4}}},
    {"6 2.5 3.5 5 5.5", 5, {6, 2.5f, 3.5f, 5, 5.5f}, {0, 0, 0}, {{7, 4, 6, 6, 7}, {7, 4, 6, 6, 7}, {7, 4, 6, 6, 7}}},
    {"-6 -0 -0.25 -2.5 0.1", 5, {-6, -0.0f, -0.25f, -2.5f, 0.1f}, {0, 0, 0},
     {{0xF, 8, 8, 0xC, 0}, {0xF, 8, 8, 0xC, 0}, {0xF, 8, 8, 0xC, 0}}},
    {"1 0.0625 0.1875 0.375", 4, {1, 0.0625f, 0.1875f, 0.375f}, {-2, -2, -2}, {{6, 0, 2, 3}, {6, 0, 2, 3}, {6, 0, 2, 3}}},
    {"1.5+2^-23", 1, {1.5f + 0x1p-23f}, {-2, -1, -2}, {{7}, {5}, {7}}},
    {"1.8125", 1, {1.8125f}, {-2, -1, -2}, {{7}, {6}, {7}}},
    {"1.8125+2^-23", 1, {1.8125f + 0x1p-23f}, {-2, -1, -1}, {{7}, {6}, {6}}},
    {"7 3", 2, {7, 3}, {0, 1, 0}, {{7, 5}, {6, 3}, {7, 5}}},
    {"8-2^-21", 1, {8.0f - 0x1p-21f}, {0, 1, 1}, {{7}, {6}, {6}}},
    {"3*2^-128", 1, {0x1.8p-127f}, {-127, -127, -127}, {{3}, {3}, {3}}},
    {"FLT_MAX", 1, {FLT_MAX}, {125, 126, 126}, {{7}, {6}, {6}}},
    {"0 -0", 2, {0.0f, -0.0f}, {0, 0, 0}, {{0, 8}, {0, 8}, {0, 8}}},
    {"NaN 1", 2, {NAN, 1}, {NOE, NOE, NOE}, {{0, 0}, {0, 0}, {0, 0}}},
    {"1 -0.5 6 -6 (packed 0x92 0xF7)", 4, {1, -0.5f, 6, -6}, {0, 0, 0}, {{2, 9, 7, 0xF}, {2, 9, 7, 0xF}, {2, 9, 7, 0xF}}},
};
#define SPEC_COUNT ((int)(sizeof spec_vectors / sizeof spec_vectors[0]))

static mxa_rule rule_at(int i)
{
    return i == 0 ? mxa_rule_ocp() : i == 1 ? mxa_rule_tfs() : mxa_rule_uos();
}

/* ------------------------------------------------------------ the runner */

/* Quantizes rows x cols of x (float32 host unless `t` is given) on the device into
 * guarded buffers and compares them with the model, byte for byte. */
static void check_quantize(conform_ctx *ctx, const float *x, int64_t rows, int64_t cols, mxa_rule rule,
                           const mxa_tensor *t, conform_result *r)
{
    const int64_t nblk = (cols + 31) / 32;
    conform_guarded gc = {0}, gs = {0};
    uint8_t *codes = conform_guarded_alloc(&gc, (size_t)(rows * nblk * 16));
    uint8_t *scales = conform_guarded_alloc(&gs, (size_t)(rows * nblk));
    uint8_t *ec = malloc((size_t)(rows * nblk * 16)), *es = malloc((size_t)(rows * nblk));
    char msg[CONFORM_MSG_LEN], rname[32] = "?";
    mxa_rule_name(rule, rname, sizeof rname);
    if (!codes || !scales || !ec || !es) {
        conform_fail(r, "out of memory");
        goto out;
    }
    for (int64_t i = 0; i < rows; i++) model_row(x + i * cols, cols, rule, ec + i * nblk * 16, es + i * nblk);
    mxa_tensor local;
    if (!t) {
        mxa_tensor_init(&local, MXA_F32, 1, 1, rows, cols, (void *)x);
        t = &local;
    }
    mxa_status st = mxa_quantize(ctx->dev, t, rule, codes, scales);
    if (st == MXA_ERR_UNSUPPORTED) {
        r->status = CONFORM_UNSUPPORTED;
        snprintf(r->message, sizeof r->message, "%s", mxa_last_error_message());
        goto out;
    }
    if (st) {
        conform_fail(r, "mxa_quantize (%s): %s: %s", rname, mxa_status_string(st), mxa_last_error_message());
        goto out;
    }
    if (conform_guarded_check(&gc, "codes", msg, sizeof msg) || conform_guarded_check(&gs, "scales", msg, sizeof msg)) {
        conform_fail(r, "mxa_quantize (%s): %s", rname, msg);
        goto out;
    }
    for (int64_t i = 0; i < rows * nblk; i++) {
        const int64_t row = i / nblk, blk = i % nblk;
        int bad = scales[i] != es[i];
        int elem = -1;
        for (int j = 0; j < 32 && !bad; j++) {
            const uint8_t got = (codes[i * 16 + j / 2] >> (j % 2 * 4)) & 0xF;
            const uint8_t want = (ec[i * 16 + j / 2] >> (j % 2 * 4)) & 0xF;
            if (got != want) bad = 1, elem = j;
        }
        if (!bad) continue;
        if (elem < 0) {
            /* name the block maximum: what decides the scale */
            float m = 0.0f;
            for (int64_t j = blk * 32; j < cols && j < blk * 32 + 32; j++)
                if (fabsf(x[row * cols + j]) > m) m = fabsf(x[row * cols + j]);
            conform_fail(r, "%s: row %lld block %lld: scale byte 0x%02X, expected 0x%02X (block max %a)", rname,
                         (long long)row, (long long)blk, scales[i], es[i], (double)m);
        } else {
            const int64_t col = blk * 32 + elem;
            conform_fail(r, "%s: row %lld element %lld (%a, scale 0x%02X): code 0x%X, expected 0x%X", rname, (long long)row,
                         (long long)col, col < cols ? (double)x[row * cols + col] : 0.0, es[i],
                         (codes[i * 16 + elem / 2] >> (elem % 2 * 4)) & 0xF, (ec[i * 16 + elem / 2] >> (elem % 2 * 4)) & 0xF);
        }
        goto out;
    }
out:
    conform_guarded_free(&gc);
    conform_guarded_free(&gs);
    free(ec);
    free(es);
}

/* --------------------------------------------------------------- cases */

/* One SPEC vector under OCP, TFS and UOS: the table, the model and the device agree. */
static void run_spec(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    const spec_vector *sv = &spec_vectors[c->index];
    float x[32] = {0};
    for (int i = 0; i < sv->n; i++) x[i] = sv->x[i];
    for (int ri = 0; ri < 3 && r->status != CONFORM_FAIL; ri++) {
        uint8_t packed[16], scale;
        model_row(x, 32, rule_at(ri), packed, &scale);
        const int want_scale = sv->e[ri] == NOE ? 0xFF : sv->e[ri] + 127;
        int ok = scale == want_scale;
        for (int i = 0; i < sv->n && ok; i++) ok = ((packed[i / 2] >> (i % 2 * 4)) & 0xF) == sv->codes[ri][i];
        if (!ok) { /* the suite itself would be wrong: say so rather than blame the device */
            conform_fail(r, "conform's host model disagrees with the SPEC table on '%s' (rule %d)", sv->what, ri);
            return;
        }
        check_quantize(ctx, x, 1, 32, rule_at(ri), NULL, r);
    }
    if (r->status == CONFORM_PASS && c->index == SPEC_COUNT - 1) {
        /* the packed layout, as bytes */
        uint8_t codes[16], scale;
        mxa_tensor t;
        mxa_tensor_init(&t, MXA_F32, 1, 1, 1, 32, x);
        if (mxa_quantize(ctx->dev, &t, mxa_rule_uos(), codes, &scale) == MXA_OK && (codes[0] != 0x92 || codes[1] != 0xF7))
            conform_fail(r, "packed bytes 0x%02X 0x%02X, expected 0x92 0xF7", codes[0], codes[1]);
    }
}

static const char *const rule_names[] = {"ocp", "tfs", "uos", "q=6.5", "q=7.9", "q=8"};
#define RULE_COUNT ((int)(sizeof rule_names / sizeof rule_names[0]))

/* One random value of a row whose magnitudes centre on 2^ex. */
static float random_value(conform_rng *g, int ex, int kind)
{
    static const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    const float sign = (conform_next(g) & 1) ? -1.0f : 1.0f;
    switch (kind) {
    case 1: /* exact E2M1 grid points and rounding ties */
        return sign * ldexpf(ties[conform_next(g) % (sizeof ties / sizeof ties[0])], ex - 2);
    case 2: /* one ulp around a tie */
        return nextafterf(sign * ldexpf(ties[conform_next(g) % 7], ex - 2), (conform_next(g) & 1) ? INFINITY : -INFINITY);
    default:
        return (float)(sign * ldexp(fabs(conform_normal(g)), ex));
    }
}

/* Rows of every magnitude (normal, subnormal, zero), ties, lone non-finite blocks. */
static void fill_random(conform_rng *g, float *x, int64_t rows, int64_t cols)
{
    for (int64_t i = 0; i < rows; i++) {
        float *row = x + i * cols;
        const int ex = -150 + (int)(conform_next(g) % 278); /* 2^-150 .. 2^127 */
        const int kind = (int)(conform_next(g) % 8);
        for (int64_t j = 0; j < cols; j++) row[j] = random_value(g, ex, kind < 3 ? 0 : kind < 5 ? 1 : kind < 7 ? 2 : 0);
        conform_special_row(g, row, cols, 64, 1);
    }
}

static void run_random(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    mxa_rule rule;
    mxa_rule_parse(rule_names[c->index], &rule);
    const int64_t rows = ctx->quick ? 256 : 2048, cols = 64;
    float *x = malloc((size_t)(rows * cols) * sizeof(float));
    if (!x) {
        conform_fail(r, "out of memory");
        return;
    }
    conform_rng g = {conform_case_seed(ctx->seed, c->name)};
    fill_random(&g, x, rows, cols);
    check_quantize(ctx, x, rows, cols, rule, NULL, r);
    free(x);
}

/* Block maxima at q*2^k and 1 ulp either side for every k (and at 2^k for OCP),
 * the other elements on and 1 ulp around every E2M1 rounding boundary; then
 * the extremes. x holds BOUNDARY_ROWS x 32; returns the rows written. */
#define BOUNDARY_ROWS (3 * 280 + 4)
static int64_t boundary_rows(mxa_rule rule, float *x)
{
    static const float bounds[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
    const float q = rule.kind == MXA_RULE_OCP ? 4.0f : rule.q;
    const int64_t cols = 32;
    int64_t rows = 0;
    for (int k = -152; k <= 126; k++) {
        const float m0 = ldexpf(q, k);
        if (m0 == 0.0f || !isfinite(m0)) continue;
        const float ms[3] = {nextafterf(m0, 0.0f), m0, nextafterf(m0, INFINITY)};
        for (int s = 0; s < 3; s++) {
            if (!isfinite(ms[s]) || ms[s] == 0.0f) continue;
            float *row = x + rows * cols;
            row[0] = (k & 1) ? -ms[s] : ms[s];
            const int e = model_exponent(ms[s], rule);
            int j = 1;
            for (int b = 0; b < 7; b++) {
                const float v = ldexpf(bounds[b], e);
                const float cand[3] = {nextafterf(v, 0.0f), v, nextafterf(v, INFINITY)};
                for (int t = 0; t < 3; t++, j++)
                    row[j] = (cand[t] <= ms[s] && isfinite(cand[t])) ? ((j & 1) ? -cand[t] : cand[t]) : 0.0f;
            }
            rows++;
        }
    }
    const float extremes[4] = {FLT_MAX, nextafterf(FLT_MAX, 0.0f), 0x1p-149f, 0x1p-126f};
    for (int i = 0; i < 4; i++, rows++) {
        x[rows * cols] = extremes[i];
        x[rows * cols + 1] = -extremes[i] / 3.0f;
    }
    return rows;
}

static void run_boundary(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    mxa_rule rule;
    mxa_rule_parse(rule_names[c->index], &rule);
    float *x = calloc((size_t)BOUNDARY_ROWS * 32, sizeof(float));
    if (!x) {
        conform_fail(r, "out of memory");
        return;
    }
    check_quantize(ctx, x, boundary_rows(rule, x), 32, rule, NULL, r);
    free(x);
}

/* Tails: a row shorter than a block is zero-padded and padding never raises M. */
static void run_tail(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    const int64_t rows = 64, cols = c->index;
    float *x = malloc((size_t)(rows * cols) * sizeof(float));
    if (!x) {
        conform_fail(r, "out of memory");
        return;
    }
    conform_rng g = {conform_case_seed(ctx->seed, c->name)};
    fill_random(&g, x, rows, cols);
    for (int ri = 0; ri < 3 && r->status != CONFORM_FAIL; ri++) check_quantize(ctx, x, rows, cols, rule_at(ri), NULL, r);
    free(x);
}

/* float16 / bfloat16 inputs are widened exactly, then quantized as float32. */
static void run_half(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    const int bf = c->index;
    const int64_t rows = 128, cols = 64;
    uint16_t *h = malloc((size_t)(rows * cols) * 2);
    float *x = malloc((size_t)(rows * cols) * sizeof(float));
    if (!h || !x) {
        conform_fail(r, "out of memory");
        goto out;
    }
    conform_rng g = {conform_case_seed(ctx->seed, c->name)};
    for (int64_t i = 0; i < rows * cols; i++) {
        /* any finite bit pattern (NaN/Inf too, rarely): every half value is exact in float */
        uint16_t v = (uint16_t)conform_next(&g);
        if (i % cols == 0) v = (uint16_t)(v & 0x83FF); /* subnormal rows' first element */
        h[i] = v;
        if (bf) {
            uint32_t u = (uint32_t)v << 16;
            memcpy(&x[i], &u, 4);
        } else {
            const int exp = (v >> 10) & 0x1f, man = v & 0x3ff;
            float f = exp == 0x1f ? (man ? NAN : INFINITY) : exp == 0 ? ldexpf((float)man, -24) : ldexpf((float)(man | 0x400), exp - 25);
            x[i] = (v & 0x8000) ? -f : f;
        }
    }
    mxa_tensor t;
    mxa_tensor_init(&t, bf ? MXA_BF16 : MXA_F16, 1, 1, rows, cols, h);
    for (int ri = 0; ri < 3 && r->status != CONFORM_FAIL; ri++) check_quantize(ctx, x, rows, cols, rule_at(ri), &t, r);
out:
    free(h);
    free(x);
}

/* A strided view ([B,H,N,D] over memory laid out [N,H,D]) and a device buffer input. */
static void run_layout(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    const int64_t h = 3, n = 40, d = 96, rows = h * n;
    float *x = malloc((size_t)(rows * d) * sizeof(float)), *xt = malloc((size_t)(rows * d) * sizeof(float));
    mxa_buffer *buf = NULL;
    if (!x || !xt) {
        conform_fail(r, "out of memory");
        goto out;
    }
    conform_rng g = {conform_case_seed(ctx->seed, c->name)};
    fill_random(&g, x, rows, d);
    mxa_tensor t;
    if (c->index == 0) {
        for (int64_t hh = 0; hh < h; hh++)
            for (int64_t i = 0; i < n; i++) memcpy(xt + (i * h + hh) * d, x + (hh * n + i) * d, (size_t)d * 4);
        mxa_tensor_init(&t, MXA_F32, 1, h, n, d, xt);
        t.strides[0] = rows * d; t.strides[1] = d; t.strides[2] = h * d; t.strides[3] = 1;
    } else {
        const size_t off = 64;
        mxa_status st = mxa_buffer_create(ctx->dev, off + (size_t)(rows * d) * 4, &buf);
        if (st == MXA_OK) st = mxa_buffer_upload(buf, off, x, (size_t)(rows * d) * 4);
        if (st) {
            conform_fail(r, "device buffer: %s: %s", mxa_status_string(st), mxa_last_error_message());
            goto out;
        }
        mxa_tensor_init(&t, MXA_F32, 1, h, n, d, NULL);
        t.buffer = buf;
        t.offset = off;
    }
    for (int ri = 0; ri < 3 && r->status != CONFORM_FAIL; ri++) check_quantize(ctx, x, rows, d, rule_at(ri), &t, r);
out:
    mxa_buffer_destroy(buf);
    free(x);
    free(xt);
}

int conform_add_quant_cases(conform_case_list *list)
{
    conform_case c;
    for (int i = 0; i < SPEC_COUNT; i++) {
        memset(&c, 0, sizeof c);
        snprintf(c.name, sizeof c.name, "quantize/spec/%02d", i);
        c.group = "quantize";
        c.what = spec_vectors[i].what;
        c.flags = CF_QUICK | CF_REQUIRED;
        c.run = run_spec;
        c.index = i;
        if (!conform_case_add(list, &c)) return -1;
    }
    for (int i = 0; i < RULE_COUNT; i++) {
        memset(&c, 0, sizeof c);
        snprintf(c.name, sizeof c.name, "quantize/random/%s", rule_names[i]);
        c.group = "quantize";
        c.what = "seeded blocks of every magnitude, ties, +-1 ulp, zero/-0/NaN/Inf blocks (2048 x 64)";
        c.flags = CF_QUICK | CF_REQUIRED | (i == 2 ? CF_VARIANT : 0);
        c.run = run_random;
        c.index = i;
        if (!conform_case_add(list, &c)) return -1;
        snprintf(c.name, sizeof c.name, "quantize/boundary/%s", rule_names[i]);
        c.what = "block maximum at q*2^k and +-1 ulp for every k; elements around every E2M1 boundary";
        c.flags = CF_QUICK | CF_REQUIRED;
        c.run = run_boundary;
        if (!conform_case_add(list, &c)) return -1;
    }
    static const int tails[] = {1, 17, 48, 100, 255};
    for (int i = 0; i < 5; i++) {
        memset(&c, 0, sizeof c);
        snprintf(c.name, sizeof c.name, "quantize/tail/d%d", tails[i]);
        c.group = "quantize";
        c.what = "a row length that is not a multiple of 32 (zero padding), OCP/TFS/UOS";
        c.flags = CF_REQUIRED | (tails[i] == 48 ? CF_QUICK : 0);
        c.run = run_tail;
        c.index = tails[i];
        if (!conform_case_add(list, &c)) return -1;
    }
    for (int i = 0; i < 2; i++) {
        memset(&c, 0, sizeof c);
        snprintf(c.name, sizeof c.name, "quantize/dtype/%s", i ? "bf16" : "f16");
        c.group = "quantize";
        c.what = "half-precision input bit patterns, widened exactly";
        c.flags = CF_REQUIRED | CF_QUICK;
        c.run = run_half;
        c.index = i;
        if (!conform_case_add(list, &c)) return -1;
    }
    for (int i = 0; i < 2; i++) {
        memset(&c, 0, sizeof c);
        snprintf(c.name, sizeof c.name, "quantize/%s", i ? "buffer" : "strided");
        c.group = "quantize";
        c.what = i ? "input in a device buffer at an offset" : "a strided (transposed) input view";
        c.flags = CF_REQUIRED | CF_QUICK;
        c.run = run_layout;
        c.index = i;
        if (!conform_case_add(list, &c)) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- export */

int conform_quant_vector(const conform_case *c, uint64_t seed, conform_quant_data *out)
{
    memset(out, 0, sizeof *out);
    if (c->run != run_random && c->run != run_boundary && c->run != run_tail) return 1;
    /* the data exactly as the full (not --quick) case draws it */
    const int64_t cols = c->run == run_tail ? c->index : c->run == run_random ? 64 : 32;
    const int64_t max_rows = c->run == run_random ? 2048 : c->run == run_tail ? 64 : BOUNDARY_ROWS;
    mxa_rule rule = c->run == run_tail ? mxa_rule_uos() : (mxa_rule_parse(rule_names[c->index], &rule), rule);
    float *x = calloc((size_t)(max_rows * cols), sizeof(float));
    if (!x) return -1;
    int64_t rows = max_rows;
    if (c->run == run_boundary) {
        rows = boundary_rows(rule, x);
    } else {
        conform_rng g = {conform_case_seed(seed, c->name)};
        fill_random(&g, x, rows, cols);
    }
    const int64_t nblk = (cols + 31) / 32;
    out->codes = malloc((size_t)(rows * nblk * 16));
    out->scales = malloc((size_t)(rows * nblk));
    if (!out->codes || !out->scales) {
        free(x);
        free(out->codes);
        free(out->scales);
        out->codes = out->scales = NULL;
        return -1;
    }
    for (int64_t i = 0; i < rows; i++) model_row(x + i * cols, cols, rule, out->codes + i * nblk * 16, out->scales + i * nblk);
    out->x = x;
    out->rows = rows;
    out->cols = cols;
    out->rule = rule;
    return 0;
}

void conform_quant_vector_check(conform_ctx *ctx, const float *x, int64_t rows, int64_t cols, mxa_rule rule,
                                const uint8_t *codes, const uint8_t *scales, conform_result *r)
{
    const int64_t nblk = (cols + 31) / 32;
    conform_guarded gc = {0}, gs = {0};
    uint8_t *dc = conform_guarded_alloc(&gc, (size_t)(rows * nblk * 16));
    uint8_t *ds = conform_guarded_alloc(&gs, (size_t)(rows * nblk));
    uint8_t *mc = malloc((size_t)(rows * nblk * 16)), *ms = malloc((size_t)(rows * nblk));
    char msg[CONFORM_MSG_LEN];
    if (!dc || !ds || !mc || !ms) {
        conform_fail(r, "out of memory");
        goto out;
    }
    mxa_tensor t;
    mxa_tensor_init(&t, MXA_F32, 1, 1, rows, cols, (void *)x);
    mxa_status st = mxa_quantize(ctx->dev, &t, rule, dc, ds);
    if (st) {
        conform_fail(r, "mxa_quantize: %s: %s", mxa_status_string(st), mxa_last_error_message());
        goto out;
    }
    if (conform_guarded_check(&gc, "codes", msg, sizeof msg) || conform_guarded_check(&gs, "scales", msg, sizeof msg)) {
        conform_fail(r, "%s", msg);
        goto out;
    }
    for (int64_t i = 0; i < rows; i++) model_row(x + i * cols, cols, rule, mc + i * nblk * 16, ms + i * nblk);
    int64_t dev_diff = -1, model_diff = 0;
    for (int64_t i = 0; i < rows * nblk * 17; i++) {
        const int in_scales = i >= rows * nblk * 16;
        const uint8_t want = in_scales ? scales[i - rows * nblk * 16] : codes[i];
        const uint8_t got = in_scales ? ds[i - rows * nblk * 16] : dc[i];
        const uint8_t mod = in_scales ? ms[i - rows * nblk * 16] : mc[i];
        if (got != want && dev_diff < 0) dev_diff = i;
        if (mod != want) model_diff++;
    }
    if (dev_diff >= 0) {
        const int in_scales = dev_diff >= rows * nblk * 16;
        const int64_t at = in_scales ? dev_diff - rows * nblk * 16 : dev_diff;
        conform_fail(r, "%s byte %lld (row %lld): device 0x%02X, vectors 0x%02X; conform's host model %s the vectors (%lld bytes differ)",
                     in_scales ? "scale" : "code", (long long)at, (long long)(in_scales ? at / nblk : at / (nblk * 16)),
                     in_scales ? ds[at] : dc[at], in_scales ? scales[at] : codes[at], model_diff ? "also disagrees with" : "agrees with",
                     (long long)model_diff);
    }
out:
    conform_guarded_free(&gc);
    conform_guarded_free(&gs);
    free(mc);
    free(ms);
}

void conform_quant_support(conform_ctx *ctx, mxa_rule rule, uint64_t seed, conform_result *r)
{
    const int64_t rows = 64, cols = 64;
    float *x = malloc((size_t)(rows * cols) * sizeof(float));
    if (!x) {
        conform_fail(r, "out of memory");
        return;
    }
    conform_rng g = {seed};
    fill_random(&g, x, rows, cols);
    check_quantize(ctx, x, rows, cols, rule, NULL, r);
    free(x);
}
