/*
 * A capability record from a profile file (tests/vulkan/profiles/README.md has the
 * format): a small, strict JSON reader for exactly that schema. No library, no
 * allocation, no recursion beyond the schema's three levels (object, array, object).
 * Anything else is refused with one line that names the key: malformed JSON, an
 * unknown or repeated key, a value of the wrong type, a number outside its range,
 * a string too long for its field, more than VK_MAX_SHAPES configurations,
 * inconsistent subgroup sizes. The input is any NUL-terminated text (it is fuzzed:
 * tests/fuzz/fuzz_vk_caps_json.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vk_common.h"

typedef struct jp {
    const char *s;   /* the whole text */
    size_t pos;
    char *err;
    size_t err_size;
    int failed;
    char path[64];   /* the key being read: "coopmat_khr[3].k" */
} jp;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int fail(jp *p, const char *fmt, ...)
{
    if (p->failed) return -1;
    p->failed = 1;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < p->pos && p->s[i]; i++) {
        if (p->s[i] == '\n') line++, col = 1;
        else col++;
    }
    char what[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (p->err && p->err_size) {
        snprintf(p->err, p->err_size, "profile line %zu, column %zu: %s%s%s", line, col, p->path,
                 p->path[0] ? ": " : "", what);
        /* one line: a key read from the text may hold escaped control characters */
        for (char *c = p->err; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    }
    return -1;
}

static void skip_ws(jp *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r') p->pos++;
}

static int expect(jp *p, char c)
{
    skip_ws(p);
    if (p->s[p->pos] == c) {
        p->pos++;
        return 0;
    }
    if (!p->s[p->pos]) return fail(p, "the text ends where '%c' was expected", c);
    return fail(p, "expected '%c'", c);
}

/* The next non-blank character, not consumed (0 at the end). */
static char peek(jp *p)
{
    skip_ws(p);
    return p->s[p->pos];
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        const char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* Length of the well-formed UTF-8 sequence at s (lead byte >= 0x80), 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
    int n;
    unsigned cp;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) n = 2, cp = s[0] & 0x1fu;
    else if (s[0] >= 0xe0 && s[0] <= 0xef) n = 3, cp = s[0] & 0x0fu;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4) n = 4, cp = s[0] & 0x07u;
    else return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

/* A string into out[size] (NUL-terminated). Escapes: \" \\ \/ \b \f \n \r \t and \uXXXX
 * outside U+D800..U+DFFF (no surrogate pairs); raw bytes must be printable or well-formed
 * UTF-8. A string longer than size - 1 bytes fails, or, with too_long, is cut and flagged. */
static int read_string_cut(jp *p, char *out, size_t size, int *too_long)
{
    skip_ws(p);
    if (p->s[p->pos] != '"') return fail(p, p->s[p->pos] ? "expected a string" : "the text ends where a string was expected");
    p->pos++;
    size_t n = 0;
    for (;;) {
        const unsigned char c = (unsigned char)p->s[p->pos];
        char buf[4];
        size_t len = 1;
        if (c == 0) return fail(p, "the text ends inside a string");
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20 || c == 0x7f) return fail(p, "a control character inside a string (write it as an escape)");
        if (c == '\\') {
            const char e = p->s[p->pos + 1];
            const char *simple = strchr("\"\\/bfnrt", e);
            if (e && simple) {
                static const char decoded[] = "\"\\/\b\f\n\r\t";
                buf[0] = decoded[simple - "\"\\/bfnrt"];
                p->pos += 2;
            } else if (e == 'u') {
                unsigned cp;
                if (hex4(p->s + p->pos + 2, &cp) != 0) return fail(p, "a \\u escape needs four hex digits");
                if (cp >= 0xd800 && cp <= 0xdfff) return fail(p, "a \\u escape of a surrogate (not supported)");
                if (cp == 0) return fail(p, "a \\u0000 escape (NUL) inside a string");
                if (cp < 0x80) buf[0] = (char)cp;
                else if (cp < 0x800) buf[0] = (char)(0xc0 | cp >> 6), buf[1] = (char)(0x80 | (cp & 0x3f)), len = 2;
                else
                    buf[0] = (char)(0xe0 | cp >> 12), buf[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
                    buf[2] = (char)(0x80 | (cp & 0x3f)), len = 3;
                p->pos += 6;
            } else {
                return fail(p, "an unknown escape inside a string");
            }
        } else if (c >= 0x80) {
            const int u = utf8_len((const unsigned char *)p->s + p->pos);
            if (!u) return fail(p, "a byte that is not well-formed UTF-8 inside a string");
            memcpy(buf, p->s + p->pos, (size_t)u);
            len = (size_t)u;
            p->pos += (size_t)u;
        } else {
            buf[0] = (char)c;
            p->pos++;
        }
        if (n + len >= size) {
            if (!too_long) return fail(p, "longer than %zu bytes", size - 1);
            *too_long = 1;
            continue;
        }
        memcpy(out + n, buf, len);
        n += len;
    }
    out[n] = 0;
    return 0;
}

static int read_string(jp *p, char *out, size_t size) { return read_string_cut(p, out, size, NULL); }

/* A string that must be one of a set of names: one too long for `size` is no name (""). */
static int read_name(jp *p, char *out, size_t size)
{
    int too_long = 0;
    if (read_string_cut(p, out, size, &too_long)) return -1;
    if (too_long) out[0] = 0;
    return 0;
}

/* A JSON number that must be an integer in [min, max]. */
static int read_uint(jp *p, uint64_t min, uint64_t max, uint64_t *out)
{
    const char c = peek(p);
    if (c == '-') {
        size_t q = p->pos + 1;
        while (p->s[q] >= '0' && p->s[q] <= '9') q++;
        if (q > p->pos + 1) return fail(p, "negative; expected an integer in [%llu, %llu]", (unsigned long long)min, (unsigned long long)max);
    }
    if (c < '0' || c > '9') return fail(p, c ? "expected an integer" : "the text ends where an integer was expected");
    if (c == '0' && p->s[p->pos + 1] >= '0' && p->s[p->pos + 1] <= '9') return fail(p, "a number with a leading zero");
    uint64_t v = 0;
    int big = 0;
    while (p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        const unsigned d = (unsigned)(p->s[p->pos] - '0');
        if (v > (UINT64_MAX - d) / 10) big = 1;
        else v = v * 10 + d;
        p->pos++;
    }
    const char after = p->s[p->pos];
    if (after == '.' || after == 'e' || after == 'E') return fail(p, "expected an integer, not a fraction or exponent");
    if (big || v < min || v > max)
        return fail(p, "out of range; expected an integer in [%llu, %llu]", (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return 0;
}

static int read_u32(jp *p, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v;
    if (read_uint(p, min, max, &v)) return -1;
    *out = (uint32_t)v;
    return 0;
}

/* An id: an integer, or a string "0x" followed by 1 to 8 hex digits. */
static int read_id(jp *p, uint32_t *out)
{
    if (peek(p) != '"') return read_u32(p, 0, UINT32_MAX, out);
    char t[16];
    const size_t at = p->pos;
    if (read_string(p, t, sizeof t)) return -1;
    size_t n = strlen(t);
    uint32_t v = 0;
    int ok = n >= 3 && n <= 10 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
    for (size_t i = 2; ok && i < n; i++) {
        const char c = t[i];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) ok = 0;
        else v = v << 4 | (uint32_t)d;
    }
    if (!ok) {
        p->pos = at;
        return fail(p, "expected an integer or a hex string \"0x...\" of at most 8 digits");
    }
    *out = v;
    return 0;
}

static int read_bool(jp *p, uint32_t *out)
{
    const char c = peek(p);
    if (strncmp(p->s + p->pos, "true", 4) == 0) {
        p->pos += 4;
        *out = 1;
    } else if (strncmp(p->s + p->pos, "false", 5) == 0) {
        p->pos += 5;
        *out = 0;
    } else {
        return fail(p, c ? "expected true or false" : "the text ends where true or false was expected");
    }
    const char after = p->s[p->pos];
    if ((after >= 'a' && after <= 'z') || (after >= '0' && after <= '9')) return fail(p, "expected true or false");
    return 0;
}

/* One name of `names` (NULL-terminated); its index in *out. */
static int read_choice(jp *p, const char *const *names, int *out)
{
    char t[32];
    const size_t at = p->pos;
    if (read_name(p, t, sizeof t)) return -1;
    for (int i = 0; names[i]; i++)
        if (strcmp(t, names[i]) == 0) {
            *out = i;
            return 0;
        }
    char list[160] = "";
    for (int i = 0; names[i]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "", names[i]);
    p->pos = at;
    skip_ws(p);
    return fail(p, "expected one of %s", list);
}

/* Steps through an object or array opened by `open`: call with *first = 1; returns 1 before
 * each item, 0 after `close`, -1 on an error (`item` and `container` name them in it). */
static int next_item(jp *p, int *first, char open, char close, const char *item, const char *container)
{
    if (*first) {
        if (expect(p, open)) return -1;
        *first = 0;
        if (peek(p) != close) return 1;
    } else if (peek(p) == ',') {
        p->pos++;
        return 1;
    } else if (peek(p) != close) {
        return peek(p) ? fail(p, "expected ',' or '%c' after %s", close, item) : fail(p, "the text ends inside %s", container);
    }
    p->pos++; /* the closing bracket */
    return 0;
}

/* The members of an object: 1 with the key in key[] for each, 0 after the closing brace. */
static int next_member(jp *p, int *first, char *key, size_t key_size)
{
    const int r = next_item(p, first, '{', '}', "a member", "an object");
    if (r != 1) return r;
    if (peek(p) != '"') return fail(p, p->s[p->pos] ? "expected a key (a string)" : "the text ends inside an object");
    if (read_name(p, key, key_size)) return -1;
    if (!key[0]) snprintf(key, key_size, "(a long key)");
    if (expect(p, ':')) return -1;
    return 1;
}

/* The elements of an array: 1 before each, 0 after the closing bracket. */
static int next_element(jp *p, int *first) { return next_item(p, first, '[', ']', "an element", "an array"); }

/* ------------------------------------------------------------------ the schema */

static const char *const type_names[] = {"f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
                                         "bf16", "e4m3", "e5m2", NULL};
static const uint32_t type_values[] = {VK_CT_F16, VK_CT_F32, VK_CT_F64, VK_CT_S8,  VK_CT_S16,  VK_CT_S32,  VK_CT_S64,
                                       VK_CT_U8,  VK_CT_U16, VK_CT_U32, VK_CT_U64, 1000141000u, 1000491002u, 1000491003u};

static const char *const scope_names[] = {"subgroup", "workgroup", NULL};
static const uint32_t scope_values[] = {VK_SCOPE_SUBGROUP_VALUE, 2 /* VK_SCOPE_WORKGROUP_KHR */};

static const char *const device_type_names[] = {"other", "integrated", "discrete", "virtual", "cpu", NULL};

static const char *const layout_names[] = {"unknown", "quad", "not-quad", NULL};

static const struct {
    const char *name;
    uint32_t bit;
} feature_names[] = {
    {"fp16", MXA_VK_F_FP16},
    {"int8", MXA_VK_F_INT8},
    {"storage16", MXA_VK_F_STORAGE16},
    {"storage8", MXA_VK_F_STORAGE8},
    {"int_dot", MXA_VK_F_INT_DOT},
    {"subgroup_size_control", MXA_VK_F_SUBGROUP_CTRL},
    {"subgroup_shuffle", MXA_VK_F_SUBGROUP_SHUFFLE},
    {"subgroup_arith", MXA_VK_F_SUBGROUP_ARITH},
    {"coopmat_nv", MXA_VK_F_COOPMAT_NV},
    {"coopmat_khr", MXA_VK_F_COOPMAT_KHR},
    {"pipeline_stats", MXA_VK_F_PIPELINE_STATS},
};
#define N_FEATURES ((int)(sizeof feature_names / sizeof feature_names[0]))

/* The top-level keys; `required` ones must be present. */
enum {
    K_PROFILE, K_SOURCE, K_NOTES, K_UNCONFIRMED, K_DEVICE_NAME, K_VENDOR_ID, K_DEVICE_ID, K_DRIVER_ID, K_DRIVER_NAME,
    K_DRIVER_VERSION, K_API_VERSION, K_DEVICE_TYPE, K_FEATURES, K_INT_DOT_ACCEL, K_SUBGROUP_SIZE, K_SUBGROUP_MIN,
    K_SUBGROUP_MAX, K_REQUIRED_SUBGROUP_COMPUTE, K_MAX_SHARED, K_MAX_INVOCATIONS, K_COOPMAT_KHR, K_FRAGMENT_LAYOUT,
    K_LAYOUT_NOTE, K_COUNT
};
static const struct {
    const char *name;
    int required;
} keys[K_COUNT] = {
    [K_PROFILE] = {"profile", 1},
    [K_SOURCE] = {"source", 1},
    [K_NOTES] = {"notes", 0},
    [K_UNCONFIRMED] = {"unconfirmed", 1},
    [K_DEVICE_NAME] = {"device_name", 1},
    [K_VENDOR_ID] = {"vendor_id", 1},
    [K_DEVICE_ID] = {"device_id", 0},
    [K_DRIVER_ID] = {"driver_id", 1},
    [K_DRIVER_NAME] = {"driver_name", 0},
    [K_DRIVER_VERSION] = {"driver_version", 0},
    [K_API_VERSION] = {"api_version", 1},
    [K_DEVICE_TYPE] = {"device_type", 1},
    [K_FEATURES] = {"features", 1},
    [K_INT_DOT_ACCEL] = {"int_dot_accelerated", 1},
    [K_SUBGROUP_SIZE] = {"subgroup_size", 1},
    [K_SUBGROUP_MIN] = {"subgroup_min", 0},
    [K_SUBGROUP_MAX] = {"subgroup_max", 0},
    [K_REQUIRED_SUBGROUP_COMPUTE] = {"required_subgroup_size_compute", 0},
    [K_MAX_SHARED] = {"max_shared", 1},
    [K_MAX_INVOCATIONS] = {"max_invocations", 1},
    [K_COOPMAT_KHR] = {"coopmat_khr", 1},
    [K_FRAGMENT_LAYOUT] = {"fragment_layout", 1},
    [K_LAYOUT_NOTE] = {"layout_note", 0},
};

static int is_pow2(uint32_t v) { return v && !(v & (v - 1)); }

/* "major.minor" or "major.minor.patch" as VK_MAKE_API_VERSION(0, ...). */
static int read_api_version(jp *p, uint32_t *out)
{
    char t[24];
    const size_t at = p->pos;
    if (read_string(p, t, sizeof t)) return -1;
    unsigned part[4] = {0, 0, 0, 0};
    int n = 0, ok = 1;
    for (const char *c = t; ok;) {
        int digits = 0;
        while (*c >= '0' && *c <= '9' && digits < 5) part[n] = part[n] * 10 + (unsigned)(*c++ - '0'), digits++;
        n++;
        if (!digits || (*c != '.' && *c != 0) || n > 3) ok = 0;
        else if (*c++ == 0) break;
    }
    if (!ok) n = 0;
    if (n < 2 || n > 3 || part[0] < 1 || part[0] > 127 || part[1] > 1023 || part[2] > 4095) {
        p->pos = at;
        skip_ws(p);
        return fail(p, "expected \"major.minor\" or \"major.minor.patch\" (1.0 to 127.1023.4095)");
    }
    *out = part[0] << 22 | part[1] << 12 | part[2];
    return 0;
}

static int read_features(jp *p, uint32_t *flags)
{
    int first = 1, r;
    while ((r = next_element(p, &first)) == 1) {
        char t[40];
        const size_t at = p->pos;
        if (read_name(p, t, sizeof t)) return -1;
        int f = -1;
        for (int i = 0; i < N_FEATURES; i++)
            if (strcmp(t, feature_names[i].name) == 0) f = i;
        if (f < 0) {
            p->pos = at;
            skip_ws(p);
            return fail(p, "unknown feature (known: fp16, int8, storage16, storage8, int_dot, subgroup_size_control, "
                           "subgroup_shuffle, subgroup_arith, coopmat_nv, coopmat_khr, pipeline_stats)");
        }
        if (*flags & feature_names[f].bit) {
            p->pos = at;
            skip_ws(p);
            return fail(p, "\"%s\" listed twice", t);
        }
        *flags |= feature_names[f].bit;
    }
    return r;
}

static int read_unconfirmed(jp *p)
{
    int first = 1, r, seen[K_COUNT] = {0};
    while ((r = next_element(p, &first)) == 1) {
        char t[40];
        const size_t at = p->pos;
        if (read_name(p, t, sizeof t)) return -1;
        int k = -1;
        for (int i = 0; i < K_COUNT; i++)
            if (strcmp(t, keys[i].name) == 0) k = i;
        /* a feature may be named alone ("features.storage8") */
        if (k < 0 && strncmp(t, "features.", 9) == 0)
            for (int i = 0; i < N_FEATURES; i++)
                if (strcmp(t + 9, feature_names[i].name) == 0) k = K_FEATURES;
        if (k < 0 || k == K_PROFILE || k == K_SOURCE || k == K_NOTES || k == K_UNCONFIRMED) {
            p->pos = at;
            skip_ws(p);
            return fail(p, "\"%s\" is not a value key of the profile (nor \"features.<name>\")", t);
        }
        if (k != K_FEATURES && seen[k]++) {
            p->pos = at;
            skip_ws(p);
            return fail(p, "\"%s\" listed twice", t);
        }
    }
    return r;
}

static int read_shape(jp *p, vk_coopmat_shape *sh)
{
    enum { S_M, S_N, S_K, S_A, S_B, S_C, S_R, S_SCOPE, S_SAT, S_COUNT };
    static const char *const names[S_COUNT] = {"m", "n", "k", "a", "b", "c", "r", "scope", "saturating"};
    int seen[S_COUNT] = {0}, first = 1, r;
    const size_t base = strlen(p->path);
    sh->scope = VK_SCOPE_SUBGROUP_VALUE;
    sh->saturating = 0;
    char key[16];
    while ((r = next_member(p, &first, key, sizeof key)) == 1) {
        int k = -1;
        for (int i = 0; i < S_COUNT; i++)
            if (strcmp(key, names[i]) == 0) k = i;
        snprintf(p->path + base, sizeof p->path - base, ".%s", key);
        if (k < 0) return fail(p, "unknown key (a configuration has m, n, k, a, b, c, r, scope, saturating)");
        if (seen[k]++) return fail(p, "repeated key");
        int idx;
        switch (k) {
        case S_M: if (read_u32(p, 1, 256, &sh->m)) return -1; break;
        case S_N: if (read_u32(p, 1, 256, &sh->n)) return -1; break;
        case S_K: if (read_u32(p, 1, 256, &sh->k)) return -1; break;
        case S_A: case S_B: case S_C: case S_R:
            if (read_choice(p, type_names, &idx)) return -1;
            *(k == S_A ? &sh->a : k == S_B ? &sh->b : k == S_C ? &sh->c : &sh->r) = type_values[idx];
            break;
        case S_SCOPE:
            if (read_choice(p, scope_names, &idx)) return -1;
            sh->scope = scope_values[idx];
            break;
        default: if (read_bool(p, &sh->saturating)) return -1; break;
        }
        p->path[base] = 0;
    }
    if (r < 0) return -1;
    for (int i = 0; i < S_SCOPE; i++)
        if (!seen[i]) return fail(p, "missing key \"%s\"", names[i]);
    return 0;
}

static int read_shapes(jp *p, vk_caps *caps)
{
    int first = 1, r;
    while ((r = next_element(p, &first)) == 1) {
        snprintf(p->path, sizeof p->path, "coopmat_khr[%u]", caps->n_khr);
        if (caps->n_khr >= VK_MAX_SHAPES) {
            snprintf(p->path, sizeof p->path, "coopmat_khr");
            return fail(p, "more than %d configurations", VK_MAX_SHAPES);
        }
        if (read_shape(p, &caps->khr[caps->n_khr])) return -1;
        caps->n_khr++;
    }
    snprintf(p->path, sizeof p->path, "coopmat_khr");
    return r;
}

static int read_caps(jp *p, vk_caps *caps)
{
    int seen[K_COUNT] = {0}, first = 1, r, idx;
    int layout = 0;
    char key[40], scratch[1024];
    while ((r = next_member(p, &first, key, sizeof key)) == 1) {
        int k = -1;
        for (int i = 0; i < K_COUNT; i++)
            if (strcmp(key, keys[i].name) == 0) k = i;
        snprintf(p->path, sizeof p->path, "%s", key);
        if (k < 0) return fail(p, "unknown key (tests/vulkan/profiles/README.md lists the keys)");
        if (seen[k]++) return fail(p, "repeated key");
        switch (k) {
        case K_PROFILE: if (read_string(p, scratch, 64)) return -1; break;
        case K_SOURCE:
            if (read_string(p, scratch, sizeof scratch)) return -1;
            if (!scratch[0]) return fail(p, "empty: a profile says where its values come from");
            break;
        case K_NOTES: if (read_string(p, scratch, sizeof scratch)) return -1; break;
        case K_UNCONFIRMED: if (read_unconfirmed(p)) return -1; break;
        case K_DEVICE_NAME: if (read_string(p, caps->device_name, sizeof caps->device_name)) return -1; break;
        case K_DRIVER_NAME: if (read_string(p, caps->driver_name, sizeof caps->driver_name)) return -1; break;
        case K_LAYOUT_NOTE: if (read_string(p, caps->layout_note, sizeof caps->layout_note)) return -1; break;
        case K_VENDOR_ID: if (read_id(p, &caps->vendor_id)) return -1; break;
        case K_DEVICE_ID: if (read_id(p, &caps->device_id)) return -1; break;
        case K_DRIVER_ID: if (read_u32(p, 0, 1000, &caps->driver_id)) return -1; break;
        case K_DRIVER_VERSION: if (read_id(p, &caps->driver_version)) return -1; break;
        case K_API_VERSION: if (read_api_version(p, &caps->api_version)) return -1; break;
        case K_DEVICE_TYPE:
            if (read_choice(p, device_type_names, &idx)) return -1;
            caps->device_type = (uint32_t)idx; /* VkPhysicalDeviceType order */
            break;
        case K_FEATURES: if (read_features(p, &caps->flags)) return -1; break;
        case K_INT_DOT_ACCEL: if (read_bool(p, &caps->int_dot_accel)) return -1; break;
        case K_SUBGROUP_SIZE: case K_SUBGROUP_MIN: case K_SUBGROUP_MAX: {
            uint32_t v;
            if (read_u32(p, 1, 256, &v)) return -1;
            if (!is_pow2(v)) return fail(p, "%u is not a power of two", v);
            *(k == K_SUBGROUP_SIZE ? &caps->subgroup_size : k == K_SUBGROUP_MIN ? &caps->subgroup_min : &caps->subgroup_max) = v;
            break;
        }
        case K_REQUIRED_SUBGROUP_COMPUTE: if (read_bool(p, &caps->required_subgroup_stages_compute)) return -1; break;
        case K_MAX_SHARED: if (read_u32(p, 1024, 16u << 20, &caps->max_shared)) return -1; break;
        case K_MAX_INVOCATIONS: if (read_u32(p, 1, 65536, &caps->max_invocations)) return -1; break;
        case K_COOPMAT_KHR: if (read_shapes(p, caps)) return -1; break;
        case K_FRAGMENT_LAYOUT:
            if (read_choice(p, layout_names, &layout)) return -1;
            break;
        }
        p->path[0] = 0;
    }
    if (r < 0) return -1;
    skip_ws(p);
    if (p->s[p->pos]) return fail(p, "text after the profile's closing brace");
    for (int i = 0; i < K_COUNT; i++)
        if (keys[i].required && !seen[i]) return fail(p, "missing key \"%s\"", keys[i].name);

    /* consistency between keys */
    if (!seen[K_SUBGROUP_MIN]) caps->subgroup_min = caps->subgroup_size;
    if (!seen[K_SUBGROUP_MAX]) caps->subgroup_max = caps->subgroup_size;
    if (caps->subgroup_min > caps->subgroup_size || caps->subgroup_size > caps->subgroup_max) {
        snprintf(p->path, sizeof p->path, "subgroup_size");
        return fail(p, "%u is not within subgroup_min..subgroup_max (%u..%u)", caps->subgroup_size, caps->subgroup_min,
                    caps->subgroup_max);
    }
    if (caps->n_khr && !(caps->flags & MXA_VK_F_COOPMAT_KHR)) {
        snprintf(p->path, sizeof p->path, "coopmat_khr");
        return fail(p, "configurations listed but \"features\" lacks \"coopmat_khr\"");
    }
    if (caps->int_dot_accel && !(caps->flags & MXA_VK_F_INT_DOT)) {
        snprintf(p->path, sizeof p->path, "int_dot_accelerated");
        return fail(p, "true but \"features\" lacks \"int_dot\"");
    }
    caps->quad_ok[0] = caps->quad_ok[1] = layout == 1;
    if (!caps->layout_note[0])
        snprintf(caps->layout_note, sizeof caps->layout_note, "%s",
                 layout == 1   ? "profile: quad fragment layout (measured)"
                 : layout == 2 ? "profile: fragments not in the quad layout (measured)"
                               : "profile: fragment layout unknown (never measured)");
    return 0;
}

int vk_caps_from_json(const char *text, vk_caps *caps, char *err, size_t err_size)
{
    if (err && err_size) err[0] = 0;
    if (!caps) {
        if (err && err_size) snprintf(err, err_size, "profile: no record to fill");
        return -1;
    }
    memset(caps, 0, sizeof *caps);
    if (!text) {
        if (err && err_size) snprintf(err, err_size, "profile: no text");
        return -1;
    }
    jp p = {text, 0, err, err_size, 0, ""};
    if (read_caps(&p, caps) != 0) {
        if (err && err_size && !err[0]) snprintf(err, err_size, "profile: malformed");
        memset(caps, 0, sizeof *caps);
        return -1;
    }
    return 0;
}
