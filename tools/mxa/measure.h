/*
 * Measuring an attention recipe (shared by attention --stats and demo):
 * the row sums of the attention weights, from the reference, which PNQ keeps
 * at exactly 1 and direct placement lets drift.
 */
#ifndef MXA_TOOLS_MEASURE_H
#define MXA_TOOLS_MEASURE_H

#include "cli.h"

/** Row-sum statistics of the reference run with `desc`'s switches, the given
 *  placement and key-tile size `bc` (the Bc the device used); that run's output
 *  goes to `o` (q's element count, float32) unless it is NULL. Prints the error. */
int cli_reference_row_sums(const mxa_attention_desc *desc, int bc, mxa_placement placement, const mxa_tensor *q,
                           const mxa_tensor *k, const mxa_tensor *v, cli_row_stats *out, float *o);

/** Writes "quantize qk,v,p" style text for a quantize bit set ("none" for 0). */
void cli_quantize_text(uint32_t bits, char *buf, size_t size);

/** One line describing every switch of `desc` (hadamard, rule, placement, quantize, scale, causal). */
void cli_desc_text(const mxa_attention_desc *desc, char *buf, size_t size);

#endif
