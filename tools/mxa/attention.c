/*
 * mxa attention --q Q.npy --k K.npy --v V.npy --out O.npy [switches] [--stats]
 *
 * Inputs are float32, float16 or float64 (converted once to float32) .npy files shaped [B, H, N, D], [H, N, D] or
 * [N, D] (the same rank for all three; k and v may have fewer heads: GQA).
 * The output is float32 with q's shape; --lse writes q's shape without D.
 * The recipe sets every switch; the other flags override one each.
 * --bias, --mask, --key-lengths and --causal ALIGN are docs/attention-inputs.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "measure.h"

enum { OPT_Q, OPT_K, OPT_V, OPT_OUT, OPT_RECIPE, OPT_HADAMARD, OPT_RULE, OPT_PLACEMENT, OPT_QUANTIZE, OPT_PV, OPT_CAUSAL,
       OPT_BIAS, OPT_MASK, OPT_KEY_LENGTHS, OPT_SCALE, OPT_BC, OPT_LSE, OPT_DEVICE, OPT_STATS, OPT_COUNT };

typedef struct input {
    const char *path;
    npy_array a;
    mxa_tensor t;
} input;

/* Reads one of q, k, v and views it as a 4-D tensor (leading axes of 1). */
static int load_input(const char *path, int want_rank, input *in)
{
    char shape[200];
    mxa_status st;
    in->path = path;
    if (cli_read_npy(path, &in->a)) return CLI_FAIL;
    npy_shape_string(in->a.rank, in->a.shape, shape, sizeof shape);
    if (in->a.dtype == NPY_U8) {
        cli_error("%s: dtype uint8 is not an attention input (expected float32, float16 or float64)", path);
        return CLI_FAIL;
    }
    if (in->a.rank < 2 || in->a.rank > 4) {
        cli_error("%s: shape %s has rank %d; attention takes [B, H, N, D], [H, N, D] or [N, D]", path, shape,
                  in->a.rank);
        return CLI_FAIL;
    }
    if (want_rank && in->a.rank != want_rank) {
        cli_error("%s: rank %d differs from the rank %d of --q (q, k and v need the same layout)", path, in->a.rank,
                  want_rank);
        return CLI_FAIL;
    }
    if (in->a.count == 0) {
        cli_error("%s: shape %s has no elements", path, shape);
        return CLI_FAIL;
    }
    int64_t d[4] = {1, 1, 1, 1};
    for (int i = 0; i < in->a.rank; i++) d[4 - in->a.rank + i] = in->a.shape[i];
    if ((st = mxa_tensor_init(&in->t, in->a.dtype == NPY_F16 ? MXA_F16 : MXA_F32, d[0], d[1], d[2], d[3], in->a.data))) {
        cli_library_error(path, st);
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* Reads a bias (float) or mask (bool or uint8) [B|1, H|1, Nq, Nk], [H, Nq, Nk] or [Nq, Nk]
 * as a 4-D tensor; the library checks the shape against q and k. */
static int load_side(const char *path, int is_mask, input *in)
{
    char shape[200];
    mxa_status st;
    in->path = path;
    if (cli_read_npy(path, &in->a)) return CLI_FAIL;
    npy_shape_string(in->a.rank, in->a.shape, shape, sizeof shape);
    const int is_bytes = in->a.dtype == NPY_U8 || in->a.dtype == NPY_BOOL;
    if (is_mask != is_bytes) {
        cli_error("%s: dtype %s is not a %s (expected %s)", path, npy_dtype_name(in->a.file_dtype), is_mask ? "mask" : "bias",
                  is_mask ? "bool or uint8, 0 = hidden" : "float32, float16 or float64");
        return CLI_FAIL;
    }
    if (in->a.rank < 2 || in->a.rank > 4 || in->a.count == 0) {
        cli_error("%s: shape %s; a %s is [B or 1, H or 1, Nq, Nk], [H, Nq, Nk] or [Nq, Nk]", path, shape,
                  is_mask ? "mask" : "bias");
        return CLI_FAIL;
    }
    int64_t d[4] = {1, 1, 1, 1};
    for (int i = 0; i < in->a.rank; i++) d[4 - in->a.rank + i] = in->a.shape[i];
    const mxa_dtype dt = is_mask ? MXA_BOOL : in->a.dtype == NPY_F16 ? MXA_F16 : MXA_F32;
    if ((st = mxa_tensor_init(&in->t, dt, d[0], d[1], d[2], d[3], in->a.data))) {
        cli_library_error(path, st);
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* "--key-lengths 5,7,..." into `out` (a new array of *count values). */
static int parse_key_lengths(const char *text, int32_t **out, int64_t *count)
{
    int64_t n = 1;
    for (const char *p = text; *p; p++) n += *p == ',';
    int32_t *v = malloc((size_t)n * sizeof *v);
    if (!v) {
        cli_error("--key-lengths: out of memory");
        return CLI_FAIL;
    }
    const char *p = text;
    for (int64_t i = 0; i < n; i++) {
        const char *comma = strchr(p, ',');
        char item[32];
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        long x;
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), p);
        if (len == 0 || len >= sizeof item || cli_int("--key-lengths", item, 0, INT32_MAX, 1, &x)) {
            if (len == 0 || len >= sizeof item)
                cli_error("--key-lengths %s: expected a comma-separated list of lengths, one per batch", text);
            free(v);
            return CLI_USAGE;
        }
        v[i] = (int32_t)x;
        p = comma ? comma + 1 : p + len;
    }
    *out = v;
    *count = n;
    return CLI_OK;
}

/* A rejected input value ("q: element 77 is NaN ...", "bias: element 3 is +Inf ...") is
 * reported against its file; the element index is the flat index in the file too. */
static void input_error(mxa_status st, const input *q, const input *k, const input *v, const input *bias)
{
    const char *msg = mxa_last_error_message();
    const input *in = NULL;
    size_t skip = 3;
    if (st == MXA_ERR_NON_FINITE && msg[0] && msg[1] == ':' && msg[2] == ' ')
        in = msg[0] == 'q' ? q : msg[0] == 'k' ? k : msg[0] == 'v' ? v : NULL;
    if (st == MXA_ERR_NON_FINITE && bias->path && strncmp(msg, "bias: ", 6) == 0) in = bias, skip = 6;
    if (in) cli_error("%s: %s", in->path, msg + skip);
    else cli_library_error("attention", st);
}

/* "qk,v,p", any order and subset, or "none"/"all". */
static int parse_quantize(const char *text, uint32_t *out)
{
    if (strcmp(text, "none") == 0) {
        *out = 0;
        return CLI_OK;
    }
    if (strcmp(text, "all") == 0) {
        *out = MXA_QUANT_ALL;
        return CLI_OK;
    }
    uint32_t bits = 0;
    for (const char *p = text;;) {
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        uint32_t bit = 0;
        if (len == 2 && strncmp(p, "qk", 2) == 0) bit = MXA_QUANT_QK;
        else if (len == 1 && *p == 'v') bit = MXA_QUANT_V;
        else if (len == 1 && *p == 'p') bit = MXA_QUANT_P;
        if (!bit || (bits & bit)) {
            cli_error("--quantize %s: expected a list of qk, v, p (e.g. qk,v,p), or none", text);
            return CLI_USAGE;
        }
        bits |= bit;
        if (!comma) break;
        p = comma + 1;
    }
    *out = bits;
    return CLI_OK;
}

/* The recipe, then each flag given overrides its switch. */
static int build_desc(const cli_option *o, mxa_attention_desc *desc)
{
    static const char *const recipes[] = {"mxattention", "ocp-direct", "fp32", "mxattention-fp8pv", NULL};
    static const char *const pv_formats[] = {"mxfp4", "mxfp8", NULL};
    static const char *const onoff[] = {"on", "off", NULL};
    static const char *const placements[] = {"pnq", "direct", NULL};
    static const char *const alignments[] = {"none", "bottom-right", "top-left", NULL};
    int rc, choice = 0;
    long bc;
    mxa_recipe recipe = MXA_RECIPE_MXATTENTION;
    if (o[OPT_RECIPE].value) {
        if ((rc = cli_choice("--recipe", o[OPT_RECIPE].value, recipes, &choice))) return rc;
        if (mxa_recipe_parse(o[OPT_RECIPE].value, &recipe)) return cli_library_error("--recipe", MXA_ERR_INVALID_ARGUMENT);
    }
    if (mxa_attention_desc_init(desc, recipe)) return cli_library_error("recipe", MXA_ERR_INVALID_ARGUMENT);
    if (o[OPT_HADAMARD].value) {
        if ((rc = cli_choice("--hadamard", o[OPT_HADAMARD].value, onoff, &choice))) return rc;
        desc->hadamard = choice == 0;
    }
    if (o[OPT_RULE].value && (rc = cli_rule("--rule", o[OPT_RULE].value, &desc->rule))) return rc;
    if (o[OPT_PLACEMENT].value) {
        if ((rc = cli_choice("--placement", o[OPT_PLACEMENT].value, placements, &choice))) return rc;
        desc->placement = choice == 0 ? MXA_PLACEMENT_PNQ : MXA_PLACEMENT_DIRECT;
    }
    if (o[OPT_QUANTIZE].value && (rc = parse_quantize(o[OPT_QUANTIZE].value, &desc->quantize))) return rc;
    if (o[OPT_PV].value) {
        if ((rc = cli_choice("--pv", o[OPT_PV].value, pv_formats, &choice))) return rc;
        desc->pv_format = choice == 1 ? MXA_PV_MXFP8 : MXA_PV_MXFP4;
    }
    desc->causal = MXA_CAUSAL_NONE;
    if (o[OPT_CAUSAL].value && !*o[OPT_CAUSAL].value) desc->causal = MXA_CAUSAL_BOTTOM_RIGHT; /* the bare flag, as before */
    else if (o[OPT_CAUSAL].value) {
        if ((rc = cli_choice("--causal", o[OPT_CAUSAL].value, alignments, &choice))) return rc;
        desc->causal = choice == 2 ? MXA_CAUSAL_TOP_LEFT : choice == 1 ? MXA_CAUSAL_BOTTOM_RIGHT : MXA_CAUSAL_NONE;
    }
    if (o[OPT_SCALE].value && (rc = cli_positive_float("--scale", o[OPT_SCALE].value, &desc->scale))) return rc;
    if (o[OPT_BC].value) {
        if ((rc = cli_int("--bc", o[OPT_BC].value, 32, 4096, 32, &bc))) return rc;
        desc->bc = (int)bc;
    }
    return CLI_OK;
}

static void print_row_sums(const char *label, const cli_row_stats *r)
{
    printf("  %-8s mean %.6f  min %.6f  max %.6f  max |sum-1| %.3g", label, r->mean, r->min, r->max, r->max_dev);
    if (r->skipped) printf("  (%lld rows with no visible key skipped)", (long long)r->skipped);
    printf("\n");
}

typedef struct stats {
    cli_diff vs_reference, vs_fp32;
    cli_row_stats direct, pnq;
} stats;

/* --stats: the device's output against the host reference of the same recipe
 * and Bc (not the device itself, which could share a fault), and against the
 * reference's fp32 recipe; the row sums direct placement and PNQ give. */
static int compute_stats(const mxa_attention_desc *desc, const input *q, const input *k, const input *v,
                         const float *o, int bc, stats *s)
{
    const int64_t n = q->t.shape[0] * q->t.shape[1] * q->t.shape[2] * q->t.shape[3];
    mxa_attention_desc fp32;
    mxa_attention_desc_init(&fp32, MXA_RECIPE_FP32);
    fp32.causal = desc->causal;
    fp32.scale = desc->scale;
    fp32.bias = desc->bias;
    fp32.mask = desc->mask;
    fp32.key_lengths = desc->key_lengths;
    /* the reference run at desc's own placement gives both its output and that placement's row sums */
    const int direct = desc->placement == MXA_PLACEMENT_DIRECT;
    cli_row_stats unused;
    float *ref = malloc((size_t)n * sizeof(float)), *ref32 = malloc((size_t)n * sizeof(float));
    int rc = CLI_FAIL;
    if (!ref || !ref32) {
        cli_error("stats: out of memory");
    } else if (!cli_reference_row_sums(desc, bc, desc->placement, &q->t, &k->t, &v->t, direct ? &s->direct : &s->pnq, ref) &&
               !cli_reference_row_sums(desc, bc, direct ? MXA_PLACEMENT_PNQ : MXA_PLACEMENT_DIRECT, &q->t, &k->t, &v->t,
                                       direct ? &s->pnq : &s->direct, NULL) &&
               !cli_reference_row_sums(&fp32, bc, fp32.placement, &q->t, &k->t, &v->t, &unused, ref32)) {
        s->vs_reference = cli_compare(o, ref, n);
        s->vs_fp32 = cli_compare(o, ref32, n);
        rc = CLI_OK;
    }
    free(ref);
    free(ref32);
    return rc;
}

static void print_diff(const char *label, const cli_diff *d, const char *what)
{
    printf("%-12s NMSE %.4e  cosine %.8f  max abs error %.4e  (%s)\n", label, d->nmse, d->cosine, d->max_abs, what);
}

static void print_stats(const mxa_device_info *di, const mxa_attention_desc *desc, const mxa_attention_info *info,
                        double seconds, const stats *s, const input *const in[3])
{
    char text[256], what[96];
    cli_desc_text(desc, text, sizeof text);
    printf("device       %s (%s), variant %s, Bc %d\n", di->id, di->name, info->variant, info->bc);
    printf("inputs      ");
    for (int i = 0; i < 3; i++)
        printf(" %c %s%s", "qkv"[i], npy_dtype_name(in[i]->a.file_dtype),
               in[i]->a.file_dtype == NPY_F64 ? " (converted to float32 on reading)" : "");
    printf("\nswitches     %s\n", text);
    printf("time         %.4f s wall", seconds);
    if (info->kernel_seconds >= 0.0) printf(", %.4f s kernel", info->kernel_seconds);
    printf("\n");
    snprintf(what, sizeof what, "host reference, these switches, Bc %d", info->bc);
    print_diff("vs reference", &s->vs_reference, what);
    print_diff("vs fp32", &s->vs_fp32, "host reference, fp32 recipe");
    printf("row sums of the attention weights (reference, these switches, Bc %d):\n", info->bc);
    print_row_sums("direct", &s->direct);
    print_row_sums("pnq", &s->pnq);
}

int cmd_attention(int argc, char **argv)
{
    cli_option o[OPT_COUNT] = {
        [OPT_Q] = {"--q", "Q.npy", "queries [B, H, Nq, D], [H, Nq, D] or [Nq, D]; float32, float16 or float64 (read as float32)", NULL},
        [OPT_K] = {"--k", "K.npy", "keys [B, Hkv, Nk, D] (Hkv divides H: grouped-query attention)", NULL},
        [OPT_V] = {"--v", "V.npy", "values, k's shape", NULL},
        [OPT_OUT] = {"--out", "O.npy", "output, float32, q's shape (links followed; /dev/null written in place)", NULL},
        [OPT_RECIPE] = {"--recipe", "R", "mxattention (default: Hadamard + UOS + PNQ), ocp-direct, fp32 or mxattention-fp8pv (P and V in MXFP8)", NULL},
        [OPT_HADAMARD] = {"--hadamard", "on|off", "rotate Q and K by the Walsh-Hadamard matrix", NULL},
        [OPT_RULE] = {"--rule", "R", "shared-exponent rule: ocp, tfs, uos or q=<x>, x in [6, 8]", NULL},
        [OPT_PLACEMENT] = {"--placement", "pnq|direct", "the row sum adds the quantized P (pnq) or the unquantized P (direct)", NULL},
        [OPT_QUANTIZE] = {"--quantize", "LIST", "what is quantized: a list of qk, v, p, or none", NULL},
        [OPT_PV] = {"--pv", "mxfp4|mxfp8", "the format of P and V: MXFP4 with --rule, or MXFP8 E4M3 with the OCP floor rule", NULL},
        [OPT_CAUSAL] = {"--causal", "[ALIGN]", "causal mask: bottom-right (also --causal alone: the last row sees every key), top-left (torch's is_causal) or none", NULL},
        [OPT_BIAS] = {"--bias", "B.npy", "additive bias [B|1, H|1, Nq, Nk] (or [H, Nq, Nk], [Nq, Nk]), float32/16/64, added to the scaled scores; -inf hides a key", NULL},
        [OPT_MASK] = {"--mask", "M.npy", "boolean mask, the bias's shapes, bool or uint8: 0 hides key j from row i", NULL},
        [OPT_KEY_LENGTHS] = {"--key-lengths", "L,L,...", "per-batch key lengths (B values in [0, Nk]): batch b has only its first L keys", NULL},
        [OPT_SCALE] = {"--scale", "X", "softmax scale (default 1/sqrt(D))", NULL},
        [OPT_BC] = {"--bc", "N", "key-tile size, a multiple of 32 (default: the device's)", NULL},
        [OPT_LSE] = {"--lse", "L.npy", "also write the per-row log-sum-exp, float32, q's shape without D", NULL},
        [OPT_DEVICE] = {"--device", "ID", "device: auto (default), cpu, vulkan:0, opencl:0, hip:0", NULL},
        [OPT_STATS] = {"--stats", NULL, "print device, time, accuracy vs the host reference (same recipe, Bc) and its fp32, row sums", NULL},
    };
    cli_spec spec = {"attention", "--q Q.npy --k K.npy --v V.npy --out O.npy [options]",
                     "Runs MXFP4 attention softmax(q k^T * scale + bias) v on .npy inputs. The recipe sets every\n"
                     "switch of SPEC.md; --hadamard, --rule, --placement and --quantize override one each.\n"
                     "--bias, --mask, --key-lengths and --causal follow docs/attention-inputs.md.",
                     o, OPT_COUNT, 0, 0, {NULL}, 0};
    int rc = cli_parse(&spec, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;
    static const char *const required[] = {"--q", "--k", "--v", "--out"};
    for (int i = OPT_Q; i <= OPT_OUT; i++)
        if (!o[i].value) {
            cli_error("attention: %s is required (see 'mxa attention --help')", required[i]);
            return CLI_USAGE;
        }
    mxa_attention_desc desc;
    if ((rc = build_desc(o, &desc))) return rc;
    const cli_file ins[] = {{"--q", o[OPT_Q].value}, {"--k", o[OPT_K].value}, {"--v", o[OPT_V].value}};
    const cli_file outs_given[] = {{"--out", o[OPT_OUT].value}, {"--lse", o[OPT_LSE].value}};
    if ((rc = cli_check_files(ins, 3, outs_given, 2))) return rc;

    input q = {0}, k = {0}, v = {0}, bias = {0}, mask = {0};
    int32_t *lengths = NULL;
    int64_t nlengths = 0;
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    float *out = NULL, *lse = NULL;
    cli_outputs outs = {0};
    mxa_status st;
    rc = CLI_FAIL;
    if (load_input(o[OPT_Q].value, 0, &q) || load_input(o[OPT_K].value, q.a.rank, &k) ||
        load_input(o[OPT_V].value, q.a.rank, &v) || (o[OPT_BIAS].value && load_side(o[OPT_BIAS].value, 0, &bias)) ||
        (o[OPT_MASK].value && load_side(o[OPT_MASK].value, 1, &mask)))
        goto out;
    if (bias.path) desc.bias = &bias.t;
    if (mask.path) desc.mask = &mask.t;
    if (o[OPT_KEY_LENGTHS].value) {
        if ((rc = parse_key_lengths(o[OPT_KEY_LENGTHS].value, &lengths, &nlengths))) goto out;
        rc = CLI_FAIL;
        if (nlengths != q.t.shape[0]) {
            cli_error("--key-lengths: %lld length%s for a batch of %lld (one per batch)", (long long)nlengths,
                      nlengths == 1 ? "" : "s", (long long)q.t.shape[0]);
            rc = CLI_USAGE;
            goto out;
        }
        desc.key_lengths = lengths;
    }
    if (cli_open_device(o[OPT_DEVICE].value, &rt, &dev)) goto out;
    const int64_t rows = q.t.shape[0] * q.t.shape[1] * q.t.shape[2];
    out = malloc((size_t)(rows * q.t.shape[3]) * sizeof(float));
    lse = o[OPT_LSE].value ? malloc((size_t)rows * sizeof(float)) : NULL;
    if (!out || (o[OPT_LSE].value && !lse)) {
        cli_error("attention: out of memory");
        goto out;
    }
    mxa_tensor to, tl;
    if ((st = mxa_tensor_init(&to, MXA_F32, q.t.shape[0], q.t.shape[1], q.t.shape[2], q.t.shape[3], out)) ||
        (lse && (st = mxa_tensor_init(&tl, MXA_F32, q.t.shape[0], q.t.shape[1], q.t.shape[2], 1, lse)))) {
        cli_library_error("attention", st);
        goto out;
    }
    mxa_attention_info info;
    const double t0 = cli_now();
    if ((st = mxa_attention(dev, &desc, &q.t, &k.t, &v.t, &to, lse ? &tl : NULL, &info))) {
        input_error(st, &q, &k, &v, &bias);
        goto out;
    }
    const double seconds = cli_now() - t0;

    /* Everything that can fail runs before the outputs are renamed into place. */
    stats s;
    if (o[OPT_STATS].value && compute_stats(&desc, &q, &k, &v, out, info.bc, &s)) goto out;
    if (cli_outputs_add(&outs, o[OPT_OUT].value, NPY_F32, q.a.rank, q.a.shape, out) ||
        (lse && cli_outputs_add(&outs, o[OPT_LSE].value, NPY_F32, q.a.rank - 1, q.a.shape, lse)) ||
        cli_outputs_commit(&outs))
        goto out;
    mxa_device_info di;
    mxa_device_info_of(dev, &di);
    if (o[OPT_STATS].value) {
        const input *const in[3] = {&q, &k, &v};
        print_stats(&di, &desc, &info, seconds, &s, in);
    } else {
        char shape[200];
        npy_shape_string(q.a.rank, q.a.shape, shape, sizeof shape);
        printf("wrote %s: float32 %s (recipe %s%s on %s, variant %s, Bc %d, %.3f s)\n", o[OPT_OUT].value, shape,
               o[OPT_RECIPE].value ? o[OPT_RECIPE].value : "mxattention",
               (o[OPT_HADAMARD].value || o[OPT_RULE].value || o[OPT_PLACEMENT].value || o[OPT_QUANTIZE].value)
                   ? " with overrides" : "",
               di.id, info.variant, info.bc, seconds);
    }
    rc = CLI_OK;
out:
    cli_outputs_discard(&outs);
    free(out);
    free(lse);
    npy_free(&q.a);
    npy_free(&k.a);
    npy_free(&v.a);
    npy_free(&bias.a);
    npy_free(&mask.a);
    free(lengths);
    cli_close_device(rt, dev);
    return rc;
}
