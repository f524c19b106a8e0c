/*
 * Helpers shared by the mxa subcommands: option parsing, one-line errors,
 * number parsing, devices, .npy inputs and all-or-nothing outputs.
 *
 * Conventions every subcommand follows: exit 0 on success, 1 when the work
 * failed, 2 for a usage mistake; every error is exactly one line on stderr,
 * "mxa: <where>: <what is wrong>"; outputs are written completely or not at all.
 */
#ifndef MXA_TOOLS_CLI_H
#define MXA_TOOLS_CLI_H

#include <stdint.h>

#include "mxa/mxa.h"
#include "npy.h"

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/** Prints "mxa: <message>" as one line on stderr (newlines become blanks). */
void cli_error(const char *fmt, ...) CLI_PRINTF(1, 2);

/** Prints "mxa: <context>: <the library's last error message>" and returns CLI_FAIL. */
int cli_library_error(const char *context, mxa_status status);

/* ---------------------------------------------------------------- options */

/* One option of a subcommand. cli_parse fills `value`: the text given, "" for
 * a flag that is present, NULL when the option is absent. */
typedef struct cli_option {
    const char *name;    /* "--bc" */
    const char *metavar; /* "N"; NULL for a flag that takes no value; "[X]" for a flag that may take one
                          * (the next argument unless it starts with '-'; value "" when none is given) */
    const char *help;
    const char *value;
} cli_option;

typedef struct cli_spec {
    const char *command;   /* "quantize" */
    const char *usage;     /* what follows "mxa quantize" in the usage line */
    const char *summary;   /* printed by --help under the usage line */
    cli_option *options;
    int option_count;
    int positional_min, positional_max;
    const char *positional[4]; /* out */
    int positional_count;      /* out */
} cli_spec;

#define CLI_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/** Parses argv[1..argc) (argv[0] is the command name) into `spec`. Accepts
 *  "--name value", "--name=value" and "--" before positionals. Returns
 *  CLI_OK to go on, -1 after printing --help (exit 0), or CLI_USAGE after
 *  printing one error line. */
int cli_parse(cli_spec *spec, int argc, char **argv);

/** Prints the usage and option list of a subcommand to stdout. */
void cli_print_help(const cli_spec *spec);

/** An integer option in [min, max] that is a multiple of `multiple` (1 for any).
 *  Prints the error and returns CLI_USAGE when it is not. */
int cli_int(const char *option, const char *text, long min, long max, long multiple, long *out);

/** A finite float option > 0. Prints the error and returns CLI_USAGE if not. */
int cli_positive_float(const char *option, const char *text, float *out);

/** Index of `text` in the NULL-terminated `choices`, else prints an error
 *  listing them and returns CLI_USAGE. */
int cli_choice(const char *option, const char *text, const char *const *choices, int *out);

/** Parses a rule option ("ocp", "tfs", "uos", "q=<x>"); prints the error on failure. */
int cli_rule(const char *option, const char *text, mxa_rule *out);

/* ---------------------------------------------------------------- devices */

/** Creates a runtime and opens device `id` ("auto" when NULL). Prints the error. */
int cli_open_device(const char *id, mxa_runtime **rt, mxa_device **dev);

/** Closes what cli_open_device opened. Safe on NULLs. */
void cli_close_device(mxa_runtime *rt, mxa_device *dev);

/* ----------------------------------------------------------------- files */

/** Reads a .npy file; prints "mxa: <path>: <what>" on failure. */
int cli_read_npy(const char *path, npy_array *out);

/** Output files committed together: each is written to a temporary file,
 *  and only when all are written are they renamed into place (outfile.h:
 *  links are followed, character devices written in place). */
typedef struct cli_outputs {
    int count;
    npy_pending pending[4];
    const char *names[4]; /* the paths as given, for messages */
} cli_outputs;

/** Writes one output to its temporary file; prints the error on failure. */
int cli_outputs_add(cli_outputs *outs, const char *path, npy_dtype dtype, int rank, const int64_t *shape,
                    const void *data);

/** Renames every pending output into place. Prints the error on failure. */
int cli_outputs_commit(cli_outputs *outs);

/** Removes every pending temporary file. Safe to call after a commit. */
void cli_outputs_discard(cli_outputs *outs);

/* A file named on the command line: the option that names it ("--q"; NULL for
 * a positional argument) and its path (NULL: not given). */
typedef struct cli_file {
    const char *option;
    const char *path;
} cli_file;

#define CLI_MAX_FILES 16

/** The check every subcommand runs on its files before any work: each output
 *  must be writable where outfile_resolve says (else CLI_FAIL), no two outputs
 *  may be the same file and no output may be an input, through any hard or
 *  symbolic link (else CLI_USAGE). Prints one line on failure. */
int cli_check_files(const cli_file *inputs, int nin, const cli_file *outputs, int nout);

/* ------------------------------------------------------------ statistics */

typedef struct cli_diff {
    double nmse;    /* sum (a - ref)^2 / sum ref^2 */
    double cosine;
    double max_abs; /* max |a - ref| */
} cli_diff;

/** Compares `a` with the reference `ref` over n values (in double). */
cli_diff cli_compare(const float *a, const float *ref, int64_t n);

typedef struct cli_row_stats {
    double mean, min, max;
    double max_dev; /* max |s - 1| */
    int64_t rows;    /* rows counted */
    int64_t skipped; /* NaN rows: no visible key */
} cli_row_stats;

/** Statistics of per-row sums, skipping NaN rows. */
cli_row_stats cli_row_sums(const float *s, int64_t n);

/** Widens an IEEE half (as stored in a '<f2' .npy) to float, exactly. */
float cli_f16_to_f32(uint16_t h);

/** x rounded to MXA_F16 or MXA_BF16 bits (nearest, ties to even; NaN stays NaN). */
uint16_t cli_to_half(float x, mxa_dtype dtype);

/** The float value of MXA_F16 or MXA_BF16 bits, exactly. */
float cli_from_half(uint16_t h, mxa_dtype dtype);

/** The elements of a float32 or float16 array as float32 (a new array; NULL when out of memory). */
float *cli_to_f32(const npy_array *a);

/** Seconds on a monotonic clock. */
double cli_now(void);

/* A seeded splitmix64 generator: the same seed gives the same data everywhere. */
typedef struct cli_rng {
    uint64_t state;
} cli_rng;

/** A standard normal deviate. */
double cli_normal(cli_rng *r);

#endif
