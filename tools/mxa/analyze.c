/*
 * mxa analyze uos|rowsum|ablation: dispatch, and the input helpers the three
 * analyses share (see analyze.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "commands.h"

static void usage(FILE *to)
{
    fprintf(to, "usage: mxa analyze <analysis> [options]     mxa analyze <analysis> --help\n\n"
                "analyses:\n"
                "  uos       the UOS objective J(q) from the E2M1 grid (minimum, Fig. 2), and the\n"
                "            quantization MSE vs q of .npy tensors (where the minimum falls: Table 4)\n"
                "  rowsum    row sums of the attention weights, direct placement vs PNQ, and the\n"
                "            split of their error into zeroing, saturation, down and up rounding (Fig. 7)\n"
                "  ablation  NMSE, cosine and max error vs fp32 of every configuration of Tables 2-3\n"
                "            (MXAttention, w/o UOS, w/o PNQ and UOS, OCP, TFS, NVFP4, NVFP4 + smoothing)\n");
}

int cmd_analyze(int argc, char **argv)
{
    if (argc < 2) {
        cli_error("analyze: which analysis? (uos, rowsum or ablation; see 'mxa analyze --help')");
        return CLI_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(name, "uos") == 0) return analyze_uos(argc - 1, argv + 1);
    if (strcmp(name, "rowsum") == 0) return analyze_rowsum(argc - 1, argv + 1);
    if (strcmp(name, "ablation") == 0) return analyze_ablation(argc - 1, argv + 1);
    cli_error("analyze: unknown analysis '%s' (expected uos, rowsum or ablation)", name);
    return CLI_USAGE;
}

/* --------------------------------------------------------------- inputs */

int an_load(const char *path, an_tensor *t)
{
    npy_array a = {0};
    char shape[200];
    memset(t, 0, sizeof *t);
    t->path = path;
    if (cli_read_npy(path, &a)) return CLI_FAIL;
    npy_shape_string(a.rank, a.shape, shape, sizeof shape);
    int rc = CLI_FAIL;
    if (a.dtype != NPY_F32 && a.dtype != NPY_F16) {
        cli_error("%s: dtype %s is not a tensor to analyze (expected float32, float16 or float64)", path, npy_dtype_name(a.dtype));
        goto out;
    }
    if (a.rank < 2 || a.rank > 4 || a.count == 0) {
        cli_error("%s: shape %s: expected rank 2 to 4 ([N, D], [H, N, D] or [B, H, N, D]) with elements", path, shape);
        goto out;
    }
    for (int i = 0; i < 4; i++) t->shape[i] = 1;
    for (int i = 0; i < a.rank; i++) t->shape[4 - a.rank + i] = a.shape[i];
    t->rank = a.rank;
    if (!(t->data = cli_to_f32(&a))) {
        cli_error("%s: out of memory", path);
        goto out;
    }
    for (int64_t i = 0; i < a.count; i++)
        if (!isfinite(t->data[i])) {
            cli_error("%s: element %lld is not finite", path, (long long)i);
            an_tensor_free(t);
            goto out;
        }
    rc = CLI_OK;
out:
    npy_free(&a);
    return rc;
}

void an_tensor_free(an_tensor *t)
{
    free(t->data);
    t->data = NULL;
}

int64_t an_numel(const an_tensor *t)
{
    return t->shape[0] * t->shape[1] * t->shape[2] * t->shape[3];
}

int an_split(char *text, const char **items, int max, const char *option)
{
    int n = 0;
    for (char *p = text;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (!*p) {
            cli_error("%s: an empty file name in the comma-separated list", option);
            return -1;
        }
        if (n == max) {
            cli_error("%s: at most %d comma-separated files", option, max);
            return -1;
        }
        items[n++] = p;
        if (!comma) break;
        p = comma + 1;
    }
    return n;
}

int an_check_files(const cli_option *lists, int nlists, const char *const *paths, int npaths, const cli_option *outs,
                   int nout)
{
    enum { MAX_ITEMS = 64 };
    cli_file *in = malloc((size_t)(nlists * MAX_ITEMS + npaths + 1) * sizeof *in), out[CLI_MAX_FILES];
    char *copies[8] = {NULL};
    int n = 0, rc = CLI_USAGE;
    if (!in || nlists > 8 || nout > CLI_MAX_FILES) {
        cli_error("analyze: out of memory");
        rc = CLI_FAIL;
        goto done;
    }
    for (int i = 0; i < nlists; i++) {
        const char *items[MAX_ITEMS];
        if (!lists[i].value) continue;
        if (!(copies[i] = strdup(lists[i].value))) {
            cli_error("analyze: out of memory");
            rc = CLI_FAIL;
            goto done;
        }
        const int k = an_split(copies[i], items, MAX_ITEMS, lists[i].name);
        if (k < 0) goto done;
        for (int j = 0; j < k; j++) in[n++] = (cli_file){lists[i].name, items[j]};
    }
    for (int i = 0; i < npaths; i++) in[n++] = (cli_file){NULL, paths[i]};
    for (int i = 0; i < nout; i++) out[i] = (cli_file){outs[i].name, outs[i].value};
    rc = cli_check_files(in, n, out, nout);
done:
    for (int i = 0; i < 8; i++) free(copies[i]);
    free(in);
    return rc;
}

void an_stem(const char *path, char *buf, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(buf, size, "%s", base);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf) *dot = '\0';
}

/* ------------------------------------------------------------- numerics */

int an_hadamard_ok(int64_t d)
{
    return d == 32 || d == 64 || d == 128 || d == 256;
}

void an_hadamard(float *x, int d)
{
    for (int h = 1; h < d; h *= 2)
        for (int i = 0; i < d; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                const float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
    const float norm = (float)(1.0 / sqrt((double)d));
    for (int i = 0; i < d; i++) x[i] *= norm;
}

int an_fake_quantize(mxa_device *dev, const float *x, int64_t rows, int64_t cols, mxa_rule rule, float *out,
                     uint8_t *scales)
{
    const int64_t nblocks = (cols + MXA_BLOCK - 1) / MXA_BLOCK;
    uint8_t *codes = malloc((size_t)(rows * nblocks * 16)), *sc = malloc((size_t)(rows * nblocks));
    mxa_tensor t;
    mxa_status st;
    int rc = CLI_FAIL;
    if (!codes || !sc) {
        cli_error("analyze: out of memory");
        goto out;
    }
    if ((st = mxa_tensor_init(&t, MXA_F32, 1, 1, rows, cols, (void *)x)) ||
        (st = mxa_quantize(dev, &t, rule, codes, sc)) || (st = mxa_dequantize(codes, sc, rows, cols, out))) {
        cli_library_error("analyze: quantize", st);
        goto out;
    }
    if (scales) memcpy(scales, sc, (size_t)(rows * nblocks));
    rc = CLI_OK;
out:
    free(codes);
    free(sc);
    return rc;
}
