/* Measuring an attention recipe: reference row sums, descriptions (see measure.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure.h"

int cli_reference_row_sums(const mxa_attention_desc *desc, int bc, mxa_placement placement, const mxa_tensor *q,
                           const mxa_tensor *k, const mxa_tensor *v, cli_row_stats *out, float *o)
{
    int rc = CLI_FAIL;
    const int64_t rows = q->shape[0] * q->shape[1] * q->shape[2], d = q->shape[3];
    float *own = o ? NULL : malloc((size_t)(rows * d) * sizeof(float)), *sums = malloc((size_t)rows * sizeof(float));
    if (!o) o = own;
    mxa_tensor to;
    mxa_status st;
    if (!o || !sums) {
        cli_error("row sums: out of memory");
        goto out;
    }
    if ((st = mxa_tensor_init(&to, MXA_F32, q->shape[0], q->shape[1], q->shape[2], d, o))) {
        cli_library_error("row sums", st);
        goto out;
    }
    mxa_attention_desc rd = *desc;
    rd.placement = placement;
    rd.bc = bc;
    if ((st = mxa_reference_attention(&rd, bc, q, k, v, &to, NULL, sums))) {
        cli_library_error("row sums (reference)", st);
        goto out;
    }
    *out = cli_row_sums(sums, rows);
    rc = CLI_OK;
out:
    free(own);
    free(sums);
    return rc;
}

void cli_quantize_text(uint32_t bits, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s%s%s%s", bits ? "" : "none", (bits & MXA_QUANT_QK) ? "qk" : "",
             (bits & MXA_QUANT_QK) && (bits & (MXA_QUANT_V | MXA_QUANT_P)) ? "," : "", (bits & MXA_QUANT_V) ? "v" : "",
             (bits & MXA_QUANT_V) && (bits & MXA_QUANT_P) ? "," : "", (bits & MXA_QUANT_P) ? "p" : "");
}

void cli_desc_text(const mxa_attention_desc *desc, char *buf, size_t size)
{
    char rule[32] = "?", quant[16], scale[32];
    mxa_rule_name(desc->rule, rule, sizeof rule);
    cli_quantize_text(desc->quantize, quant, sizeof quant);
    if (desc->scale > 0.0f) snprintf(scale, sizeof scale, "%g", (double)desc->scale);
    else snprintf(scale, sizeof scale, "1/sqrt(D)");
    snprintf(buf, size, "hadamard %s, rule %s, placement %s, quantize %s, scale %s, causal %s%s",
             desc->hadamard ? "on" : "off", rule, desc->placement == MXA_PLACEMENT_PNQ ? "pnq" : "direct", quant, scale,
             desc->causal == MXA_CAUSAL_TOP_LEFT ? "top-left" : desc->causal ? "on" : "off",
             desc->pv_format == MXA_PV_MXFP8 ? ", pv mxfp8 (e4m3, floor rule)" : "");
}
