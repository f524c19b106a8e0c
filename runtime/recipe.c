/* Recipes and rules by name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mxfp4.h"
#include "status.h"

static const char *recipe_names[] = {"mxattention", "ocp-direct", "fp32"};

mxa_status mxa_attention_desc_init(mxa_attention_desc *desc, mxa_recipe recipe)
{
    if (!desc) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_attention_desc_init: desc is NULL");
    memset(desc, 0, sizeof *desc);
    switch (recipe) {
    case MXA_RECIPE_MXATTENTION:
        desc->hadamard = 1;
        desc->rule = mxa_rule_uos();
        desc->placement = MXA_PLACEMENT_PNQ;
        desc->quantize = MXA_QUANT_ALL;
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
    for (int i = 0; i < 3; i++)
        if (strcmp(text, recipe_names[i]) == 0) {
            *out = (mxa_recipe)i;
            return MXA_OK;
        }
    return mxa_fail(MXA_ERR_INVALID_ARGUMENT,
                    "unknown recipe '%s' (expected mxattention, ocp-direct or fp32)", text);
}

const char *mxa_recipe_name(mxa_recipe recipe)
{
    if ((int)recipe < 0 || (int)recipe > 2) return "unknown";
    return recipe_names[recipe];
}

mxa_status mxa_rule_parse(const char *text, mxa_rule *out)
{
    if (!text || !out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_rule_parse: NULL argument");
    if (strcmp(text, "ocp") == 0) { *out = mxa_rule_ocp(); return MXA_OK; }
    if (strcmp(text, "tfs") == 0) { *out = mxa_rule_tfs(); return MXA_OK; }
    if (strcmp(text, "uos") == 0) { *out = mxa_rule_uos(); return MXA_OK; }
    if (strncmp(text, "q=", 2) == 0 && text[2]) {
        char *end;
        float q = strtof(text + 2, &end);
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
