/*
 * mxa analyze: the paper's mechanism analyses on real tensors.
 *   uos       the UOS objective J(q) from the E2M1 grid (Fig. 2), and the
 *             empirical quantization MSE vs q of .npy tensors (Table 4)
 *   rowsum    row sums of the attention weights under direct placement vs
 *             PNQ, and the split of their error by rounding outcome (Fig. 7)
 *   ablation  accuracy vs fp32 of every configuration of Tables 2 and 3
 * Everything goes through the public API (mxa_quantize, mxa_dequantize,
 * mxa_reference_attention), so the numbers are those of the library itself.
 */
#ifndef MXA_TOOLS_ANALYZE_H
#define MXA_TOOLS_ANALYZE_H

#include <stdint.h>

#include "cli.h"

int analyze_uos(int argc, char **argv);
int analyze_rowsum(int argc, char **argv);
int analyze_ablation(int argc, char **argv);

/* ------------------------------------------------------------- reports */

/* Tables of results: printed as text, and written as CSV or JSON. Cells are
 * given as one tab-separated line; a cell that reads fully as a number is a
 * number in JSON ("nan" and "inf" become null). */
typedef struct an_report an_report;
typedef struct an_table an_table;

an_report *an_report_new(const char *analysis);
void an_report_free(an_report *r);

/* A new table; `columns` is tab-separated. Tables with print = 0 go to the
 * CSV and JSON files only (long curves). NULL when out of memory. */
an_table *an_table_add(an_report *r, const char *name, const char *title, int print, const char *columns);

/* Appends a row formatted from a tab-separated format. Returns CLI_FAIL when
 * out of memory (printing the error). */
int an_row(an_table *t, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Prints the tables marked for printing, aligned, to stdout. */
void an_report_print(const an_report *r);

/* One CSV file (a "table" column first, each table with its own header line)
 * or one JSON object {"analysis": ..., "tables": {name: [{col: value}]}}.
 * Written completely or not at all; print the error and return CLI_FAIL. */
int an_report_write_csv(const an_report *r, const char *path);
int an_report_write_json(const an_report *r, const char *path);

/* ------------------------------------------------------------- inputs */

/* A .npy tensor (float32, float16 or float64 read as float32; rank 2 to 4) as dense float32 viewed as
 * [B, H, N, D] with leading axes of 1. */
typedef struct an_tensor {
    const char *path;
    int rank;
    int64_t shape[4];
    float *data;
} an_tensor;

int an_load(const char *path, an_tensor *t);
void an_tensor_free(an_tensor *t);
int64_t an_numel(const an_tensor *t);

/* Splits a comma-separated list in place (text is modified); at most `max`
 * items. Returns the count, or -1 (printing the error) when there are more
 * or an item is empty ("a,"). */
int an_split(char *text, const char **items, int max, const char *option);

/* cli_check_files for an analysis: the inputs are every file of the comma-
 * separated lists lists[0..nlists) and paths[0..npaths); the outputs are the
 * options outs[0..nout) (NULL values skipped). Prints the error. */
int an_check_files(const cli_option *lists, int nlists, const char *const *paths, int npaths, const cli_option *outs,
                   int nout);

/* The orthonormal Walsh-Hadamard rotation of SPEC §2 step 1, in the same fp32
 * operation order as the library (radix-2 stages h = 1, 2, ..., d/2, then the
 * fp32 constant 1/sqrt(d)). d must be 32, 64, 128 or 256. */
void an_hadamard(float *x, int d);
int an_hadamard_ok(int64_t d);

/* Quantizes rows x cols float32 to MXFP4 along the rows on `dev` and decodes
 * into `out`; `scales` (rows x ceil(cols/32) E8M0 bytes) may be NULL. */
int an_fake_quantize(mxa_device *dev, const float *x, int64_t rows, int64_t cols, mxa_rule rule, float *out,
                     uint8_t *scales);

/* The basename of a path, without directories and extension, into buf. */
void an_stem(const char *path, char *buf, size_t size);

#endif
