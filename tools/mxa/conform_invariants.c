/*
 * mxa conform: the SPEC §2 invariants on the device, beyond golden values:
 * PNQ with V = 1 gives 1 (direct placement does not), permuting batch/head
 * order permutes the output bit for bit, quantizers off equals fp32 whatever
 * the other switches say, repeated calls are identical, GQA equals MHA with
 * K/V repeated, LSE merges split keys (ring attention), a causal first row
 * is exactly v_0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

enum {
    INV_PNQ_ONES,
    INV_DIRECT_ONES,
    INV_PERMUTE,
    INV_QUANT_OFF,
    INV_DETERMINISTIC,
    INV_GQA_EXPAND,
    INV_LSE_MERGE,
    INV_CAUSAL_FIRST,
};

int conform_device_run(conform_ctx *ctx, const mxa_attention_desc *desc, const conform_problem *p, conform_outputs *out,
                       conform_result *r)
{
    conform_attn_params a;
    memset(&a, 0, sizeof a);
    a.lse = 1;
    mxa_status st = conform_device_attention(ctx, desc, p, &a, out, r);
    if (r->status == CONFORM_FAIL) return -1;
    if (st == MXA_ERR_UNSUPPORTED && ctx->forced) {
        r->status = CONFORM_UNSUPPORTED;
        snprintf(r->message, sizeof r->message, "%s", mxa_last_error_message());
        return -1;
    }
    if (st) return conform_fail(r, "mxa_attention: %s: %s", mxa_status_string(st), mxa_last_error_message()), -1;
    r->bc = out->info.bc;
    snprintf(r->variant, sizeof r->variant, "%s", out->info.variant);
    return 0;
}

/* Also the ordinary reference comparison of one device result. */
static int against_reference(const mxa_attention_desc *desc, const conform_problem *p, const conform_outputs *dev,
                             conform_result *r)
{
    conform_outputs ref = {0};
    if (conform_reference(desc, dev->info.bc, p, 1, &ref, r)) return -1;
    int ok = conform_compare(desc, dev->info.bc, MXA_F32, p, dev, &ref, NULL, r);
    conform_outputs_free(&ref);
    return ok ? 0 : -1;
}

static int64_t first_difference(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4) != 0) return i;
    return -1;
}

/* The problem with batch/head order reversed (H = Hkv). */
static int reversed(const conform_problem *p, conform_problem *out)
{
    *out = *p;
    const int64_t heads = p->b * p->h, per_q = p->nq * p->d, per_kv = p->nk * p->d;
    out->q = malloc((size_t)(heads * per_q) * 4);
    out->k = malloc((size_t)(heads * per_kv) * 4);
    out->v = malloc((size_t)(heads * per_kv) * 4);
    if (!out->q || !out->k || !out->v) return -1;
    for (int64_t i = 0; i < heads; i++) {
        const int64_t j = heads - 1 - i;
        memcpy(out->q + j * per_q, p->q + i * per_q, (size_t)per_q * 4);
        memcpy(out->k + j * per_kv, p->k + i * per_kv, (size_t)per_kv * 4);
        memcpy(out->v + j * per_kv, p->v + i * per_kv, (size_t)per_kv * 4);
    }
    return 0;
}

static void run_invariant(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    conform_problem p = {0}, p2 = {0};
    conform_outputs o1 = {0}, o2 = {0}, o3 = {0};
    if (conform_problem_make(&p, &c->attn, conform_case_seed(ctx->seed, c->name))) {
        conform_fail(r, "out of memory");
        return;
    }
    mxa_attention_desc desc = conform_recipe_desc(c->attn.recipe);
    desc.causal = c->attn.causal;
    const int64_t n = p.b * p.h * p.nq * p.d, rows = p.b * p.h * p.nq;
    switch (c->index) {
    case INV_PNQ_ONES:
    case INV_DIRECT_ONES: {
        if (c->index == INV_DIRECT_ONES) desc.placement = MXA_PLACEMENT_DIRECT;
        if (conform_device_run(ctx, &desc, &p, &o1, r)) break;
        double worst = 0.0;
        for (int64_t i = 0; i < n; i++)
            if (!(desc.causal && (i / p.d) % p.nq + p.nk - p.nq < 0)) worst = fmax(worst, fabs(o1.o[i] - 1.0));
        r->max_abs = worst;
        if (c->index == INV_PNQ_ONES && worst > 1e-5)
            conform_fail(r, "PNQ with V = 1: max |O - 1| = %.3g (SPEC §2: 1 to fp32 rounding)", worst);
        if (c->index == INV_DIRECT_ONES && worst <= 1e-4)
            conform_fail(r, "direct placement with V = 1 gave max |O - 1| = %.3g: it should show the row-sum error "
                            "(is PNQ running instead?)", worst);
        if (r->status != CONFORM_FAIL) against_reference(&desc, &p, &o1, r);
        break;
    }
    case INV_PERMUTE: {
        if (reversed(&p, &p2)) {
            conform_fail(r, "out of memory");
            break;
        }
        if (conform_device_run(ctx, &desc, &p, &o1, r) || conform_device_run(ctx, &desc, &p2, &o2, r)) break;
        const int64_t heads = p.b * p.h, per = p.nq * p.d;
        for (int64_t i = 0; i < heads; i++) {
            int64_t at = first_difference(o2.o + (heads - 1 - i) * per, o1.o + i * per, per);
            if (at >= 0) {
                conform_fail(r, "reversing (batch, head) order changed head %lld element %lld: %a vs %a", (long long)i,
                             (long long)at, (double)o2.o[(heads - 1 - i) * per + at], (double)o1.o[i * per + at]);
                break;
            }
        }
        if (r->status != CONFORM_FAIL) against_reference(&desc, &p, &o1, r);
        break;
    }
    case INV_QUANT_OFF: {
        /* quantizers off: rotation, rule and placement must not matter beyond rounding */
        mxa_attention_desc fp;
        mxa_attention_desc_init(&fp, MXA_RECIPE_FP32);
        fp.causal = desc.causal;
        desc.quantize = 0;
        desc.rule = mxa_rule_ocp();
        desc.placement = MXA_PLACEMENT_DIRECT;
        if (conform_device_run(ctx, &fp, &p, &o1, r) || conform_device_run(ctx, &desc, &p, &o2, r)) break;
        double e2 = 0, b2 = 0;
        for (int64_t i = 0; i < n; i++) e2 += ((double)o2.o[i] - o1.o[i]) * ((double)o2.o[i] - o1.o[i]), b2 += (double)o1.o[i] * o1.o[i];
        r->nmse = b2 > 0 ? e2 / b2 : e2;
        r->threshold = 1e-10; /* SPEC §2: "to fp32 rounding"; a leaked quantizer gives ~1e-3 */
        if (r->nmse > 1e-10)
            conform_fail(r, "quantizers off (%s rotation, OCP, direct) vs fp32: nmse %.3g > 1e-10: a switch leaked",
                         desc.hadamard ? "with" : "without", r->nmse);
        else
            against_reference(&desc, &p, &o2, r);
        break;
    }
    case INV_DETERMINISTIC: {
        if (conform_device_run(ctx, &desc, &p, &o1, r) || conform_device_run(ctx, &desc, &p, &o2, r) ||
            conform_device_run(ctx, &desc, &p, &o3, r))
            break;
        int64_t at = first_difference(o1.o, o2.o, n);
        if (at < 0) at = first_difference(o1.o, o3.o, n);
        if (at >= 0) conform_fail(r, "repeated calls differ at element %lld", (long long)at);
        else if (first_difference(o1.lse, o2.lse, rows) >= 0) conform_fail(r, "repeated calls give different LSE");
        else against_reference(&desc, &p, &o1, r);
        break;
    }
    case INV_GQA_EXPAND: {
        /* K/V shared by 4 query heads vs K/V copied to every head */
        p2 = p;
        p2.hkv = p.h;
        const int64_t group = p.h / p.hkv, per = p.nk * p.d;
        p2.q = NULL;
        p2.k = malloc((size_t)(p.b * p.h * per) * 4);
        p2.v = malloc((size_t)(p.b * p.h * per) * 4);
        if (!p2.k || !p2.v) {
            conform_fail(r, "out of memory");
            break;
        }
        for (int64_t b = 0; b < p.b; b++)
            for (int64_t h = 0; h < p.h; h++) {
                memcpy(p2.k + (b * p.h + h) * per, p.k + (b * p.hkv + h / group) * per, (size_t)per * 4);
                memcpy(p2.v + (b * p.h + h) * per, p.v + (b * p.hkv + h / group) * per, (size_t)per * 4);
            }
        p2.q = p.q;
        int failed = conform_device_run(ctx, &desc, &p, &o1, r) || conform_device_run(ctx, &desc, &p2, &o2, r);
        p2.q = NULL;
        if (failed) break;
        conform_outputs as_ref = o2;
        if (conform_compare(&desc, o1.info.bc, MXA_F32, &p, &o1, &as_ref, "the run with K/V repeated", r))
            against_reference(&desc, &p, &o1, r);
        else snprintf(r->message + strlen(r->message), sizeof r->message - strlen(r->message), " (GQA vs K/V repeated)");
        break;
    }
    case INV_LSE_MERGE: {
        /* two halves of the keys merged through their LSE equal the whole (fp32, non-causal) */
        if (conform_device_run(ctx, &desc, &p, &o1, r)) break;
        conform_problem h1 = p, h2 = p;
        const int64_t half = p.nk / 2;
        h1.nk = half;
        h2.nk = p.nk - half;
        h1.k = malloc((size_t)(p.b * p.hkv * half * p.d) * 4);
        h1.v = malloc((size_t)(p.b * p.hkv * half * p.d) * 4);
        h2.k = malloc((size_t)(p.b * p.hkv * h2.nk * p.d) * 4);
        h2.v = malloc((size_t)(p.b * p.hkv * h2.nk * p.d) * 4);
        int ok = h1.k && h1.v && h2.k && h2.v;
        for (int64_t hh = 0; ok && hh < p.b * p.hkv; hh++) {
            memcpy(h1.k + hh * half * p.d, p.k + hh * p.nk * p.d, (size_t)(half * p.d) * 4);
            memcpy(h1.v + hh * half * p.d, p.v + hh * p.nk * p.d, (size_t)(half * p.d) * 4);
            memcpy(h2.k + hh * h2.nk * p.d, p.k + (hh * p.nk + half) * p.d, (size_t)(h2.nk * p.d) * 4);
            memcpy(h2.v + hh * h2.nk * p.d, p.v + (hh * p.nk + half) * p.d, (size_t)(h2.nk * p.d) * 4);
        }
        if (!ok) conform_fail(r, "out of memory");
        else if (conform_device_run(ctx, &desc, &h1, &o2, r) == 0 && conform_device_run(ctx, &desc, &h2, &o3, r) == 0) {
            double e2 = 0, b2 = 0, lse_err = 0;
            for (int64_t row = 0; row < rows; row++) {
                const double l1 = o2.lse[row], l2 = o3.lse[row], m = fmax(l1, l2);
                const double w1 = exp(l1 - m), w2 = exp(l2 - m);
                lse_err = fmax(lse_err, fabs(m + log(w1 + w2) - o1.lse[row]) / (1.0 + fabs(o1.lse[row])));
                for (int64_t c2 = 0; c2 < p.d; c2++) {
                    const double v = (w1 * o2.o[row * p.d + c2] + w2 * o3.o[row * p.d + c2]) / (w1 + w2);
                    const double ref = o1.o[row * p.d + c2];
                    e2 += (v - ref) * (v - ref);
                    b2 += ref * ref;
                }
            }
            r->nmse = b2 > 0 ? e2 / b2 : e2;
            r->threshold = 1e-10;
            if (r->nmse > 1e-10 || lse_err > 1e-5)
                conform_fail(r, "merging two key halves through LSE: nmse %.3g (<= 1e-10), lse error %.3g (<= 1e-5)", r->nmse,
                             lse_err);
            else against_reference(&desc, &p, &o1, r);
        }
        free(h1.k);
        free(h1.v);
        free(h2.k);
        free(h2.v);
        break;
    }
    case INV_CAUSAL_FIRST: {
        /* Nq = Nk, causal: query 0 sees key 0 only, so O_0 = v_0 exactly (P = 1, l = 1) */
        if (conform_device_run(ctx, &desc, &p, &o1, r)) break;
        for (int64_t hh = 0; hh < p.b * p.h && r->status != CONFORM_FAIL; hh++) {
            const float *o = o1.o + hh * p.nq * p.d;
            const float *v = p.v + ((hh / p.h) * p.hkv + (hh % p.h) / (p.h / p.hkv)) * p.nk * p.d;
            const int64_t at = first_difference(o, v, p.d);
            if (at >= 0)
                conform_fail(r, "head %lld: causal row 0 element %lld is %a, expected v_0 = %a exactly", (long long)hh,
                             (long long)at, (double)o[at], (double)v[at]);
        }
        if (r->status != CONFORM_FAIL) against_reference(&desc, &p, &o1, r);
        break;
    }
    }
    conform_outputs_free(&o1);
    conform_outputs_free(&o2);
    conform_outputs_free(&o3);
    if (c->index == INV_PERMUTE) conform_problem_free(&p2);
    if (c->index == INV_GQA_EXPAND) {
        free(p2.k);
        free(p2.v);
    }
    conform_problem_free(&p);
}

int conform_add_invariant_cases(conform_case_list *list)
{
    static const struct {
        const char *name;
        int kind;
        const char *recipe;
        int causal;
        int64_t b, h, hkv, nq, nk, d;
        conform_flavour flavour;
        unsigned flags;
        const char *what;
    } inv[] = {
        {"invariant/pnq-ones/noncausal/d128", INV_PNQ_ONES, "mxattention", 0, 1, 4, 4, 48, 300, 128, CONFORM_DATA_ONES,
         CF_QUICK | CF_VARIANT, "PNQ with V = 1 gives O = 1 in every row"},
        {"invariant/pnq-ones/causal/d64", INV_PNQ_ONES, "mxattention", 1, 1, 2, 1, 40, 70, 64, CONFORM_DATA_ONES, CF_QUICK,
         "PNQ with V = 1 gives O = 1 in every row (causal, MQA)"},
        {"invariant/pnq-ones/no-rotation/d32", INV_PNQ_ONES, "no-rotation", 0, 1, 2, 2, 16, 90, 32, CONFORM_DATA_ONES, 0,
         "PNQ with V = 1 gives O = 1 without rotation too"},
        {"invariant/direct-ones/d128", INV_DIRECT_ONES, "mxattention", 0, 1, 4, 4, 48, 300, 128, CONFORM_DATA_ONES,
         CF_QUICK, "direct placement with V = 1 shows the row-sum error PNQ removes"},
        {"invariant/permutation/mxattention", INV_PERMUTE, "mxattention", 1, 2, 3, 3, 40, 90, 64, CONFORM_DATA_ATTN,
         CF_QUICK, "reversing (batch, head) order reverses the output, bit for bit"},
        {"invariant/permutation/ocp-direct", INV_PERMUTE, "ocp-direct", 0, 2, 3, 3, 33, 65, 128, CONFORM_DATA_ATTN, 0,
         "reversing (batch, head) order reverses the output, bit for bit"},
        {"invariant/quant-off/rotation", INV_QUANT_OFF, "mxattention", 0, 1, 2, 2, 50, 77, 128, CONFORM_DATA_ATTN, CF_QUICK,
         "every quantizer off with rotation = fp32 to rounding"},
        {"invariant/quant-off/no-rotation", INV_QUANT_OFF, "no-rotation", 1, 1, 2, 2, 50, 77, 64, CONFORM_DATA_ATTN, 0,
         "every quantizer off, OCP rule, direct placement, no rotation = fp32 to rounding"},
        {"invariant/deterministic/d128", INV_DETERMINISTIC, "mxattention", 1, 1, 4, 2, 48, 200, 128, CONFORM_DATA_ATTN,
         CF_QUICK | CF_VARIANT, "three identical calls give identical bits"},
        {"invariant/gqa-expand/d64", INV_GQA_EXPAND, "mxattention", 1, 2, 4, 1, 24, 100, 64, CONFORM_DATA_ATTN, 0,
         "GQA equals MHA with K/V repeated per head"},
        {"invariant/lse-merge/fp32", INV_LSE_MERGE, "fp32", 0, 1, 2, 1, 20, 200, 64, CONFORM_DATA_ATTN, CF_QUICK,
         "two key halves merged through their LSE equal the whole (ring attention)"},
        {"invariant/causal-first-row/fp32", INV_CAUSAL_FIRST, "fp32", 1, 1, 2, 1, 40, 40, 64, CONFORM_DATA_ATTN, CF_QUICK,
         "causal, Nq = Nk: row 0 sees key 0 only, O_0 = v_0 exactly"},
    };
    for (size_t i = 0; i < sizeof inv / sizeof inv[0]; i++) {
        conform_case c;
        memset(&c, 0, sizeof c);
        snprintf(c.name, sizeof c.name, "%s", inv[i].name);
        c.group = "invariant";
        c.what = inv[i].what;
        c.flags = inv[i].flags | CF_REQUIRED;
        c.run = run_invariant;
        c.index = inv[i].kind;
        c.attn.recipe = conform_recipe_find(inv[i].recipe);
        c.attn.causal = inv[i].causal;
        c.attn.b = inv[i].b, c.attn.h = inv[i].h, c.attn.hkv = inv[i].hkv;
        c.attn.nq = inv[i].nq, c.attn.nk = inv[i].nk, c.attn.d = inv[i].d;
        c.attn.flavour = inv[i].flavour;
        c.attn.lse = 1;
        if (!conform_case_add(list, &c)) return -1;
    }
    return 0;
}
