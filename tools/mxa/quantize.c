/*
 * mxa quantize IN.npy --rule R [--format mxfp4|mxfp8] [--dequant OUT.npy] [--codes C.npy --scales S.npy] [--device ID]
 *
 * MXFP4 (or MXFP8 E4M3 with the floor rule: one code byte per element) along the last axis of any float32/float16 array of rank >= 1: the
 * leading axes are flattened into rows, giving the tensor [1, 1, rows, last]
 * that mxa_quantize takes. Codes keep the leading shape with the last axis
 * nblocks*16 bytes (element 2k in the low nibble of byte k); scales keep it
 * with nblocks E8M0 bytes; the dequantized array has the input's shape.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

/* NMSE of the dequantized values against the input over finite blocks
 * (a non-finite block decodes to NaN by definition: counted, not measured). */
static double finite_nmse(const float *x, const float *deq, const uint8_t *scales, int64_t rows, int64_t cols,
                          int64_t *nonfinite_blocks)
{
    const int64_t nblocks = (cols + MXA_BLOCK - 1) / MXA_BLOCK;
    double err = 0.0, ref = 0.0;
    *nonfinite_blocks = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < nblocks; b++) {
            if (scales[r * nblocks + b] == 0xFF) {
                (*nonfinite_blocks)++;
                continue;
            }
            for (int64_t c = b * MXA_BLOCK; c < cols && c < (b + 1) * MXA_BLOCK; c++) {
                const double e = (double)deq[r * cols + c] - x[r * cols + c];
                err += e * e;
                ref += (double)x[r * cols + c] * x[r * cols + c];
            }
        }
    return ref > 0.0 ? err / ref : err;
}

int cmd_quantize(int argc, char **argv)
{
    cli_option options[] = {
        {"--rule", "R", "shared-exponent rule: ocp, tfs, uos (q=7.25) or q=<x>, x in [6, 8] (required)", NULL},
        {"--dequant", "OUT.npy", "write the decoded values (float32, the input's shape)", NULL},
        {"--codes", "C.npy", "write the packed 4-bit codes (uint8 [..., nblocks*16]); needs --scales", NULL},
        {"--scales", "S.npy", "write the E8M0 block scales (uint8 [..., nblocks]); needs --codes", NULL},
        {"--device", "ID", "device: auto (default), cpu, vulkan:0, opencl:0, hip:0", NULL},
        {"--axis", "A", "the block axis: only the last (-1) is supported; transpose first for others", NULL},
        {"--format", "F", "mxfp4 (default) or mxfp8 (E4M3 codes, one byte each, sign in bit 7; the OCP floor rule, so --rule is ocp or absent)", NULL},
    };
    cli_spec spec = {"quantize", "IN.npy --rule R [--format mxfp4|mxfp8] [--dequant OUT.npy] [--codes C.npy --scales S.npy] [--device ID] [--axis -1]",
                     "Quantizes a float32/float16/float64 array (float64 converted to float32 first) of any rank to MXFP4 (or MXFP8) in blocks of 32 along its last\n"
                     "axis (a tail block is zero-padded) and prints rows, blocks and the NMSE of the\n"
                     "dequantized values. Bit-exact on every device.",
                     options, CLI_COUNT(options), 1, 1, {NULL}, 0};
    int rc = cli_parse(&spec, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;
    const char *in_path = spec.positional[0];
    const char *rule_text = options[0].value, *deq_path = options[1].value, *codes_path = options[2].value,
               *scales_path = options[3].value, *device = options[4].value, *axis_text = options[5].value;
    long axis = -1;
    static const char *const formats[] = {"mxfp4", "mxfp8", NULL};
    int fp8 = 0;
    if (options[6].value && (rc = cli_choice("--format", options[6].value, formats, &fp8))) return rc;

    mxa_rule rule = mxa_rule_ocp();
    if (!rule_text && !fp8) {
        cli_error("quantize: --rule is required (ocp, tfs, uos or q=<x>)");
        return CLI_USAGE;
    }
    if (rule_text && (rc = cli_rule("--rule", rule_text, &rule))) return rc;
    if (fp8 && rule.kind != MXA_RULE_OCP) {
        cli_error("quantize: --format mxfp8 has the OCP floor rule only (--rule ocp or no --rule), not '%s'", rule_text);
        return CLI_USAGE;
    }
    if (axis_text && (rc = cli_int("--axis", axis_text, -NPY_MAX_RANK, NPY_MAX_RANK - 1, 1, &axis))) return rc;
    if (!codes_path != !scales_path) {
        cli_error("quantize: --codes and --scales go together (give both or neither)");
        return CLI_USAGE;
    }
    const cli_file ins[] = {{NULL, in_path}};
    const cli_file outs_given[] = {{"--dequant", deq_path}, {"--codes", codes_path}, {"--scales", scales_path}};
    if ((rc = cli_check_files(ins, 1, outs_given, 3))) return rc;

    npy_array in;
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    uint8_t *codes = NULL, *scales = NULL;
    float *x = NULL, *deq = NULL;
    cli_outputs outs = {0};
    mxa_status st;
    if ((rc = cli_read_npy(in_path, &in))) return rc;
    rc = CLI_FAIL;
    char shape_text[200];
    npy_shape_string(in.rank, in.shape, shape_text, sizeof shape_text);
    if (in.dtype != NPY_F32 && in.dtype != NPY_F16) {
        cli_error("%s: dtype %s cannot be quantized (expected float32, float16 or float64)", in_path, npy_dtype_name(in.dtype));
        goto out;
    }
    if (in.rank < 1 || in.count == 0) {
        cli_error("%s: shape %s has %s", in_path, shape_text, in.rank < 1 ? "no axis to quantize along (rank 0)" : "no elements");
        goto out;
    }
    if (axis != -1 && axis != in.rank - 1) {
        cli_error("--axis %ld: only the last axis (-1) of %s %s can be the block axis; transpose the array first",
                  axis, in_path, shape_text);
        rc = CLI_USAGE;
        goto out;
    }
    const int64_t cols = in.shape[in.rank - 1], rows = in.count / cols, nblocks = (cols + MXA_BLOCK - 1) / MXA_BLOCK;
    if ((rc = cli_open_device(device, &rt, &dev))) goto out;
    rc = CLI_FAIL;
    mxa_tensor t;
    if ((st = mxa_tensor_init(&t, in.dtype == NPY_F16 ? MXA_F16 : MXA_F32, 1, 1, rows, cols, in.data))) {
        cli_library_error(in_path, st);
        goto out;
    }
    const int64_t code_bytes = nblocks * (fp8 ? MXA_BLOCK : MXA_BLOCK / 2); /* per row */
    codes = malloc((size_t)(rows * code_bytes));
    scales = malloc((size_t)(rows * nblocks));
    deq = malloc((size_t)in.count * sizeof(float));
    x = cli_to_f32(&in);
    if (!codes || !scales || !deq || !x) {
        cli_error("quantize: out of memory for %s", shape_text);
        goto out;
    }
    if ((st = fp8 ? mxa_quantize_mxfp8(dev, &t, codes, scales) : mxa_quantize(dev, &t, rule, codes, scales))) {
        cli_library_error("quantize", st);
        goto out;
    }
    if ((st = fp8 ? mxa_dequantize_mxfp8(codes, scales, rows, cols, deq) : mxa_dequantize(codes, scales, rows, cols, deq))) {
        cli_library_error("dequantize", st);
        goto out;
    }

    int64_t shape[NPY_MAX_RANK];
    memcpy(shape, in.shape, sizeof shape);
    if (codes_path) {
        shape[in.rank - 1] = code_bytes;
        if (cli_outputs_add(&outs, codes_path, NPY_U8, in.rank, shape, codes)) goto out;
        shape[in.rank - 1] = nblocks;
        if (cli_outputs_add(&outs, scales_path, NPY_U8, in.rank, shape, scales)) goto out;
    }
    if (deq_path && cli_outputs_add(&outs, deq_path, NPY_F32, in.rank, in.shape, deq)) goto out;
    if (cli_outputs_commit(&outs)) goto out;

    int64_t nonfinite;
    const double nmse = finite_nmse(x, deq, scales, rows, cols, &nonfinite);
    mxa_device_info info;
    char rule_name[32];
    mxa_device_info_of(dev, &info);
    mxa_rule_name(rule, rule_name, sizeof rule_name);
    printf("%s: %s%s %s -> %lld rows x %lld blocks of 32 (%lld blocks), %srule %s, device %s\n", in_path,
           npy_dtype_name(in.file_dtype), in.file_dtype == NPY_F64 ? " (converted to float32)" : "", shape_text, (long long)rows, (long long)nblocks, (long long)(rows * nblocks),
           fp8 ? "MXFP8 E4M3, " : "", rule_name, info.id);
    printf("NMSE of the dequantized values: %.4e", nmse);
    if (nonfinite) printf(" (over finite blocks; %lld non-finite blocks have scale 0xFF)", (long long)nonfinite);
    printf("\n");
    rc = CLI_OK;
out:
    cli_outputs_discard(&outs);
    free(codes);
    free(scales);
    free(deq);
    free(x);
    npy_free(&in);
    cli_close_device(rt, dev);
    return rc;
}
