/*
 * mxa conform: the cross-backend conformance suite (internal to tools/mxa).
 *
 * A case is one check with a stable name ("attention/mxattention/causal/d128/nk33"),
 * built into a list once (conform_cases.c and the per-concept files), then run
 * on every target: a device, optionally with environment switches that force a
 * kernel variant (MXA_KERNEL=..., MXA_DISABLE_COOPMAT=1, ...). Every case draws
 * its data from a seed derived from the run seed and its own name, so one case
 * filtered with -o reproduces exactly what the full run did.
 *
 * Files: conform.c (command, targets, modes), conform_cases.c (the case list,
 * filters), conform_util.c (rng, guarded buffers, env switches, tolerances),
 * conform_quant.c (MXFP4 format cases and the exact host model),
 * conform_attn.c (attention grid and the runner shared by every attention
 * check), conform_invariants.c (SPEC §2 invariants), conform_extras.c (bias, mask,
 * key lengths, causal alignment, 16-bit and lse buffers), conform_bad.c (bad
 * input), conform_vectors.c (external .npy vectors), conform_support.c
 * (support matrix), conform_report.c (text, JSON and CSV).
 */
#ifndef MXA_TOOLS_CONFORM_H
#define MXA_TOOLS_CONFORM_H

#include <stddef.h>
#include <stdint.h>

#include "mxa/mxa.h"

#define CONFORM_DEFAULT_SEED 20251129u
#define CONFORM_NAME_LEN 112
#define CONFORM_MSG_LEN 320
#define CONFORM_MAX_ENV 2

/* ------------------------------------------------------------------ cases */

enum {
    CF_QUICK = 1u << 0,    /* part of --quick (what ctest runs on slow software devices) */
    CF_VARIANT = 1u << 1,  /* also run on every forced kernel variant */
    CF_REQUIRED = 1u << 2, /* MXA_ERR_UNSUPPORTED is a failure here, not "unsupported" */
};

typedef enum conform_io {
    CONFORM_IO_HOST = 0,   /* host tensors (the runtime stages them) */
    CONFORM_IO_BUFFER = 1, /* q, k, v, out in device buffers at non-zero offsets */
} conform_io;

/* Data flavours of seeded attention inputs. */
typedef enum conform_flavour {
    CONFORM_DATA_ATTN = 0,  /* unit normal q/k with outlier channels, v = mean + noise */
    CONFORM_DATA_SHARP = 1, /* scores x3: near one-hot softmax, deep underflow */
    CONFORM_DATA_FLAT = 2,  /* scores x0.1: near uniform weights, many P~ near 1 */
    CONFORM_DATA_ONES = 3,  /* attention-like q/k, v = 1 (the PNQ invariant) */
    CONFORM_DATA_WIDE = 4,  /* attention-like, some q/k rows with one block 2^8 larger or smaller:
                             * block exponents far apart within a row (per-block int8 paths) */
} conform_flavour;

/* The optional inputs of docs/attention-inputs.md a case adds (conform_extras.c). */
typedef enum conform_bias_kind {
    CONFORM_BIAS_NONE = 0,
    CONFORM_BIAS_RELPOS = 1,  /* [1, H]: a learned relative-position bias in [-11, +3] (T5, MPNet) */
    CONFORM_BIAS_BATCH = 2,   /* [B, 1]: the same range, one per batch */
    CONFORM_BIAS_ALIBI = 3,   /* [1, H]: -slope_h * |i - j| with the ALiBi slopes 2^(-8 (h + 1) / H) */
    CONFORM_BIAS_NEG_INF = 4, /* [1, H] relative-position with -inf on every 5th key and on all of row 1 */
    CONFORM_BIAS_ZERO = 5,    /* [B, H] zeros */
} conform_bias_kind;

typedef enum conform_mask_kind {
    CONFORM_MASK_NONE = 0,
    CONFORM_MASK_PADDING = 1, /* [B, 1]: batch b sees its first Nk - 13 b keys (a padding mask) */
    CONFORM_MASK_RANDOM = 2,  /* [B, H]: a fifth of the keys hidden at random, row 2 of every head hidden entirely */
    CONFORM_MASK_ALL = 3,     /* [1, 1]: every key visible */
} conform_mask_kind;

/* One attention problem: what the grid, invariants and vectors share. */
typedef struct conform_attn_params {
    int recipe; /* index into conform_recipes */
    int causal; /* MXA_CAUSAL_* */
    int64_t b, h, hkv, nq, nk, d;
    int bc;     /* 0: the device's default (the reference then uses the Bc the device reports) */
    conform_io io;
    conform_flavour flavour;
    mxa_dtype in_dtype, out_dtype; /* out_dtype with CONFORM_IO_BUFFER: the output buffer's dtype */
    int lse;    /* also compare the per-row LSE */
    int lse_buffer;           /* the LSE in a device buffer (between guards) */
    int side_buffer;          /* the bias and mask in a device buffer (at non-zero offsets) */
    conform_bias_kind bias;
    conform_mask_kind mask;
    int lengths;              /* per-batch key lengths: batch b has {0, 37, Nk, Nk - 1, 1}[b % 5] (at most Nk) */
} conform_attn_params;

typedef struct conform_ctx conform_ctx;
typedef struct conform_case conform_case;
typedef struct conform_result conform_result;

typedef void (*conform_run_fn)(conform_ctx *ctx, const conform_case *c, conform_result *r);

struct conform_case {
    char name[CONFORM_NAME_LEN];
    const char *group; /* "quantize", "attention", "invariant", "bad-input", "io", "vectors" */
    const char *what;  /* one line for `mxa conform list` */
    unsigned flags;    /* CF_* */
    conform_run_fn run;
    conform_attn_params attn;
    int index;         /* case-specific parameter (vector, rule, input mistake) */
    char *path;        /* owned: the file stem of an external vector */
};

typedef struct conform_case_list {
    conform_case *v;
    int n, cap;
} conform_case_list;

/* Appends a case (copied); returns it, or NULL when out of memory. */
conform_case *conform_case_add(conform_case_list *list, const conform_case *c);
void conform_case_list_free(conform_case_list *list);

/* Case builders, one per concept file. Each returns 0, or -1 on failure (message printed). */
int conform_add_quant_cases(conform_case_list *list);
int conform_add_quant8_cases(conform_case_list *list); /* MXFP8 (conform_quant8.c) */
int conform_add_attn_cases(conform_case_list *list);
int conform_add_invariant_cases(conform_case_list *list);
int conform_add_bad_cases(conform_case_list *list);
int conform_add_extras_cases(conform_case_list *list);
int conform_add_vector_cases(conform_case_list *list, const char *dir);

/* The full list in run order (vectors from `dir` when non-NULL). */
int conform_build_cases(conform_case_list *list, const char *vectors_dir);

/* 1 if `name` matches one of the comma-separated patterns (glob when the
 * pattern has * ? or [, else a substring); NULL or "" matches everything. */
int conform_match(const char *patterns, const char *name);

/* ---------------------------------------------------------------- results */

typedef enum conform_status {
    CONFORM_PASS = 0,
    CONFORM_FAIL = 1,
    CONFORM_UNSUPPORTED = 2, /* the device said MXA_ERR_UNSUPPORTED where that is allowed */
    CONFORM_SKIP = 3,        /* not applicable to this target */
} conform_status;

struct conform_result {
    conform_status status;
    char message[CONFORM_MSG_LEN];
    double nmse;      /* device vs reference; NAN when not applicable */
    double threshold; /* the NMSE bound applied; NAN when not applicable */
    double max_abs;   /* max |device - reference|; NAN when not applicable */
    double nmse_fp32; /* device vs fp32 attention: the method's accuracy, informational */
    int bc;           /* the Bc the device reported (0: no attention call) */
    char variant[48]; /* the variant that ran (attention_info.variant) */
    double seconds;   /* wall time of the case */
};

const char *conform_status_name(conform_status s);

/* Marks r failed with a message (printf style). Always returns 0. */
int conform_fail(conform_result *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* --------------------------------------------------------------- targets */

/* An environment switch a target sets while it runs (name=value). */
typedef struct conform_env {
    const char *name;
    const char *value;
} conform_env;

/* What every case sees. */
struct conform_ctx {
    mxa_runtime *rt;
    mxa_device *dev;
    mxa_device_info info;
    uint64_t seed;
    int quick;
    int forced;             /* a forced-variant target */
    char label[160];        /* "cpu" or "cpu [MXA_CPU_ISA=portable]" */
};

/* The seed of one case: the run seed mixed with the case name. */
uint64_t conform_case_seed(uint64_t seed, const char *name);

/* ------------------------------------------------------------ utilities */

typedef struct conform_rng {
    uint64_t state;
} conform_rng;

uint64_t conform_next(conform_rng *r);
double conform_uniform(conform_rng *r); /* [0, 1) */
double conform_normal(conform_rng *r);

/* A host allocation with guard regions on both sides, filled with a NaN
 * pattern: a write outside [0, bytes) or an element never written shows. */
typedef struct conform_guarded {
    unsigned char *base;
    size_t bytes;
} conform_guarded;

#define CONFORM_GUARD 256        /* bytes on each side */
#define CONFORM_PATTERN 0x7FC3A5FFu /* a quiet NaN, also as bytes a telling pattern */

void *conform_guarded_alloc(conform_guarded *g, size_t bytes);
/* 0 if both guards are intact; else describes the damage in msg. */
int conform_guarded_check(const conform_guarded *g, const char *what, char *msg, size_t size);
/* 1 if the payload still holds the fill pattern (nothing written). */
int conform_guarded_untouched(const conform_guarded *g);
void conform_guarded_free(conform_guarded *g);
/* Fills n bytes with the pattern (for device buffers). */
void conform_fill_pattern(void *p, size_t n);
/* Offset of the first byte in [0, n) that differs from the pattern, or -1. */
int64_t conform_pattern_mismatch(const void *p, size_t n, size_t phase);

/* Sets the switches of a target (saving what was there) and restores them. */
typedef struct conform_env_saved {
    char *old[CONFORM_MAX_ENV];
    int had[CONFORM_MAX_ENV];
    int count;
} conform_env_saved;

int conform_env_apply(const conform_env *env, int count, conform_env_saved *saved);
void conform_env_restore(const conform_env *env, conform_env_saved *saved);

/* ------------------------------------------------------------ tolerances */

/* How closely a device must match the reference for a class of recipe: THE
 * table (conform_util.c) with the reason for each row. Beyond the whole-output
 * NMSE every element and LSE must be within bounds derived from fp32 rounding,
 * or its row explained by P~ code flips (conform_flip.c). */
typedef struct conform_tolerance {
    const char *klass;     /* "fp32", "qk-only", "quantized" */
    double nmse_max;       /* over the rows without code flips */
    const char *reason;
} conform_tolerance;

const conform_tolerance *conform_tolerance_for(const mxa_attention_desc *desc);
extern const conform_tolerance conform_tolerances[];
extern const int conform_tolerance_count;

/* ------------------------------------------------------------- recipes */

typedef struct conform_recipe {
    const char *name;  /* "mxattention", "no-rotation", ... */
    const char *what;
    mxa_recipe base;
    int hadamard;      /* -1: the base recipe's */
    int placement;     /* -1: the base recipe's */
    uint32_t quantize; /* 0xFFFFFFFF: the base recipe's */
    const char *rule;  /* NULL: the base recipe's */
    int core;          /* a named recipe: must be supported and runs the full grid */
} conform_recipe;

extern const conform_recipe conform_recipes[];
extern const int conform_recipe_count;

/* The descriptor of recipe `index` (causal 0, bc 0). */
mxa_attention_desc conform_recipe_desc(int index);
/* Index of a recipe by name, or -1. */
int conform_recipe_find(const char *name);

/* ------------------------------------------------------------ attention */

/* Host data of one attention problem (float32, contiguous), with its optional inputs. */
typedef struct conform_problem {
    int64_t b, h, hkv, nq, nk, d;
    float *q, *k, *v;
    float *bias;      /* dense [bias_b, bias_h, nq, nk], or NULL */
    int64_t bias_b, bias_h;
    uint8_t *mask;    /* dense [mask_b, mask_h, nq, nk], 0 = hidden, or NULL */
    int64_t mask_b, mask_h;
    int32_t *lengths; /* b key lengths, or NULL */
} conform_problem;

/* The problem of an attention-group case under run seed `seed`: its params
 * (drawn from the seed for attention/random/NN) and the seed of its data. */
void conform_attn_case_params(const conform_case *c, uint64_t seed, conform_attn_params *a, uint64_t *data_seed);

/* Allocates and fills a problem from params and a seed. 0 on success. */
int conform_problem_make(conform_problem *p, const conform_attn_params *a, uint64_t seed);
void conform_problem_free(conform_problem *p);

/* desc with the problem's bias, mask and key lengths (bias/mask are filled to point at). */
void conform_problem_attach(const conform_problem *p, mxa_attention_desc *desc, mxa_tensor *bias, mxa_tensor *mask);
/* The keys batch b has (its key length, else Nk). */
int64_t conform_key_count(const conform_problem *p, int64_t b);
/* Row i of (b, h) of the bias, or NULL. */
const float *conform_bias_row(const conform_problem *p, int64_t b, int64_t h, int64_t i);
/* 1 if key j < conform_key_count(b) is visible to row i of (b, h) by mask and causal alignment
 * (a -inf bias hides it too: see conform_row_empty). */
int conform_key_visible(const conform_problem *p, int causal, int64_t b, int64_t h, int64_t i, int64_t j);
/* 1 if flattened row (b, h, i) sees no key at all (O = 0, LSE = -inf). */
int conform_row_empty(const conform_problem *p, int causal, int64_t row);

/* What one device call produced. */
typedef struct conform_outputs {
    float *o;   /* b*h*nq*d */
    float *lse; /* b*h*nq, or NULL */
    mxa_attention_info info;
} conform_outputs;

/* Runs `desc` on the device with guarded outputs (host or device buffers per
 * `io`, input/output dtypes per params). Returns the library status; a
 * guard violation or a short read is reported through r (status MXA_OK but r
 * failed). out->o / out->lse are allocated here (free with conform_outputs_free). */
mxa_status conform_device_attention(conform_ctx *ctx, const mxa_attention_desc *desc, const conform_problem *p,
                                    const conform_attn_params *a, conform_outputs *out, conform_result *r);
void conform_outputs_free(conform_outputs *out);

/* The reference at `bc` (host), into freshly allocated o/lse. 0 on success. */
int conform_reference(const mxa_attention_desc *desc, int bc, const conform_problem *p, int want_lse,
                      conform_outputs *out, conform_result *r);

/* Compares a device output with the reference (or expected vectors, or another
 * run: ref_name says which, NULL = "reference") of the problem run at Bc `bc`:
 * NaN/Inf, empty rows, every element and LSE of each side within the bound
 * derived from fp32 rounding of conform's trace of SPEC §2 (or its row
 * explained by P~ code flips), and the NMSE of the rows without flips under the
 * recipe's tolerance. Fills r; returns 1 on pass. conform_flip.c. */
int conform_compare(const mxa_attention_desc *desc, int bc, mxa_dtype out_dtype, const conform_problem *p,
                    const conform_outputs *dev, const conform_outputs *ref, const char *ref_name, conform_result *r);

/* The whole check of one attention case: device, reference at the reported
 * Bc, compare (and the informational NMSE vs fp32). */
void conform_attention_check(conform_ctx *ctx, const mxa_attention_desc *desc, const conform_problem *p,
                             const conform_attn_params *a, unsigned flags, conform_result *r);

/* An attention case's run: its problem, desc and conform_attention_check (conform_attn.c). */
void conform_run_attention(conform_ctx *ctx, const conform_case *c, conform_result *r);

/* desc on p on the device (host I/O, lse) into out, for the invariants: 0, or -1 with r
 * failed (or unsupported for a forced variant). conform_invariants.c. */
int conform_device_run(conform_ctx *ctx, const mxa_attention_desc *desc, const conform_problem *p, conform_outputs *out,
                       conform_result *r);

/* The recipe switches as text ("rot=1 rule=uos place=pnq quant=qk,v,p"). */
void conform_desc_string(const mxa_attention_desc *desc, char *buf, size_t size);

/* --------------------------------------------------------------- output */

typedef enum conform_format { CONFORM_TEXT = 0, CONFORM_JSON = 1, CONFORM_CSV = 2 } conform_format;

/* One target's run: what the report prints. */
typedef struct conform_target_run {
    char id[32];
    char name[MXA_NAME_LEN];
    char backend[16];
    char variant[48];        /* the device's chosen variant under this target's switches */
    char env[96];            /* "MXA_KERNEL=scalar" or "" */
    int default_bc;
    int status;              /* 0 ran, 1 skipped (absent, duplicate variant, not supported) */
    int absent;              /* an absent backend or device (or one whose probe crashed): --require fails */
    char skip_reason[CONFORM_MSG_LEN];
    int passed, failed, unsupported, skipped;
    double seconds;
    const conform_case *const *cases; /* parallel to results */
    conform_result *results;
    int count;
} conform_target_run;

typedef struct conform_report {
    conform_format format;
    int verbose;
    uint64_t seed;
    int quick;
    const char *mode;
    conform_target_run *runs;
    int run_count, run_cap;
    int absent_lines;        /* skipped-backend lines printed */
} conform_report;

/* Text mode prints as it goes; JSON and CSV print everything at the end. */
void conform_report_header(const conform_report *rep, int case_count);
void conform_report_target_begin(const conform_report *rep, const conform_target_run *run);
void conform_report_case(const conform_report *rep, const conform_target_run *run, const conform_case *c,
                         const conform_result *r);
void conform_report_target_end(const conform_report *rep, const conform_target_run *run);
void conform_report_finish(const conform_report *rep);
/* A JSON string literal (escaped). */
void conform_json_string(const char *s);

/* ------------------------------------------------------- support matrix */

/* Seeded random blocks quantized on the device, bit-exact against the host model. */
void conform_quant_support(conform_ctx *ctx, mxa_rule rule, uint64_t seed, conform_result *r);

/* One cell of the support matrix. */
typedef struct conform_support_cell {
    char status[48]; /* "yes", "no", "WRONG", "error", or the variant a switch leads to */
    char message[CONFORM_MSG_LEN];
} conform_support_cell;

/* The matrix for devices ids on rt: every device's column, then printed. Exit status. */
int conform_support(mxa_runtime *rt, const char *const *ids, int nids, uint64_t seed, conform_format format);
/* Its pieces, for a run over several backends whose columns come from child processes:
 * the number of features (cells per column), one device's column, the print (columns device-major). */
int conform_support_feature_count(void);
void conform_support_column(mxa_runtime *rt, const char *id, uint64_t seed, mxa_device_info *info, conform_support_cell *col);
int conform_support_print(const mxa_device_info *infos, const conform_support_cell *cols, int nids, uint64_t seed,
                          conform_format format);

/* ------------------------------------------------------------ variants */

/* A switch that may select another kernel variant on a backend. */
typedef enum conform_switch_policy {
    CONFORM_SW_MATCH = 0,       /* MXA_KERNEL: the device must then report exactly this variant, else "not supported here" */
    CONFORM_SW_NEW_PATH = 1,    /* run when the device's variant or capabilities change, else "same as tested" */
    CONFORM_SW_ALWAYS = 2,      /* always run (MXA_NUM_THREADS: same kernels, another partition of the work) */
} conform_switch_policy;

typedef struct conform_switch {
    const char *backend;
    conform_env env;
    conform_switch_policy policy;
} conform_switch;

extern const conform_switch conform_switches[];
extern const int conform_switch_count;

/* --------------------------------------------------------------- vectors */

/* A quantize case's data and the host model's codes (for --write-vectors). */
typedef struct conform_quant_data {
    float *x;
    int64_t rows, cols;
    mxa_rule rule;
    uint8_t *codes, *scales;
} conform_quant_data;

/* 0 and filled (free the three arrays) for an exportable quantize case, 1 if
 * the case has no vector form, -1 when out of memory. */
int conform_quant_vector(const conform_case *c, uint64_t seed, conform_quant_data *out);

/* The exact host model of SPEC §1 (conform_quant.c): the shared exponent of a block
 * whose largest magnitude is max_abs, and the E2M1 code (0..7) of a magnitude v
 * already divided by 2^e (round to nearest even, saturating at 6). */
int conform_model_exponent(float max_abs, mxa_rule rule);
uint8_t conform_model_code(double v);
/* The same for MXFP8 (conform_quant8.c): floor(log2 M) - 8, the E4M3 code (0..126) of v
 * divided by 2^e, and the magnitude of a code under exponent e. */
int conform_model_fp8_exponent(float max_abs);
uint8_t conform_model_fp8_code(double v);
double conform_model_fp8_value(int code, int e);

/* The largest magnitude of a block of len values into *max_abs; 0 if one is NaN or Inf. */
int conform_block_max(const float *x, int64_t len, float *max_abs);
/* The quantize cases' special rows: one draw picks, one in `one_in`, a NaN or an Inf at a
 * random place, an all-zero or all -0 row, or (with keep_one) the row zero but one element. */
void conform_special_row(conform_rng *g, float *row, int64_t cols, uint64_t one_in, int keep_one);

/* mxa_quantize of x on the device against given codes/scales, byte for byte. */
void conform_quant_vector_check(conform_ctx *ctx, const float *x, int64_t rows, int64_t cols, mxa_rule rule,
                                const uint8_t *codes, const uint8_t *scales, conform_result *r);

/* Writes every selected attention / quantize case as .npy vectors (reference outputs). */
int conform_write_vectors(const char *dir, const conform_case_list *cases, const char *filter, uint64_t seed);

#endif
