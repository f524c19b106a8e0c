/* Helpers shared by the mxa subcommands (see cli.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

void cli_error(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One line, always: a multi-line message would read as several errors. */
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    fprintf(stderr, "mxa: %s\n", line);
}

/* Whether the library's message starts by naming `what` ("attention"): as
 * "attention: ", "mxa_attention: ", "attention (NVFP4): " or a call of it,
 * "mxa_runtime_create: " for "runtime". */
static int message_names(const char *msg, const char *what, size_t n)
{
    char where[96];
    size_t len = strcspn(msg, ":(");
    if (strncmp(msg, "mxa_", 4) == 0) msg += 4, len -= len >= 4 ? 4 : len;
    if (!n || len >= sizeof where) return 0;
    memcpy(where, msg, len);
    where[len] = '\0';
    for (char *p = where; *p; p++)
        if (*p == '_') *p = ' ';
    while (len && where[len - 1] == ' ') where[--len] = '\0';
    return strncmp(where, what, n) == 0 && (where[n] == '\0' || where[n] == ' ');
}

int cli_library_error(const char *context, mxa_status status)
{
    const char *msg = mxa_last_error_message();
    if (!msg || !*msg) msg = mxa_status_string(status);
    /* The library names where it failed: when that is what the context ends
     * with ("attention" and "mxa_attention: out of memory"), say it once. */
    const char *colon = strrchr(context, ':');
    const char *last = colon ? colon + 1 : context;
    while (*last == ' ') last++;
    if (message_names(msg, last, strlen(last))) {
        if (colon) cli_error("%.*s: %s", (int)(colon - context), context, msg);
        else cli_error("%s", msg);
    } else {
        cli_error("%s: %s", context, msg);
    }
    return CLI_FAIL;
}

/* ---------------------------------------------------------------- options */

void cli_print_help(const cli_spec *spec)
{
    printf("usage: mxa %s %s\n\n%s\n\noptions:\n", spec->command, spec->usage, spec->summary);
    for (int i = 0; i < spec->option_count; i++) {
        const cli_option *o = &spec->options[i];
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        printf("  %-24s %s\n", left, o->help);
    }
    printf("  %-24s %s\n", "-h, --help", "show this help");
}

static cli_option *find_option(cli_spec *spec, const char *name, size_t len)
{
    for (int i = 0; i < spec->option_count; i++)
        if (strlen(spec->options[i].name) == len && strncmp(spec->options[i].name, name, len) == 0)
            return &spec->options[i];
    return NULL;
}

int cli_parse(cli_spec *spec, int argc, char **argv)
{
    int only_positional = 0;
    const char *cmd = spec->command;
    spec->positional_count = 0;
    for (int i = 0; i < spec->option_count; i++) spec->options[i].value = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!only_positional && strcmp(arg, "--") == 0) {
            only_positional = 1;
            continue;
        }
        if (!only_positional && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)) {
            cli_print_help(spec);
            return -1;
        }
        if (only_positional || arg[0] != '-' || arg[1] == '\0') {
            if (spec->positional_count >= spec->positional_max) {
                cli_error("%s: unexpected argument '%s' (see 'mxa %s --help')", cmd, arg, cmd);
                return CLI_USAGE;
            }
            spec->positional[spec->positional_count++] = arg;
            continue;
        }
        const char *eq = strchr(arg, '=');
        const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        cli_option *opt = find_option(spec, arg, len);
        if (!opt) {
            cli_error("%s: unknown option '%.*s' (see 'mxa %s --help')", cmd, (int)len, arg, cmd);
            return CLI_USAGE;
        }
        if (opt->value) {
            cli_error("%s: option %s is given twice", cmd, opt->name);
            return CLI_USAGE;
        }
        if (!opt->metavar) {
            if (eq) {
                cli_error("%s: option %s takes no value", cmd, opt->name);
                return CLI_USAGE;
            }
            opt->value = "";
            continue;
        }
        if (opt->metavar[0] == '[') { /* an optional value: "--causal", "--causal=top-left" or "--causal top-left" */
            if (eq && !eq[1]) {
                cli_error("%s: option %s needs a non-empty value after '='", cmd, opt->name);
                return CLI_USAGE;
            }
            opt->value = eq ? eq + 1 : (i + 1 < argc && argv[i + 1][0] != '-') ? argv[++i] : "";
            continue;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!eq) {
            /* "--q --k K.npy" forgot Q's file; "--scale -1" is a value. */
            if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0) {
                cli_error("%s: option %s needs a value (%s %s)", cmd, opt->name, opt->name, opt->metavar);
                return CLI_USAGE;
            }
            value = argv[++i];
        }
        if (!*value) {
            cli_error("%s: option %s needs a non-empty value (%s %s)", cmd, opt->name, opt->name, opt->metavar);
            return CLI_USAGE;
        }
        opt->value = value;
    }
    if (spec->positional_count < spec->positional_min) {
        cli_error("%s: missing argument (usage: mxa %s %s)", cmd, cmd, spec->usage);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* strtol and strtof skip leading blanks but stop at trailing ones: refuse both alike. */
static int blank_at_ends(const char *text)
{
    const size_t n = strlen(text);
    return n && (isspace((unsigned char)text[0]) || isspace((unsigned char)text[n - 1]));
}

int cli_int(const char *option, const char *text, long min, long max, long multiple, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (blank_at_ends(text) || errno || end == text || *end || v < min || v > max || (multiple > 1 && v % multiple)) {
        const char *blanks = blank_at_ends(text) ? ", without blanks" : "";
        if (multiple > 1)
            cli_error("%s %s: expected a multiple of %ld in [%ld, %ld]%s", option, text, multiple, min, max, blanks);
        else
            cli_error("%s %s: expected an integer in [%ld, %ld]%s", option, text, min, max, blanks);
        return CLI_USAGE;
    }
    *out = v;
    return CLI_OK;
}

int cli_positive_float(const char *option, const char *text, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(text, &end);
    /* ERANGE with a nonzero finite result is a float32 subnormal: positive, so taken. */
    const int range = errno == ERANGE && (v == 0.0f || !isfinite(v));
    if (blank_at_ends(text) || range || end == text || *end || !isfinite(v) || !(v > 0.0f)) {
        cli_error("%s %s: expected a finite number > 0%s", option, text,
                  blank_at_ends(text) ? ", without blanks"
                  : !range            ? ""
                  : v == 0.0f         ? " (it rounds to 0 in float32)"
                                      : " (it overflows float32)");
        return CLI_USAGE;
    }
    *out = v;
    return CLI_OK;
}

int cli_choice(const char *option, const char *text, const char *const *choices, int *out)
{
    char list[256] = "";
    size_t at = 0;
    for (int i = 0; choices[i]; i++) {
        if (strcmp(text, choices[i]) == 0) {
            *out = i;
            return CLI_OK;
        }
        at += (size_t)snprintf(list + at, at < sizeof list ? sizeof list - at : 0, "%s%s", i ? ", " : "", choices[i]);
        if (at >= sizeof list) at = sizeof list - 1;
    }
    cli_error("%s %s: expected one of %s", option, text, list);
    return CLI_USAGE;
}

int cli_rule(const char *option, const char *text, mxa_rule *out)
{
    if (mxa_rule_parse(text, out) != MXA_OK) {
        cli_error("%s %s: expected ocp, tfs, uos or q=<x> with x in [6, 8]", option, text);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* ---------------------------------------------------------------- devices */

int cli_open_device(const char *id, mxa_runtime **rt, mxa_device **dev)
{
    mxa_status st;
    *rt = NULL;
    *dev = NULL;
    if ((st = mxa_runtime_create(NULL, rt))) return cli_library_error("runtime", st);
    if ((st = mxa_device_open(*rt, id ? id : "auto", dev))) {
        char context[96];
        snprintf(context, sizeof context, "device '%s'", id ? id : "auto");
        cli_library_error(context, st);
        mxa_runtime_destroy(*rt);
        *rt = NULL;
        return CLI_FAIL;
    }
    return CLI_OK;
}

void cli_close_device(mxa_runtime *rt, mxa_device *dev)
{
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
}

/* ----------------------------------------------------------------- files */

int cli_read_npy(const char *path, npy_array *out)
{
    char err[NPY_ERR_LEN];
    if (npy_read(path, out, err, sizeof err) != MXA_OK) {
        cli_error("%s: %s", path, err);
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cli_outputs_add(cli_outputs *outs, const char *path, npy_dtype dtype, int rank, const int64_t *shape,
                    const void *data)
{
    char err[NPY_ERR_LEN];
    if (outs->count >= CLI_COUNT(outs->pending)) {
        cli_error("%s: too many outputs", path);
        return CLI_FAIL;
    }
    if (npy_write_temp(path, dtype, rank, shape, data, &outs->pending[outs->count], err, sizeof err) != MXA_OK) {
        cli_error("%s: %s", path, err);
        return CLI_FAIL;
    }
    outs->names[outs->count++] = path;
    return CLI_OK;
}

int cli_outputs_commit(cli_outputs *outs)
{
    char err[NPY_ERR_LEN];
    int rc = CLI_OK;
    for (int i = 0; i < outs->count; i++) {
        if (rc == CLI_OK && npy_commit(&outs->pending[i], err, sizeof err) != MXA_OK) {
            cli_error("%s: %s", outs->names[i], err);
            rc = CLI_FAIL;
        }
        npy_discard(&outs->pending[i]);
    }
    outs->count = 0;
    return rc;
}

void cli_outputs_discard(cli_outputs *outs)
{
    for (int i = 0; i < outs->count; i++) npy_discard(&outs->pending[i]);
    outs->count = 0;
}

int cli_check_files(const cli_file *inputs, int nin, const cli_file *outputs, int nout)
{
    outfile_target t[CLI_MAX_FILES];
    char err[NPY_ERR_LEN];
    int rc = CLI_OK, n = 0;
    outfile_install_handlers(); /* before any device library installs its own */
    if (nout > CLI_MAX_FILES) {
        cli_error("%s: too many outputs", outputs[CLI_MAX_FILES].path);
        return CLI_USAGE;
    }
    for (; n < nout && rc == CLI_OK; n++) {
        memset(&t[n], 0, sizeof t[n]);
        if (outputs[n].path && outfile_resolve(outputs[n].path, &t[n], err, sizeof err)) {
            cli_error("%s: %s", outputs[n].path, err);
            rc = CLI_FAIL;
        }
    }
    /* Two outputs are the same file when they resolve to the same name (or
     * inode: hard links). Devices written in place may be shared. */
    for (int i = 0; i < n && rc == CLI_OK; i++)
        for (int j = i + 1; j < n && rc == CLI_OK && t[i].path; j++)
            if (t[j].path && !t[i].direct &&
                (strcmp(t[i].path, t[j].path) == 0 ||
                 (t[i].exists && t[j].exists && t[i].dev == t[j].dev && t[i].ino == t[j].ino))) {
                cli_error("%s and %s name the same file '%s'", outputs[i].option, outputs[j].option, outputs[j].path);
                rc = CLI_USAGE;
            }
    /* An output that is an input would destroy it; stat follows every link. */
    for (int i = 0; i < n && rc == CLI_OK; i++)
        for (int j = 0; j < nin && rc == CLI_OK && t[i].exists && !t[i].direct; j++) {
            struct stat st;
            if (inputs[j].path && stat(inputs[j].path, &st) == 0 && st.st_dev == t[i].dev && st.st_ino == t[i].ino) {
                cli_error("%s %s: is the same file as the input %s%s%s; refusing to overwrite an input",
                          outputs[i].option, outputs[i].path, inputs[j].option ? inputs[j].option : "",
                          inputs[j].option ? " " : "", inputs[j].path);
                rc = CLI_USAGE;
            }
        }
    for (int i = 0; i < n; i++) outfile_target_free(&t[i]);
    return rc;
}

/* ------------------------------------------------------------ statistics */

cli_diff cli_compare(const float *a, const float *ref, int64_t n)
{
    double err2 = 0.0, ref2 = 0.0, a2 = 0.0, dot = 0.0, max_abs = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double x = a[i], y = ref[i], e = x - y;
        err2 += e * e;
        ref2 += y * y;
        a2 += x * x;
        dot += x * y;
        if (fabs(e) > max_abs || isnan(e)) max_abs = fabs(e);
    }
    cli_diff d;
    d.nmse = ref2 > 0.0 ? err2 / ref2 : err2;
    d.cosine = (a2 > 0.0 && ref2 > 0.0) ? dot / sqrt(a2 * ref2) : (a2 == ref2 ? 1.0 : 0.0);
    d.max_abs = max_abs;
    return d;
}

cli_row_stats cli_row_sums(const float *s, int64_t n)
{
    cli_row_stats r = {0.0, INFINITY, -INFINITY, 0.0, 0, 0};
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(s[i])) {
            r.skipped++;
            continue;
        }
        sum += s[i];
        if (s[i] < r.min) r.min = s[i];
        if (s[i] > r.max) r.max = s[i];
        if (fabs(s[i] - 1.0) > r.max_dev) r.max_dev = fabs(s[i] - 1.0);
        r.rows++;
    }
    if (r.rows) r.mean = sum / (double)r.rows;
    else r.min = r.max = r.mean = NAN;
    return r;
}

float cli_f16_to_f32(uint16_t h)
{
    const int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float v;
    if (exp == 0x1f) v = man ? NAN : INFINITY;
    else if (exp == 0) v = ldexpf((float)man, -24); /* zero or subnormal */
    else v = ldexpf((float)(man | 0x400), exp - 25);
    return (h & 0x8000) ? -v : v;
}

uint16_t cli_to_half(float x, mxa_dtype dtype)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if (dtype == MXA_BF16) {
        if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* a quiet NaN */
        return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);                /* carries round up */
    }
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    const float a = fabsf(x);
    if (isnan(x)) return (uint16_t)(sign | 0x7e00);
    if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00);                               /* rounds to Inf */
    if (a < 0x1p-14f) return (uint16_t)(sign | (uint16_t)nearbyintf(a * 0x1p24f)); /* subnormal (or the smallest normal) */
    int e;
    frexpf(a, &e);                                  /* a in [2^(e-1), 2^e) */
    const int m = (int)nearbyintf(ldexpf(a, 11 - e)); /* 11 significant bits: 1024..2048, 2048 carrying into the exponent */
    return (uint16_t)(sign | (uint16_t)(((e + 14) << 10) + m - 1024));
}

float cli_from_half(uint16_t h, mxa_dtype dtype)
{
    if (dtype != MXA_BF16) return cli_f16_to_f32(h);
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float *cli_to_f32(const npy_array *a)
{
    float *out = malloc((size_t)(a->count ? a->count : 1) * sizeof(float));
    if (!out) return NULL;
    if (a->dtype == NPY_F32) {
        memcpy(out, a->data, (size_t)a->count * sizeof(float));
    } else {
        const uint16_t *h = a->data;
        for (int64_t i = 0; i < a->count; i++) out[i] = cli_f16_to_f32(h[i]);
    }
    return out;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_next(cli_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double cli_normal(cli_rng *r)
{
    /* Box-Muller on two uniforms in (0, 1]. */
    double u1 = (double)((rng_next(r) >> 11) + 1) * (1.0 / 9007199254740992.0);
    double u2 = (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
