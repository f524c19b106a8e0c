/*
 * mxa conform: external vectors, so another implementation can be checked
 * against ours and ours against it.
 *
 * A vector directory holds, per case <name> (any file stem without '.'):
 *   attention:  <name>.q.npy  [B,H,Nq,D]  float32 or float16 (rank 2 [N,D] and 3 [H,N,D] also accepted)
 *               <name>.k.npy  [B,Hkv,Nk,D]
 *               <name>.v.npy  [B,Hkv,Nk,D]
 *               <name>.out.npy [B,H,Nq,D] the expected output (float32 or float16)
 *               <name>.lse.npy [B,H,Nq]   optional expected per-row LSE (float32, -inf for empty rows)
 *   quantize:   <name>.x.npy  [..., K] float32 or float16, blocks of 32 along the last axis
 *               <name>.codes.npy [rows, ceil(K/32)*16] uint8, <name>.scales.npy [rows, ceil(K/32)] uint8
 * and how it was computed, in <name>.json (flat object; every key optional):
 *   {"kind": "attention"|"quantize", "recipe": "mxattention"|"ocp-direct"|"fp32"|<conform recipe>,
 *    "hadamard": 0|1, "rule": "ocp"|"tfs"|"uos"|"q=<x>", "placement": "pnq"|"direct",
 *    "quantize": "qk,v,p"|"none", "causal": 0|1, "bc": 64, "scale": 0.125, "nmse_max": 1e-5}
 * or, without a .json, in the name: '_'-separated tokens such as a recipe name,
 * "causal", "bc128", "ocp"/"tfs"/"uos"/"q=6.5" (e.g. mine_mxattention_causal_bc64.q.npy).
 * Defaults: mxattention, non-causal, Bc 64, scale 1/sqrt(D). The device runs with
 * that Bc (the result depends on it) and is compared under conform's tolerance
 * for the recipe (nmse_max, when given, replaces its NMSE bound): the device and
 * the expected output each element by element against conform's trace of the
 * reference within bounds derived from fp32 rounding, a row that misses them
 * explained by P~ code flips or failed, naming the row and element
 * (conform_flip.c).
 *
 * --write-vectors DIR writes the built-in attention and quantize cases in this
 * form: our reference outputs at Bc 64 (or the case's own Bc), and the exact
 * host model's codes.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "conform.h"

#define EXPORT_BC 64

/* ------------------------------------------------------------- config */

typedef struct vec_config {
    int quantize_kind;    /* 1: a quantize vector */
    mxa_attention_desc desc;
    int bc;
    double nmse_max;      /* 0: the table's */
    mxa_rule rule;        /* quantize vectors */
    char error[256];
} vec_config;

static int set_recipe(vec_config *cfg, const char *name)
{
    const int ri = conform_recipe_find(name);
    if (ri < 0) return -1;
    const int causal = cfg->desc.causal;
    const float scale = cfg->desc.scale;
    cfg->desc = conform_recipe_desc(ri);
    cfg->desc.causal = causal;
    cfg->desc.scale = scale;
    return 0;
}

static int set_quant_bits(vec_config *cfg, const char *text)
{
    uint32_t bits = 0;
    if (strcmp(text, "none") != 0 && *text) {
        char buf[64], *save = NULL;
        snprintf(buf, sizeof buf, "%s", text);
        for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
            if (strcmp(tok, "qk") == 0) bits |= MXA_QUANT_QK;
            else if (strcmp(tok, "v") == 0) bits |= MXA_QUANT_V;
            else if (strcmp(tok, "p") == 0) bits |= MXA_QUANT_P;
            else return -1;
        }
    }
    cfg->desc.quantize = bits;
    return 0;
}

/* One key/value of the sidecar (value as text; arrays joined with ','). */
static int apply_key(vec_config *cfg, const char *key, const char *val)
{
    char *end;
    if (strcmp(key, "kind") == 0) {
        if (strcmp(val, "quantize") == 0) cfg->quantize_kind = 1;
        else if (strcmp(val, "attention") == 0) cfg->quantize_kind = 0;
        else return -1;
    } else if (strcmp(key, "recipe") == 0) {
        return set_recipe(cfg, val);
    } else if (strcmp(key, "hadamard") == 0) {
        cfg->desc.hadamard = strcmp(val, "true") == 0 || strcmp(val, "1") == 0;
    } else if (strcmp(key, "rule") == 0) {
        if (mxa_rule_parse(val, &cfg->rule)) return -1;
        cfg->desc.rule = cfg->rule;
    } else if (strcmp(key, "placement") == 0) {
        if (strcmp(val, "pnq") == 0) cfg->desc.placement = MXA_PLACEMENT_PNQ;
        else if (strcmp(val, "direct") == 0) cfg->desc.placement = MXA_PLACEMENT_DIRECT;
        else return -1;
    } else if (strcmp(key, "quantize") == 0) {
        return set_quant_bits(cfg, val);
    } else if (strcmp(key, "causal") == 0) {
        cfg->desc.causal = strcmp(val, "true") == 0 || strcmp(val, "1") == 0;
    } else if (strcmp(key, "bc") == 0) {
        long v = strtol(val, &end, 10);
        if (*end || v <= 0 || v % 32 || v > 4096) return -1;
        cfg->bc = (int)v;
    } else if (strcmp(key, "scale") == 0) {
        double v = strtod(val, &end);
        if (*end || !(v >= 0.0)) return -1;
        cfg->desc.scale = (float)v;
    } else if (strcmp(key, "nmse_max") == 0) {
        double v = strtod(val, &end);
        if (*end || !(v >= 0.0)) return -1;
        cfg->nmse_max = v;
    }
    return 0; /* unknown keys (case, seed, notes) are kept for people, ignored here */
}

/* A flat JSON object: "key": string | number | true/false/null | [strings].
 * Keys and values (an array's strings joined with ',') longer than their
 * buffers are refused, never truncated or written past. */
static int parse_json(vec_config *cfg, const char *s)
{
    const char *p = s;
#define WS() while (isspace((unsigned char)*p)) p++
/* appends one character to val, or fails naming the key */
#define PUT(ch)                                                                                                    \
    do {                                                                                                           \
        if (n + 1 >= sizeof val) {                                                                                 \
            snprintf(cfg->error, sizeof cfg->error, "\"%.40s\": value longer than %d characters", key,             \
                     (int)sizeof val - 1);                                                                         \
            return -1;                                                                                             \
        }                                                                                                          \
        val[n++] = (ch);                                                                                           \
    } while (0)
    WS();
    if (*p++ != '{') return -1;
    for (;;) {
        char key[64], val[256];
        WS();
        if (*p == '}') return 0;
        if (*p++ != '"') return -1;
        size_t n = 0;
        while (*p && *p != '"' && n + 1 < sizeof key) key[n++] = *p++;
        key[n] = '\0';
        if (*p++ != '"') return -1;
        WS();
        if (*p++ != ':') return -1;
        WS();
        n = 0;
        if (*p == '"' || *p == '[') {
            const int array = *p == '[';
            if (array) p++;
            for (int items = 0;; items++) {
                WS();
                if (array && *p == ']') { p++; break; }
                if (array && items) { /* strings after the first: ',' between them */
                    if (*p++ != ',') return -1;
                    WS();
                    PUT(',');
                }
                if (*p != '"') return -1;
                p++;
                while (*p && *p != '"') {
                    if (*p == '\\' && p[1]) p++;
                    PUT(*p);
                    p++;
                }
                if (*p++ != '"') return -1;
                if (!array) break;
            }
        } else {
            while (*p && *p != ',' && *p != '}' && !isspace((unsigned char)*p)) {
                PUT(*p);
                p++;
            }
        }
#undef PUT
        val[n] = '\0';
        if (apply_key(cfg, key, val)) {
            snprintf(cfg->error, sizeof cfg->error, "bad value for \"%.40s\": '%.60s'", key, val);
            return -1;
        }
        WS();
        if (*p == ',') p++;
        else if (*p == '}') return 0;
        else return -1;
    }
#undef WS
}

/* Tokens of the file name, then the sidecar on top. */
static int read_config(const char *stem, vec_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    mxa_attention_desc_init(&cfg->desc, MXA_RECIPE_MXATTENTION);
    cfg->rule = mxa_rule_uos();
    cfg->bc = EXPORT_BC;
    const char *base = strrchr(stem, '/');
    base = base ? base + 1 : stem;
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", base);
    for (char *tok = strtok_r(buf, "_", &save); tok; tok = strtok_r(NULL, "_", &save)) {
        mxa_rule rule;
        if (mxa_rule_parse(tok, &rule) == MXA_OK) cfg->rule = rule; /* "tfs" is a rule and a recipe: both */
        if (set_recipe(cfg, tok) == 0) continue;
        if (strcmp(tok, "causal") == 0) cfg->desc.causal = 1;
        else if (strcmp(tok, "noncausal") == 0) cfg->desc.causal = 0;
        else if (strncmp(tok, "bc", 2) == 0 && isdigit((unsigned char)tok[2])) apply_key(cfg, "bc", tok + 2);
    }
    char path[1100];
    snprintf(path, sizeof path, "%s.json", stem);
    /* O_NONBLOCK: a FIFO must not wait for a writer (it would hang forever); regular files only */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0; /* no sidecar: the name's tokens and the defaults */
        snprintf(cfg->error, sizeof cfg->error, "%.60s.json: %s", base, strerror(errno));
        return -1;
    }
    struct stat sb;
    char text[4096];
    ssize_t n = -1;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(cfg->error, sizeof cfg->error, "%.60s.json: %s", base,
                 S_ISFIFO(sb.st_mode) ? "is a FIFO (named pipe), not a regular file" : "is not a regular file");
    } else if (sb.st_size >= (off_t)sizeof text) {
        snprintf(cfg->error, sizeof cfg->error, "%.60s.json: %lld bytes, more than the %d a sidecar may have", base,
                 (long long)sb.st_size, (int)sizeof text - 1);
    } else {
        size_t got = 0;
        for (ssize_t k; got < sizeof text - 1 && (k = read(fd, text + got, sizeof text - 1 - got)) != 0;) {
            if (k < 0) {
                if (errno == EINTR) continue;
                break;
            }
            got += (size_t)k;
        }
        n = (ssize_t)got;
        if (got < (size_t)sb.st_size) {
            snprintf(cfg->error, sizeof cfg->error, "%.60s.json: %s", base, errno ? strerror(errno) : "short read");
            n = -1;
        }
    }
    close(fd);
    if (n < 0) return -1;
    text[n] = '\0';
    if (parse_json(cfg, text)) {
        if (!cfg->error[0]) snprintf(cfg->error, sizeof cfg->error, "%s.json: not a flat JSON object", base);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- reading */

/* Loads <stem>.<part>.npy as float32 with its shape widened to rank 4. */
static int load4(const char *stem, const char *part, int optional, float **data, int64_t shape[4], conform_result *r)
{
    char path[1100], err[NPY_ERR_LEN];
    snprintf(path, sizeof path, "%s.%s.npy", stem, part);
    npy_array a;
    mxa_status st = npy_read(path, &a, err, sizeof err);
    if (st == MXA_ERR_NOT_FOUND && optional) return 1;
    if (st) return conform_fail(r, "%s: %s", path, err), -1;
    if ((a.dtype != NPY_F32 && a.dtype != NPY_F16) || a.rank < 1 || a.rank > 4) {
        conform_fail(r, "%s: expected float32/float16 of rank 1..4, got %s rank %d", path, npy_dtype_name(a.dtype), a.rank);
        npy_free(&a);
        return -1;
    }
    for (int i = 0; i < 4; i++) shape[i] = 1;
    for (int i = 0; i < a.rank; i++) shape[4 - a.rank + i] = a.shape[i];
    *data = cli_to_f32(&a);
    npy_free(&a);
    if (!*data) return conform_fail(r, "out of memory"), -1;
    return 0;
}

static void run_vector_attention(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    vec_config cfg;
    float *q = NULL, *k = NULL, *v = NULL, *out = NULL, *lse = NULL;
    int64_t sq[4], sk[4], sv[4], so[4], sl[4];
    conform_outputs dev = {0}, ours = {0};
    if (read_config(c->path, &cfg)) {
        conform_fail(r, "%s", cfg.error);
        return;
    }
    if (load4(c->path, "q", 0, &q, sq, r) || load4(c->path, "k", 0, &k, sk, r) || load4(c->path, "v", 0, &v, sv, r) ||
        load4(c->path, "out", 0, &out, so, r) < 0)
        goto done;
    const int have_lse = load4(c->path, "lse", 1, &lse, sl, r);
    if (have_lse < 0) goto done;
    if (sq[0] != sk[0] || memcmp(sk, sv, sizeof sk) || memcmp(sq, so, sizeof sq) || sq[3] != sk[3]) {
        conform_fail(r, "shapes disagree: q [%lld,%lld,%lld,%lld], k [%lld,%lld,%lld,%lld], v/out must match k/q",
                     (long long)sq[0], (long long)sq[1], (long long)sq[2], (long long)sq[3], (long long)sk[0],
                     (long long)sk[1], (long long)sk[2], (long long)sk[3]);
        goto done;
    }
    /* lse [B,H,Nq] (leading 1s may be left out) or [B,H,Nq,1]; the right count in another shape is refused */
    if (have_lse == 0 && !(sl[0] == 1 && sl[1] == sq[0] && sl[2] == sq[1] && sl[3] == sq[2]) &&
        !(sl[0] == sq[0] && sl[1] == sq[1] && sl[2] == sq[2] && sl[3] == 1)) {
        conform_fail(r, "lse has shape [%lld,%lld,%lld,%lld] (widened to rank 4), expected [B,H,Nq] = [%lld,%lld,%lld]",
                     (long long)sl[0], (long long)sl[1], (long long)sl[2], (long long)sl[3], (long long)sq[0],
                     (long long)sq[1], (long long)sq[2]);
        goto done;
    }
    conform_problem p = {sq[0], sq[1], sk[1], sq[2], sk[2], sq[3], q, k, v, NULL, 0, 0, NULL, 0, 0, NULL};
    conform_attn_params a;
    memset(&a, 0, sizeof a);
    a.lse = have_lse == 0;
    mxa_attention_desc desc = cfg.desc;
    desc.bc = cfg.bc;
    mxa_status st = conform_device_attention(ctx, &desc, &p, &a, &dev, r);
    if (r->status == CONFORM_FAIL) goto done;
    if (st == MXA_ERR_UNSUPPORTED) {
        r->status = CONFORM_UNSUPPORTED;
        snprintf(r->message, sizeof r->message, "%s", mxa_last_error_message());
        goto done;
    }
    if (st) {
        conform_fail(r, "mxa_attention: %s: %s", mxa_status_string(st), mxa_last_error_message());
        goto done;
    }
    r->bc = dev.info.bc;
    snprintf(r->variant, sizeof r->variant, "%s", dev.info.variant);
    /* no run info: the expected outputs come from another implementation, not from this device's
     * variant (whose documented limits conform_compare allows only on the device's side) */
    conform_outputs theirs = {out, have_lse == 0 ? lse : NULL, {0}};
    int ok = conform_compare(&desc, cfg.bc, MXA_F32, &p, &dev, &theirs, "the vectors", r);
    if (cfg.nmse_max > 0.0) { /* the vector's own bound replaces the table's */
        r->threshold = cfg.nmse_max;
        if (r->nmse <= cfg.nmse_max && !ok && strncmp(r->message, "nmse", 4) == 0) ok = 1, r->status = CONFORM_PASS;
        else if (r->nmse > cfg.nmse_max && ok) ok = 0, conform_fail(r, "nmse %.3e > %.0e (nmse_max of the vector)", r->nmse, cfg.nmse_max);
    }
    /* and our reference against theirs, to tell whose side a difference is on */
    conform_result scratch = {0};
    if (conform_reference(&desc, cfg.bc, &p, 0, &ours, &scratch) == 0) {
        cli_diff dref = cli_compare(ours.o, out, p.b * p.h * p.nq * p.d);
        size_t len = strlen(r->message);
        snprintf(r->message + len, sizeof r->message - len, "%s(our reference vs the vectors: nmse %.2e)", len ? " " : "",
                 dref.nmse);
    }
done:
    conform_outputs_free(&dev);
    conform_outputs_free(&ours);
    free(q);
    free(k);
    free(v);
    free(out);
    free(lse);
}

static void run_vector_quantize(conform_ctx *ctx, const conform_case *c, conform_result *r)
{
    vec_config cfg;
    npy_array x = {0}, codes = {0}, scales = {0};
    float *xf = NULL;
    char path[1100], err[NPY_ERR_LEN];
    if (read_config(c->path, &cfg)) {
        conform_fail(r, "%s", cfg.error);
        return;
    }
    const char *parts[3] = {"x", "codes", "scales"};
    npy_array *arrs[3] = {&x, &codes, &scales};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s.%s.npy", c->path, parts[i]);
        if (npy_read(path, arrs[i], err, sizeof err)) {
            conform_fail(r, "%s: %s", path, err);
            goto done;
        }
    }
    if (x.rank < 1 || (x.dtype != NPY_F32 && x.dtype != NPY_F16) || codes.dtype != NPY_U8 || scales.dtype != NPY_U8) {
        conform_fail(r, "expected x float32/float16, codes and scales uint8");
        goto done;
    }
    const int64_t cols = x.shape[x.rank - 1], rows = cols ? x.count / cols : 0, nblk = (cols + 31) / 32;
    if (rows < 1 || codes.count != rows * nblk * 16 || scales.count != rows * nblk) {
        conform_fail(r, "sizes disagree: x has %lld rows of %lld; codes need %lld bytes (have %lld), scales %lld (have %lld)",
                     (long long)rows, (long long)cols, (long long)(rows * nblk * 16), (long long)codes.count,
                     (long long)(rows * nblk), (long long)scales.count);
        goto done;
    }
    /* the right count is not enough: codes [rows, nblk*16] and scales [rows, nblk],
     * or x's leading shape followed by nblk*16 / nblk */
    for (int i = 1; i < 3; i++) {
        const npy_array *a = arrs[i];
        const int64_t last = i == 1 ? nblk * 16 : nblk;
        int ok = a->rank >= 1 && a->shape[a->rank - 1] == last;
        if (ok && a->rank == 2) ok = a->shape[0] == rows;
        else if (ok) {
            ok = a->rank == x.rank;
            for (int j = 0; ok && j + 1 < x.rank; j++) ok = a->shape[j] == x.shape[j];
        }
        if (!ok) {
            char got[96], want[96];
            npy_shape_string(a->rank, a->shape, got, sizeof got);
            int64_t w[2] = {rows, last};
            npy_shape_string(2, w, want, sizeof want);
            conform_fail(r, "%s.%s.npy: shape %s, expected %s (x is %lld rows of %lld: %lld blocks of 32 per row)", c->path,
                         parts[i], got, want, (long long)rows, (long long)cols, (long long)nblk);
            goto done;
        }
    }
    xf = cli_to_f32(&x);
    if (!xf) {
        conform_fail(r, "out of memory");
        goto done;
    }
    conform_quant_vector_check(ctx, xf, rows, cols, cfg.rule, codes.data, scales.data, r);
done:
    free(xf);
    npy_free(&x);
    npy_free(&codes);
    npy_free(&scales);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int conform_add_vector_cases(conform_case_list *list, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        cli_error("conform: --vectors %s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const size_t len = strlen(e->d_name);
        const int att = len > 6 && strcmp(e->d_name + len - 6, ".q.npy") == 0;
        const int qnt = len > 6 && strcmp(e->d_name + len - 6, ".x.npy") == 0;
        if (!att && !qnt) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, (size_t)cap * sizeof *nn);
            if (!nn) { rc = -1; break; }
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) { rc = -1; break; }
        n++;
    }
    closedir(d);
    if (rc == 0 && n > 1) qsort(names, (size_t)n, sizeof *names, by_name); /* names is NULL when n == 0 */
    for (int i = 0; rc == 0 && i < n; i++) {
        const size_t len = strlen(names[i]);
        const int qnt = strcmp(names[i] + len - 6, ".x.npy") == 0;
        names[i][len - 6] = '\0';
        conform_case c;
        memset(&c, 0, sizeof c);
        snprintf(c.name, sizeof c.name, "vectors/%s", names[i]);
        c.group = "vectors";
        c.what = qnt ? "external quantize vector: device codes vs the given codes" : "external attention vector: device vs the given output";
        c.flags = CF_QUICK | CF_VARIANT; /* every kernel variant must meet the vectors */
        c.run = qnt ? run_vector_quantize : run_vector_attention;
        const size_t plen = strlen(dir) + len + 2;
        c.path = malloc(plen);
        if (!c.path) { rc = -1; break; }
        snprintf(c.path, plen, "%s/%s", dir, names[i]);
        if (!conform_case_add(list, &c)) {
            free(c.path);
            rc = -1;
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (rc) cli_error("conform: out of memory reading %s", dir);
    else if (n == 0) cli_error("conform: --vectors %s: no <name>.q.npy or <name>.x.npy files there", dir);
    return rc || n == 0 ? -1 : 0;
}

/* ------------------------------------------------------------- writing */

static int write_npy(cli_outputs *outs, const char *dir, const char *stem, const char *part, npy_dtype dt, int rank,
                     const int64_t *shape, const void *data)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s.%s", dir, stem, part);
    return cli_outputs_add(outs, path, dt, rank, shape, data);
}

static int write_json(const char *dir, const char *stem, const char *text)
{
    char path[1100], tmp[1120];
    snprintf(path, sizeof path, "%s/%s.json", dir, stem);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        cli_error("%s: %s", path, strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}

static int write_attention(const char *dir, const char *stem, const conform_case *c, uint64_t seed)
{
    conform_problem p;
    conform_outputs ref = {0};
    conform_result r;
    memset(&r, 0, sizeof r);
    cli_outputs outs = {0};
    int rc = -1;
    conform_attn_params a;
    uint64_t data_seed;
    conform_attn_case_params(c, seed, &a, &data_seed); /* attention/random/NN: the shape drawn from the seed */
    if (conform_problem_make(&p, &a, data_seed)) {
        cli_error("conform: out of memory");
        return -1;
    }
    mxa_attention_desc desc = conform_recipe_desc(a.recipe);
    desc.causal = a.causal;
    if (c->index > 0) desc.scale = (float)c->index / 1000.0f;
    const int bc = a.bc ? a.bc : EXPORT_BC;
    if (conform_reference(&desc, bc, &p, 1, &ref, &r)) {
        cli_error("conform: %s: %s", c->name, r.message);
        goto out;
    }
    const int64_t sq[4] = {p.b, p.h, p.nq, p.d}, skv[4] = {p.b, p.hkv, p.nk, p.d}, sl[3] = {p.b, p.h, p.nq};
    /* two batches: cli_outputs holds four files at a time */
    if (write_npy(&outs, dir, stem, "q.npy", NPY_F32, 4, sq, p.q) || write_npy(&outs, dir, stem, "k.npy", NPY_F32, 4, skv, p.k) ||
        write_npy(&outs, dir, stem, "v.npy", NPY_F32, 4, skv, p.v) || cli_outputs_commit(&outs) ||
        write_npy(&outs, dir, stem, "out.npy", NPY_F32, 4, sq, ref.o) ||
        write_npy(&outs, dir, stem, "lse.npy", NPY_F32, 3, sl, ref.lse) || cli_outputs_commit(&outs))
        goto out;
    char rule[32] = "uos", json[512];
    mxa_rule_name(desc.rule, rule, sizeof rule);
    snprintf(json, sizeof json,
             "{\"kind\": \"attention\", \"case\": \"%s\", \"recipe\": \"%s\", \"hadamard\": %d, \"rule\": \"%s\", "
             "\"placement\": \"%s\", \"quantize\": \"%s%s%s%s\", \"causal\": %d, \"bc\": %d, \"scale\": %.9g, \"seed\": %llu}\n",
             c->name, conform_recipes[a.recipe].name, desc.hadamard, rule,
             desc.placement == MXA_PLACEMENT_PNQ ? "pnq" : "direct", desc.quantize ? "" : "none",
             (desc.quantize & MXA_QUANT_QK) ? "qk," : "", (desc.quantize & MXA_QUANT_V) ? "v," : "",
             (desc.quantize & MXA_QUANT_P) ? "p" : "", desc.causal, bc,
             (double)(desc.scale > 0.0f ? desc.scale : (float)(1.0 / sqrt((double)p.d))), (unsigned long long)seed);
    /* "qk,v," -> "qk,v": drop a trailing comma */
    char *tail = strstr(json, ",\", \"causal\"");
    if (tail) memmove(tail, tail + 1, strlen(tail));
    rc = write_json(dir, stem, json);
out:
    cli_outputs_discard(&outs);
    conform_outputs_free(&ref);
    conform_problem_free(&p);
    return rc;
}

static int write_quantize(const char *dir, const char *stem, const conform_case *c, uint64_t seed, int *written)
{
    conform_quant_data qd;
    cli_outputs outs = {0};
    const int st = conform_quant_vector(c, seed, &qd);
    if (st > 0) return 0;
    if (st < 0) {
        cli_error("conform: out of memory");
        return -1;
    }
    const int64_t nblk = (qd.cols + 31) / 32;
    const int64_t sx[2] = {qd.rows, qd.cols}, sc[2] = {qd.rows, nblk * 16}, ss[2] = {qd.rows, nblk};
    int rc = -1;
    if (write_npy(&outs, dir, stem, "x.npy", NPY_F32, 2, sx, qd.x) || write_npy(&outs, dir, stem, "codes.npy", NPY_U8, 2, sc, qd.codes) ||
        write_npy(&outs, dir, stem, "scales.npy", NPY_U8, 2, ss, qd.scales) || cli_outputs_commit(&outs))
        goto out;
    char rule[32] = "uos", json[256];
    mxa_rule_name(qd.rule, rule, sizeof rule);
    snprintf(json, sizeof json, "{\"kind\": \"quantize\", \"case\": \"%s\", \"rule\": \"%s\", \"seed\": %llu}\n", c->name,
             rule, (unsigned long long)seed);
    rc = write_json(dir, stem, json);
    if (rc == 0) (*written)++;
out:
    cli_outputs_discard(&outs);
    free(qd.x);
    free(qd.codes);
    free(qd.scales);
    return rc;
}

int conform_write_vectors(const char *dir, const conform_case_list *cases, const char *filter, uint64_t seed)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        cli_error("conform: --write-vectors %s: %s", dir, strerror(errno));
        return CLI_FAIL;
    }
    int written = 0;
    for (int i = 0; i < cases->n; i++) {
        const conform_case *c = &cases->v[i];
        if (!conform_match(filter, c->name)) continue;
        char stem[CONFORM_NAME_LEN];
        snprintf(stem, sizeof stem, "%s", c->name);
        for (char *s = stem; *s; s++)
            if (*s == '/' || *s == '.') *s = '_';
        if (strcmp(c->group, "attention") == 0) {
            if (write_attention(dir, stem, c, seed)) return CLI_FAIL;
            written++;
        } else if (strcmp(c->group, "quantize") == 0) {
            if (write_quantize(dir, stem, c, seed, &written)) return CLI_FAIL;
        }
    }
    printf("wrote %d vector sets to %s (seed %llu; read them back with 'mxa conform --vectors %s')\n", written, dir,
           (unsigned long long)seed, dir);
    return CLI_OK;
}
