/*
 * mxa conform: the optional inputs of docs/attention-inputs.md on every backend and
 * recipe: additive biases (relative-position [1, H] in -11..+3 as in a real encoder,
 * [B, 1], ALiBi, -inf), boolean masks (padding [B, 1], random [B, H] with a fully hidden
 * row), per-batch key lengths (0, 37, Nk), top-left causal with Nq < Nk and Nq > Nk,
 * bottom-right with key lengths, 16-bit outputs and lse in device buffers; each against
 * the reference. Then the invariants, bit for bit on the device: key lengths equal
 * separate calls with Nk = L_b, an all-true mask and a zero bias change nothing, a mask
 * is a -inf bias, top-left equals bottom-right at Nq = Nk.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

/* ------------------------------------------------------------------ grid */


typedef struct extras_shape {
    const char *name, *what;
    int causal;
    int64_t b, h, hkv, nq, nk, d;
    conform_bias_kind bias;
    conform_mask_kind mask;
    int lengths;
    conform_io io;
    mxa_dtype out_dtype;
    int lse_buffer, side_buffer;
    unsigned flags; /* CF_QUICK / CF_VARIANT for mxattention */
} extras_shape;

static const extras_shape shapes[] = {
    {"bias-relpos", "a [1, H] relative-position bias in -11..+3", 0, 1, 4, 2, 40, 130, 64, CONFORM_BIAS_RELPOS,
     CONFORM_MASK_NONE, 0, CONFORM_IO_HOST, MXA_F32, 0, 0, CF_QUICK | CF_VARIANT},
    {"bias-batch", "a [B, 1] bias in -11..+3, bottom-right causal", 1, 2, 2, 2, 33, 77, 64, CONFORM_BIAS_BATCH,
     CONFORM_MASK_NONE, 0, CONFORM_IO_HOST, MXA_F32, 0, 0, 0},
    {"alibi", "ALiBi as a [1, H] bias, bottom-right causal", 1, 1, 4, 4, 64, 64, 128, CONFORM_BIAS_ALIBI,
     CONFORM_MASK_NONE, 0, CONFORM_IO_HOST, MXA_F32, 0, 0, CF_QUICK},
    {"bias-neg-inf", "-inf in the bias: every 5th key and all of row 1 hidden", 0, 1, 2, 1, 24, 100, 64,
     CONFORM_BIAS_NEG_INF, CONFORM_MASK_NONE, 0, CONFORM_IO_HOST, MXA_F32, 0, 0, CF_QUICK},
    {"mask-padding", "a [B, 1] padding mask", 0, 3, 2, 2, 32, 90, 64, CONFORM_BIAS_NONE, CONFORM_MASK_PADDING, 0,
     CONFORM_IO_HOST, MXA_F32, 0, 0, 0},
    {"mask-random", "a random [B, H] mask with a fully hidden row", 0, 2, 2, 1, 20, 70, 32, CONFORM_BIAS_NONE,
     CONFORM_MASK_RANDOM, 0, CONFORM_IO_HOST, MXA_F32, 0, 0, CF_QUICK | CF_VARIANT},
    {"key-lengths", "key lengths 0, 37, Nk, Nk - 1, 1", 0, 5, 2, 1, 16, 100, 64, CONFORM_BIAS_NONE, CONFORM_MASK_NONE, 1,
     CONFORM_IO_HOST, MXA_F32, 0, 0, CF_QUICK | CF_VARIANT},
    {"key-lengths-causal", "key lengths with bottom-right causal aligned to them", 1, 5, 2, 2, 24, 70, 64,
     CONFORM_BIAS_NONE, CONFORM_MASK_NONE, 1, CONFORM_IO_BUFFER, MXA_F32, 0, 0, 0},
    {"top-left-nq-lt-nk", "top-left causal, Nq 20 < Nk 75", MXA_CAUSAL_TOP_LEFT, 1, 2, 2, 20, 75, 64, CONFORM_BIAS_NONE,
     CONFORM_MASK_NONE, 0, CONFORM_IO_HOST, MXA_F32, 0, 0, CF_QUICK},
    {"top-left-nq-gt-nk", "top-left causal, Nq 70 > Nk 33", MXA_CAUSAL_TOP_LEFT, 1, 2, 1, 70, 33, 64, CONFORM_BIAS_NONE,
     CONFORM_MASK_NONE, 0, CONFORM_IO_HOST, MXA_F32, 0, 0, 0},
    {"out-f16-buffer", "an f16 output in a device buffer", 1, 1, 2, 2, 24, 100, 128, CONFORM_BIAS_NONE,
     CONFORM_MASK_NONE, 0, CONFORM_IO_BUFFER, MXA_F16, 0, 0, CF_QUICK},
    {"out-bf16-buffer", "a bf16 output in a device buffer", 0, 1, 2, 2, 24, 100, 128, CONFORM_BIAS_NONE,
     CONFORM_MASK_NONE, 0, CONFORM_IO_BUFFER, MXA_BF16, 0, 0, 0},
    {"lse-buffer", "lse in a device buffer", 1, 2, 2, 1, 17, 65, 64, CONFORM_BIAS_NONE, CONFORM_MASK_NONE, 0,
     CONFORM_IO_BUFFER, MXA_F32, 1, 0, CF_QUICK},
    {"everything", "relative-position bias, padding mask, key lengths, top-left, f16 output and lse in buffers", 2, 3,
     4, 2, 45, 77, 64, CONFORM_BIAS_RELPOS, CONFORM_MASK_PADDING, 1, CONFORM_IO_BUFFER, MXA_F16, 1, 0, CF_QUICK | CF_VARIANT},
    {"bias-mask-in-buffers", "a [1, H] bias and a random [B, H] mask in a device buffer", 1, 2, 2, 1, 30, 100, 64,
     CONFORM_BIAS_RELPOS, CONFORM_MASK_RANDOM, 0, CONFORM_IO_BUFFER, MXA_F32, 0, 1, CF_QUICK},
};
#define SHAPE_COUNT ((int)(sizeof shapes / sizeof shapes[0]))

/* ------------------------------------------------------------ invariants */

enum { XI_KEY_LENGTHS, XI_MASK_ALL, XI_BIAS_ZERO, XI_MASK_AS_BIAS, XI_TOP_LEFT_SQUARE, XI_COUNT };

static const struct {
    const char *name, *what;
} invariants[XI_COUNT] = {
    {"key-lengths-are-lengths", "key lengths == one call per batch with Nk = L_b, bit for bit"},
    {"mask-all-true", "an all-true mask == no mask, bit for bit"},
    {"bias-zero", "a zero bias == no bias, bit for bit"},
    {"mask-is-neg-inf-bias", "a mask == a bias of 0 / -inf on the same keys, bit for bit"},
    {"top-left-square", "top-left == bottom-right causal at Nq = Nk, bit for bit"},
};


/* 0 if n floats (and rows lse) of a and b are the same bits; else fails r naming the first difference. */
static int same_bits(const conform_outputs *a, const conform_outputs *b, int64_t n, int64_t rows, const char *what,
                     conform_result *r)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a->o[i], &b->o[i], 4) != 0)
            return conform_fail(r, "%s: element %lld differs: %a vs %a", what, (long long)i, (double)a->o[i], (double)b->o[i]), -1;
    for (int64_t i = 0; i < rows; i++)
        if (memcmp(&a->lse[i], &b->lse[i], 4) != 0)
            return conform_fail(r, "%s: lse row %lld differs: %a vs %a", what, (long long)i, (double)a->lse[i], (double)b->lse[i]), -1;
    return 0;
}

/* Batch b of p alone, with Nk = its key length (views into p: H kv heads of 1 keep K/V contiguous). */
static conform_problem batch_alone(const conform_problem *p, int64_t b)
{
    conform_problem s;
    memset(&s, 0, sizeof s);
    s.b = 1, s.h = p->h, s.hkv = p->hkv, s.nq = p->nq, s.nk = p->lengths[b], s.d = p->d;
    s.q = p->q + b * p->h * p->nq * p->d;
    s.k = p->k + b * p->hkv * p->nk * p->d;
    s.v = p->v + b * p->hkv * p->nk * p->d;
    return s;
}

static void run_invariant(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    conform_problem p, q;
    conform_outputs o1 = {0}, o2 = {0}, ref = {0};
    if (conform_problem_make(&p, &c->attn, conform_case_seed(ctx->seed, c->name))) {
        conform_fail(r, "out of memory");
        return;
    }
    q = p; /* the same data with other optional inputs (owned by p; q's own are freed below) */
    q.bias = NULL, q.mask = NULL, q.lengths = NULL;
    mxa_attention_desc desc = conform_recipe_desc(c->attn.recipe), other = desc;
    desc.causal = other.causal = c->attn.causal;
    const int64_t n = p.b * p.h * p.nq * p.d, rows = p.b * p.h * p.nq;
    switch (c->index) {
    case XI_KEY_LENGTHS:
        if (conform_device_run(ctx, &desc, &p, &o1, r)) break;
        for (int64_t b = 0; b < p.b && r->status != CONFORM_FAIL; b++) {
            const int64_t per = p.h * p.nq;
            if (p.lengths[b] == 0) { /* no key: O = 0, LSE = -inf */
                for (int64_t i = 0; i < per * p.d; i++)
                    if (o1.o[b * per * p.d + i] != 0.0f) {
                        conform_fail(r, "batch %lld has key length 0 but element %lld is %g", (long long)b, (long long)i,
                                     (double)o1.o[b * per * p.d + i]);
                        break;
                    }
                for (int64_t i = 0; i < per && r->status != CONFORM_FAIL; i++)
                    if (!(isinf(o1.lse[b * per + i]) && o1.lse[b * per + i] < 0))
                        conform_fail(r, "batch %lld has key length 0 but lse row %lld is %g", (long long)b, (long long)i,
                                     (double)o1.lse[b * per + i]);
                continue;
            }
            const conform_problem s = batch_alone(&p, b);
            conform_outputs alone = {0};
            if (conform_device_run(ctx, &other, &s, &alone, r)) break;
            const conform_outputs view = {o1.o + b * per * p.d, o1.lse + b * per, o1.info};
            char what[96];
            snprintf(what, sizeof what, "batch %lld with key length %d vs alone with Nk = %d", (long long)b,
                     (int)p.lengths[b], (int)p.lengths[b]);
            same_bits(&view, &alone, per * p.d, per, what, r);
            conform_outputs_free(&alone);
        }
        break;
    case XI_MASK_ALL:
    case XI_BIAS_ZERO:
        if (conform_device_run(ctx, &desc, &p, &o1, r) || conform_device_run(ctx, &other, &q, &o2, r)) break;
        same_bits(&o1, &o2, n, rows, c->index == XI_MASK_ALL ? "an all-true mask vs none" : "a zero bias vs none", r);
        break;
    case XI_MASK_AS_BIAS: {
        const int64_t planes = p.mask_b * p.mask_h, count = planes * p.nq * p.nk;
        if (!(q.bias = malloc((size_t)count * sizeof(float)))) {
            conform_fail(r, "out of memory");
            break;
        }
        q.bias_b = p.mask_b, q.bias_h = p.mask_h;
        for (int64_t e = 0; e < count; e++) q.bias[e] = p.mask[e] ? 0.0f : -INFINITY;
        if (conform_device_run(ctx, &desc, &p, &o1, r) || conform_device_run(ctx, &other, &q, &o2, r)) break;
        same_bits(&o1, &o2, n, rows, "a mask vs the same keys hidden by a -inf bias", r);
        break;
    }
    case XI_TOP_LEFT_SQUARE:
        desc.causal = MXA_CAUSAL_TOP_LEFT, other.causal = MXA_CAUSAL_BOTTOM_RIGHT;
        if (conform_device_run(ctx, &desc, &p, &o1, r) || conform_device_run(ctx, &other, &p, &o2, r)) break;
        same_bits(&o1, &o2, n, rows, "top-left vs bottom-right at Nq = Nk", r);
        break;
    }
    /* and the first result against the reference */
    if (r->status != CONFORM_FAIL && r->status != CONFORM_UNSUPPORTED && o1.o &&
        conform_reference(&desc, o1.info.bc, &p, 1, &ref, r) == 0)
        conform_compare(&desc, o1.info.bc, MXA_F32, &p, &o1, &ref, NULL, r);
    free(q.bias);
    conform_outputs_free(&o1);
    conform_outputs_free(&o2);
    conform_outputs_free(&ref);
    conform_problem_free(&p);
}

/* --------------------------------------------------------------- the list */

int conform_add_extras_cases(conform_case_list *list)
{
    static const char *const recipes[] = {"mxattention", "ocp-direct", "fp32"};
    conform_case c;
    for (int ri = 0; ri < 3; ri++) {
        const int recipe = conform_recipe_find(recipes[ri]);
        if (recipe < 0) return -1;
        for (int si = 0; si < SHAPE_COUNT; si++) {
            const extras_shape *e = &shapes[si];
            memset(&c, 0, sizeof c);
            snprintf(c.name, sizeof c.name, "extras/%s/%s", recipes[ri], e->name);
            c.group = "extras";
            c.what = e->what;
            /* every device must run these */
            c.flags = CF_REQUIRED | (ri == 0 ? e->flags : ((e->flags & CF_QUICK) && si % 3 == 0) ? CF_QUICK : 0u);
            c.run = conform_run_attention;
            conform_attn_params *a = &c.attn;
            a->recipe = recipe, a->causal = e->causal;
            a->b = e->b, a->h = e->h, a->hkv = e->hkv, a->nq = e->nq, a->nk = e->nk, a->d = e->d;
            a->io = e->io, a->out_dtype = e->out_dtype, a->lse = 1, a->lse_buffer = e->lse_buffer, a->side_buffer = e->side_buffer;
            a->bias = e->bias, a->mask = e->mask, a->lengths = e->lengths;
            a->flavour = (conform_flavour)(si % 3);
            if (!conform_case_add(list, &c)) return -1;
        }
    }
    for (int k = 0; k < XI_COUNT; k++)
        for (int ri = 0; ri < 3; ri += 2) { /* mxattention and fp32 */
            memset(&c, 0, sizeof c);
            snprintf(c.name, sizeof c.name, "invariant/extras/%s/%s", invariants[k].name, recipes[ri]);
            c.group = "invariant";
            c.what = invariants[k].what;
            c.flags = CF_REQUIRED | (ri == 0 ? CF_QUICK | CF_VARIANT : 0);
            c.run = run_invariant;
            c.index = k;
            conform_attn_params *a = &c.attn;
            a->recipe = conform_recipe_find(recipes[ri]);
            a->causal = MXA_CAUSAL_BOTTOM_RIGHT, a->b = 2, a->h = 2, a->hkv = 1, a->nq = 24, a->nk = 90, a->d = 64, a->lse = 1;
            if (k == XI_KEY_LENGTHS) a->b = 4, a->lengths = 1; /* 0, 37, 90, 89 */
            if (k == XI_MASK_ALL) a->mask = CONFORM_MASK_ALL, a->causal = 0;
            if (k == XI_BIAS_ZERO) a->bias = CONFORM_BIAS_ZERO;
            if (k == XI_MASK_AS_BIAS) a->mask = CONFORM_MASK_RANDOM, a->causal = 0;
            if (k == XI_TOP_LEFT_SQUARE) a->nq = a->nk = 70;
            if (!conform_case_add(list, &c)) return -1;
        }
    return 0;
}
