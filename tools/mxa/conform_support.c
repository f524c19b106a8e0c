/*
 * mxa conform support: a matrix of what each device supports, one small
 * problem per feature (recipes and ablations, head sizes, Bc, dtypes,
 * device buffers, bias / mask / key lengths / top-left / 16-bit and lse buffers, the
 * NVFP4 baseline, quantization rules, kernel variants).
 * Each cell: "yes" (ran and matches the reference), "no" (the device says
 * MXA_ERR_UNSUPPORTED: allowed), "WRONG" (ran, does not match), "error".
 * Exit 1 if any cell is WRONG or error.
 *
 * JSON {"devices": [{"id", "name", "variant"}], "features": [{"feature", "group",
 *       "results": [{"device", "status", "message"}]}]}; CSV feature,group,device,status,message.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conform.h"

#define MAX_DEV 32

typedef enum feature_kind { F_RECIPE, F_HEAD, F_BC, F_DTYPE, F_BUFFER, F_EXTRA, F_NVFP4, F_RULE, F_VARIANT } feature_kind;

typedef struct feature {
    char name[64];
    const char *group;
    feature_kind kind;
    int arg;
    const char *text;
} feature;

typedef conform_support_cell cell;

static int build_features(feature *f, int max)
{
    int n = 0;
#define ADD(group_, kind_, arg_, text_, ...)                                                          \
    do {                                                                                            \
        if (n < max) {                                                                              \
            snprintf(f[n].name, sizeof f[n].name, __VA_ARGS__);                                     \
            f[n].group = group_, f[n].kind = kind_, f[n].arg = arg_, f[n].text = text_;             \
            n++;                                                                                    \
        }                                                                                           \
    } while (0)
    for (int i = 0; i < conform_recipe_count; i++) ADD("recipe", F_RECIPE, i, NULL, "recipe %s", conform_recipes[i].name);
    static const int heads[] = {32, 64, 128, 256, -96, -160, -224};
    for (int i = 0; i < 7; i++)
        ADD("head size", F_HEAD, heads[i], NULL, "D=%d%s", heads[i] < 0 ? -heads[i] : heads[i], heads[i] < 0 ? " (no rotation)" : "");
    static const int bcs[] = {32, 64, 128, 256, 512, 1024};
    for (int i = 0; i < 6; i++) ADD("key tile", F_BC, bcs[i], NULL, "Bc=%d", bcs[i]);
    ADD("dtype", F_DTYPE, 0, NULL, "f16 in");
    ADD("dtype", F_DTYPE, 1, NULL, "bf16 in");
    ADD("dtype", F_DTYPE, 2, NULL, "f16 out");
    ADD("dtype", F_DTYPE, 3, NULL, "bf16 out");
    ADD("io", F_BUFFER, 0, NULL, "device buffers");
    static const char *const extras[] = {"bias", "mask", "key lengths", "top-left causal", "f16 out buffer", "lse buffer"};
    for (int i = 0; i < 6; i++) ADD("extras", F_EXTRA, i, NULL, "%s", extras[i]);
    ADD("format", F_NVFP4, 0, NULL, "NVFP4 baseline");
    ADD("format", F_NVFP4, 1, NULL, "NVFP4 + smoothing");
    static const char *const rules[] = {"ocp", "tfs", "uos", "q=6.5"};
    for (int i = 0; i < 4; i++) ADD("quantize", F_RULE, i, rules[i], "quantize %s", rules[i]);
    for (int i = 0; i < conform_switch_count; i++)
        ADD("variant", F_VARIANT, i, NULL, "%s=%s", conform_switches[i].env.name, conform_switches[i].env.value);
#undef ADD
    return n;
}

static void set(cell *c, const char *status, const char *msg)
{
    snprintf(c->status, sizeof c->status, "%s", status);
    snprintf(c->message, sizeof c->message, "%s", msg ? msg : "");
}

/* One attention feature on an open device. */
static void attention_cell(conform_ctx *ctx, const feature *f, cell *out)
{
    conform_attn_params a;
    memset(&a, 0, sizeof a);
    a.recipe = 0, a.causal = 1, a.b = 1, a.h = 2, a.hkv = 1, a.nq = 16, a.nk = 70, a.d = 64, a.lse = 1;
    mxa_attention_desc desc;
    switch (f->kind) {
    case F_RECIPE: a.recipe = f->arg; break;
    case F_HEAD:
        a.d = f->arg < 0 ? -f->arg : f->arg;
        if (f->arg < 0) a.recipe = conform_recipe_find("ocp-direct");
        break;
    case F_BC: a.bc = f->arg, a.nk = 300; break;
    case F_DTYPE:
        a.in_dtype = f->arg == 0 ? MXA_F16 : f->arg == 1 ? MXA_BF16 : MXA_F32;
        a.out_dtype = f->arg == 2 ? MXA_F16 : f->arg == 3 ? MXA_BF16 : MXA_F32;
        break;
    case F_BUFFER: a.io = CONFORM_IO_BUFFER; break;
    case F_EXTRA: /* docs/attention-inputs.md, one at a time */
        if (f->arg == 0) a.bias = CONFORM_BIAS_RELPOS;
        if (f->arg == 1) a.mask = CONFORM_MASK_RANDOM;
        if (f->arg == 2) a.b = 3, a.lengths = 1;
        if (f->arg == 3) a.causal = MXA_CAUSAL_TOP_LEFT;
        if (f->arg == 4) a.io = CONFORM_IO_BUFFER, a.out_dtype = MXA_F16;
        if (f->arg == 5) a.io = CONFORM_IO_BUFFER, a.lse_buffer = 1;
        break;
    default: break;
    }
    desc = conform_recipe_desc(a.recipe);
    desc.causal = a.causal;
    desc.bc = a.bc;
    if (f->kind == F_NVFP4) {
        desc.format = MXA_FORMAT_NVFP4;
        desc.smooth = f->arg;
        desc.hadamard = 0;
    }
    conform_problem p;
    conform_result r;
    memset(&r, 0, sizeof r);
    r.nmse = NAN;
    if (conform_problem_make(&p, &a, conform_case_seed(ctx->seed, f->name))) {
        set(out, "error", "out of memory");
        return;
    }
    conform_attention_check(ctx, &desc, &p, &a, 0, &r);
    conform_problem_free(&p);
    if (r.status == CONFORM_PASS) set(out, "yes", r.message);
    else if (r.status == CONFORM_UNSUPPORTED) set(out, "no", r.message);
    else set(out, strncmp(r.message, "mxa_attention:", 14) == 0 ? "error" : "WRONG", r.message);
}

/* A kernel variant: a fresh runtime under the switch, and what the device then chooses. */
static void variant_cell(const char *id, const char *backend, const conform_switch *sw, cell *out)
{
    if (strcmp(sw->backend, backend) != 0) {
        set(out, "-", "another backend's switch");
        return;
    }
    conform_env_saved saved;
    if (conform_env_apply(&sw->env, 1, &saved)) {
        set(out, "error", "cannot set the variable");
        return;
    }
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_device_info info;
    mxa_status st = mxa_runtime_create(NULL, &rt);
    if (!st) st = mxa_device_open(rt, id, &dev);
    if (!st) st = mxa_device_info_of(dev, &info);
    if (st) set(out, st == MXA_ERR_UNSUPPORTED ? "no" : "error", mxa_last_error_message());
    else if (sw->policy == CONFORM_SW_MATCH) set(out, strcmp(info.variant, sw->env.value) == 0 ? "yes" : "no", info.variant_reason);
    else {
        char msg[CONFORM_MSG_LEN];
        snprintf(msg, sizeof msg, "variant %s: %s", info.variant, info.variant_reason);
        set(out, info.variant, msg);
    }
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    conform_env_restore(&sw->env, &saved);
}

int conform_support_feature_count(void)
{
    feature features[96];
    return build_features(features, 96);
}

void conform_support_column(mxa_runtime *rt, const char *id, uint64_t seed, mxa_device_info *info, conform_support_cell *col)
{
    feature features[96];
    const int nf = build_features(features, 96);
    conform_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.rt = rt;
    ctx.seed = seed;
    mxa_status st = mxa_device_open(rt, id, &ctx.dev);
    if (!st) st = mxa_device_info_of(ctx.dev, &ctx.info);
    if (st) {
        for (int i = 0; i < nf; i++) set(&col[i], "error", mxa_last_error_message());
        memset(info, 0, sizeof *info);
        snprintf(info->id, sizeof info->id, "%s", id);
        mxa_device_close(ctx.dev);
        return;
    }
    *info = ctx.info;
    for (int i = 0; i < nf; i++) {
        cell *c = &col[i];
        const feature *f = &features[i];
        if (f->kind == F_VARIANT) continue; /* after closing: a fresh runtime each */
        if (f->kind == F_RULE) {
            conform_result r;
            memset(&r, 0, sizeof r);
            mxa_rule rule;
            mxa_rule_parse(f->text, &rule);
            conform_quant_support(&ctx, rule, conform_case_seed(seed, f->name), &r);
            set(c, r.status == CONFORM_PASS ? "yes" : r.status == CONFORM_UNSUPPORTED ? "no" : "WRONG", r.message);
        } else {
            attention_cell(&ctx, f, c);
        }
    }
    mxa_device_close(ctx.dev);
    for (int i = 0; i < nf; i++)
        if (features[i].kind == F_VARIANT) variant_cell(id, ctx.info.backend, &conform_switches[features[i].arg], &col[i]);
}

int conform_support(mxa_runtime *rt, const char *const *ids, int nids, uint64_t seed, conform_format format)
{
    const int nf = conform_support_feature_count();
    mxa_device_info infos[MAX_DEV];
    cell *cols = calloc((size_t)(nf * (nids ? nids : 1)), sizeof *cols);
    if (!cols) {
        cli_error("conform: out of memory");
        return CLI_FAIL;
    }
    if (nids > MAX_DEV) nids = MAX_DEV;
    for (int d = 0; d < nids; d++) conform_support_column(rt, ids[d], seed, &infos[d], cols + (size_t)d * nf);
    const int rc = conform_support_print(infos, cols, nids, seed, format);
    free(cols);
    return rc;
}

int conform_support_print(const mxa_device_info *infos, const conform_support_cell *cols, int nids, uint64_t seed,
                          conform_format format)
{
    feature features[96];
    const int nf = build_features(features, 96);
    int rc = CLI_OK;
    /* the matrix, feature-major */
    cell *cells = calloc((size_t)(nf * (nids ? nids : 1)), sizeof *cells);
    if (!cells) {
        cli_error("conform: out of memory");
        return CLI_FAIL;
    }
    for (int d = 0; d < nids; d++)
        for (int i = 0; i < nf; i++) cells[i * nids + d] = cols[(size_t)d * nf + i];
    for (int i = 0; i < nf * nids; i++)
        if (strcmp(cells[i].status, "WRONG") == 0 || strcmp(cells[i].status, "error") == 0) rc = CLI_FAIL;

    if (format == CONFORM_JSON) {
        printf("{\n  \"devices\": [");
        for (int d = 0; d < nids; d++) {
            printf("%s\n    {\"id\": ", d ? "," : "");
            conform_json_string(infos[d].id);
            printf(", \"name\": ");
            conform_json_string(infos[d].name);
            printf(", \"variant\": ");
            conform_json_string(infos[d].variant);
            printf("}");
        }
        printf("\n  ],\n  \"features\": [");
        for (int i = 0; i < nf; i++) {
            printf("%s\n    {\"feature\": ", i ? "," : "");
            conform_json_string(features[i].name);
            printf(", \"group\": ");
            conform_json_string(features[i].group);
            printf(", \"results\": [");
            for (int d = 0; d < nids; d++) {
                printf("%s{\"device\": ", d ? ", " : "");
                conform_json_string(infos[d].id);
                printf(", \"status\": ");
                conform_json_string(cells[i * nids + d].status);
                printf(", \"message\": ");
                conform_json_string(cells[i * nids + d].message);
                printf("}");
            }
            printf("]}");
        }
        printf("\n  ]\n}\n");
    } else if (format == CONFORM_CSV) {
        printf("feature,group,device,status,message\n");
        for (int i = 0; i < nf; i++)
            for (int d = 0; d < nids; d++) {
                printf("\"%s\",%s,%s,%s,\"", features[i].name, features[i].group, infos[d].id, cells[i * nids + d].status);
                for (const char *p = cells[i * nids + d].message; *p; p++) {
                    if (*p == '"') putchar('"');
                    putchar(*p);
                }
                printf("\"\n");
            }
    } else {
        printf("mxa conform support: seed %llu\n\n%-30s", (unsigned long long)seed, "feature");
        for (int d = 0; d < nids; d++) printf(" %-18s", infos[d].id);
        printf("\n");
        const char *group = "";
        for (int i = 0; i < nf; i++) {
            int relevant = 0; /* a switch of a backend none of these devices has: leave the row out */
            for (int d = 0; d < nids; d++) relevant |= strcmp(cells[i * nids + d].status, "-") != 0;
            if (!relevant) continue;
            if (strcmp(group, features[i].group) != 0) printf("%s:\n", group = features[i].group);
            printf("  %-28s", features[i].name);
            for (int d = 0; d < nids; d++) printf(" %-18.18s", cells[i * nids + d].status);
            printf("\n");
        }
        printf("\ndevices:\n");
        for (int d = 0; d < nids; d++)
            printf("  %-10s %s, default variant %s, Bc %d\n", infos[d].id, infos[d].name, infos[d].variant, infos[d].default_bc);
        int notes = 0;
        for (int i = 0; i < nf; i++)
            for (int d = 0; d < nids; d++) {
                const cell *c = &cells[i * nids + d];
                if (strcmp(c->status, "no") && strcmp(c->status, "WRONG") && strcmp(c->status, "error")) continue;
                if (features[i].kind == F_VARIANT && strcmp(c->status, "no") == 0) continue; /* the reason is in probe */
                if (!notes++) printf("\nwhy not:\n");
                printf("  %s on %s: %s: %s\n", features[i].name, infos[d].id, c->status, c->message);
            }
    }
    free(cells);
    return rc;
}
