/* Recipes and rules by name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mxfp4.h"
#include "status.h"

static const char *recipe_names[] = {"mxattention", "ocp-direct", "fp32", "mxattention-fp8pv"};
#define RECIPE_COUNT ((int)(sizeof recipe_names / sizeof recipe_names[0]))

mxa_status mxa_attention_desc_init(mxa_attention_desc *desc, mxa_recipe recipe)
{
    if (!desc) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_attention_desc_init: desc is NULL");
    memset(desc, 0, sizeof *desc);
    switch (recipe) {
    case MXA_RECIPE_MXATTENTION:
    case MXA_RECIPE_MXATTENTION_FP8PV:
        desc->hadamard = 1;
        desc->rule = mxa_rule_uos();
        desc->placement = MXA_PLACEMENT_PNQ;
        desc->quantize = MXA_QUANT_ALL;
        desc->pv_format = recipe == MXA_RECIPE_MXATTENTION_FP8PV ? MXA_PV_MXFP8 : MXA_PV_MXFP4;
        return MXA_OK;
    case MXA_RECIPE_OCP_DIRECT:
        desc->rule = mxa_rule_ocp();
        desc->placement = MXA_PLACEMENT_DIRECT;
        desc->quantize = MXA_QUANT_ALL;
        return MXA_OK;
    case MXA_RECIPE_FP32:
        desc->rule = mxa_rule_uos();
        return MXA_OK;
    }
    return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "unknown recipe %d", (int)recipe);
}

mxa_status mxa_recipe_parse(const char *text, mxa_recipe *out)
{
    if (!text || !out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_recipe_parse: NULL argument");
    for (int i = 0; i < RECIPE_COUNT; i++)
        if (strcmp(text, recipe_names[i]) == 0) {
            *out = (mxa_recipe)i;
            return MXA_OK;
        }
    return mxa_fail(MXA_ERR_INVALID_ARGUMENT,
                    "unknown recipe '%s' (expected mxattention, ocp-direct, fp32 or mxattention-fp8pv)", text);
}

const char *mxa_recipe_name(mxa_recipe recipe)
{
    if ((int)recipe < 0 || (int)recipe >= RECIPE_COUNT) return "unknown";
    return recipe_names[recipe];
}

/* The decimal numeral s (strtod's decimal form, the whole string:
 * [+]digits[.digits][(e|E)[+-]digits]) compared exactly with the one-digit
 * integer `digit`: -1 below, 0 equal, 1 above; 2 when s is not such a numeral. */
static int decimal_compare_digit(const char *s, char digit)
{
    while (*s == ' ' || (*s >= '\t' && *s <= '\r')) s++;
    if (*s == '+') s++;
    char lead = 0;   /* the first significant digit */
    long power = 0;  /* ... stands for lead * 10^power (before the exponent) */
    int seen = 0, frac = 0, more = 0; /* more: a non-zero digit after lead */
    for (;; s++) {
        if (*s == '.' && !frac) {
            frac = 1;
            continue;
        }
        if (*s < '0' || *s > '9') break;
        seen = 1;
        if (lead) {
            more |= *s != '0';
            power += !frac; /* another integer digit: lead is worth 10 times more */
        } else if (*s != '0') {
            lead = *s;
            if (frac) power--; /* lead right after the point (and its leading zeros) */
        } else if (frac) {
            power--; /* a zero between the point and lead */
        }
    }
    if (!seen) return 2;
    long e = 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        const int neg = *s == '-';
        if (*s == '+' || *s == '-') s++;
        if (*s < '0' || *s > '9') return 2;
        for (; *s >= '0' && *s <= '9'; s++)
            if (e < 100000) e = e * 10 + (*s - '0');
        if (neg) e = -e;
    }
    if (*s) return 2;
    if (!lead) return -1; /* zero */
    power += e;
    if (power != 0) return power > 0 ? 1 : -1; /* >= 10 or < 1 */
    if (lead != digit) return lead > digit ? 1 : -1;
    return more ? 1 : 0;
}

/* 1 if the numeral text (strtod syntax) lies in [6, 8] exactly, on its decimal
 * (or hexadecimal) value and not after rounding to float or double. */
static int q_in_range(const char *text)
{
    char *end;
    const double v = strtod(text, &end);
    if (*end || end == text || !(v >= 6.0 && v <= 8.0)) return 0;
    /* Rounding to nearest is monotonic: v > 6 implies text > 6, v < 8 implies
     * text < 8. Only v == 6 or v == 8 may come from a numeral on either side
     * (8.0000000000000000001 and 7.9999999999999999999 both round to 8): compare
     * those digit by digit. */
    if (v > 6.0 && v < 8.0) return 1;
    const char *p = text;
    while (*p == ' ' || (*p >= '\t' && *p <= '\r')) p++;
    if (*p == '+') p++;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        /* hexadecimal: exact in double when its significant hex digits fit 52 bits */
        int digits = 0, started = 0, zeros = 0;
        for (p += 2; *p && *p != 'p' && *p != 'P'; p++) {
            if (*p == '.') continue;
            if (*p == '0' && !started) continue;
            started = 1;
            if (*p == '0') zeros++;
            else digits += zeros + 1, zeros = 0;
        }
        return digits <= 13;
    }
    if (*p == '-') return 0; /* -6 and -8 are not 6 and 8 */
    const int c = decimal_compare_digit(p, v == 6.0 ? '6' : '8'); /* 2: inf, nan, not decimal */
    return v == 6.0 ? c == 0 || c == 1 : c == 0 || c == -1;
}

mxa_status mxa_rule_parse(const char *text, mxa_rule *out)
{
    if (!text || !out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_rule_parse: NULL argument");
    if (strcmp(text, "ocp") == 0) { *out = mxa_rule_ocp(); return MXA_OK; }
    if (strcmp(text, "tfs") == 0) { *out = mxa_rule_tfs(); return MXA_OK; }
    if (strcmp(text, "uos") == 0) { *out = mxa_rule_uos(); return MXA_OK; }
    if (strncmp(text, "q=", 2) == 0 && text[2] && q_in_range(text + 2)) {
        /* the range holds for the numeral itself: 8.0000001 and 5.9999999 are out
         * even though they round to 8.0f and 6.0f; a numeral inside may round to 6 or 8 */
        char *end;
        const float q = strtof(text + 2, &end);
        if (*end == '\0' && q >= 6.0f && q <= 8.0f) {
            *out = (mxa_rule){MXA_RULE_CEIL, q};
            return MXA_OK;
        }
    }
    return mxa_fail(MXA_ERR_INVALID_ARGUMENT,
                    "unknown rule '%s' (expected ocp, tfs, uos or q=<x> with x in [6, 8])", text);
}

mxa_status mxa_rule_name(mxa_rule rule, char *buf, size_t size)
{
    if (!buf || size == 0) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_rule_name: no buffer");
    if (!mxa_rule_valid(rule)) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "invalid rule");
    int n;
    if (rule.kind == MXA_RULE_OCP) n = snprintf(buf, size, "ocp");
    else if (rule.q == 6.0f) n = snprintf(buf, size, "tfs");
    else if (rule.q == 7.25f) n = snprintf(buf, size, "uos");
    else n = snprintf(buf, size, "q=%g", (double)rule.q);
    if (n < 0 || (size_t)n >= size) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_rule_name: buffer too small");
    return MXA_OK;
}
