/*
 * mxa demo: the first thing to run. Seeded attention-like data through the
 * three recipes on the best device, and a short table: accuracy against
 * fp32, the row sums each placement gives, and time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "measure.h"

enum { DEMO_B = 1, DEMO_H = 4, DEMO_N = 512, DEMO_D = 128 };

/* Attention-like data. q and k share a direction, so each query prefers some
 * keys (logits with a standard deviation near 2.5, as in trained models); k
 * carries massive outlier channels, a per-channel bias that leaves softmax
 * unchanged but dominates its quantization blocks (what the Hadamard rotation
 * spreads out); v is unit noise around a per-channel mean, as value
 * activations of trained models are (a zero-mean v would average out and make
 * every relative error look large). */
static void fill(cli_rng *r, float *q, float *k, float *v, int64_t rows, int64_t d)
{
    float dir[DEMO_D], bias[DEMO_D], mean[DEMO_D];
    for (int64_t c = 0; c < d; c++) {
        dir[c] = (float)cli_normal(r);
        mean[c] = (float)cli_normal(r);
        bias[c] = c % 16 == 5 ? (float)(cli_normal(r) > 0 ? 12.0 : -12.0) : 0.0f;
    }
    for (int64_t i = 0; i < rows; i++) {
        const double sq = 1.0 + 0.3 * cli_normal(r), sk = 0.3 + 0.2 * cli_normal(r);
        for (int64_t c = 0; c < d; c++) {
            q[i * d + c] = (float)(cli_normal(r) + sq * dir[c]);
            k[i * d + c] = (float)(cli_normal(r) + sk * dir[c] + bias[c]);
        }
    }
    for (int64_t i = 0; i < rows * d; i++) v[i] = (float)(mean[i % d] + cli_normal(r));
}

typedef struct result {
    const char *recipe;
    mxa_attention_desc desc;
    mxa_attention_info info;
    double seconds;
    cli_diff diff;
    cli_row_stats sums;
} result;

int cmd_demo(int argc, char **argv)
{
    cli_option options[] = {
        {"--device", "ID", "device: auto (default), cpu, vulkan:0, opencl:0, hip:0", NULL},
    };
    cli_spec spec = {"demo", "[--device ID]",
                     "Generates seeded attention-like tensors (B=1, H=4, N=512, D=128), runs the recipes\n"
                     "fp32, ocp-direct and mxattention on the best device and compares them: accuracy\n"
                     "against fp32, the row sums of the attention weights (direct placement vs PNQ), time.",
                     options, CLI_COUNT(options), 0, 0, {NULL}, 0};
    int rc = cli_parse(&spec, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;

    const int64_t rows = (int64_t)DEMO_B * DEMO_H * DEMO_N, n = rows * DEMO_D;
    const mxa_recipe recipes[3] = {MXA_RECIPE_FP32, MXA_RECIPE_OCP_DIRECT, MXA_RECIPE_MXATTENTION};
    result res[3];
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_status st;
    float *q = malloc((size_t)n * sizeof(float)), *k = malloc((size_t)n * sizeof(float));
    float *v = malloc((size_t)n * sizeof(float)), *o[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) o[i] = malloc((size_t)n * sizeof(float));
    rc = CLI_FAIL;
    if (!q || !k || !v || !o[0] || !o[1] || !o[2]) {
        cli_error("demo: out of memory");
        goto out;
    }
    cli_rng rng = {20250101};
    fill(&rng, q, k, v, rows, DEMO_D);
    if (cli_open_device(options[0].value, &rt, &dev)) goto out;
    mxa_tensor tq, tk, tv;
    mxa_tensor_init(&tq, MXA_F32, DEMO_B, DEMO_H, DEMO_N, DEMO_D, q);
    mxa_tensor_init(&tk, MXA_F32, DEMO_B, DEMO_H, DEMO_N, DEMO_D, k);
    mxa_tensor_init(&tv, MXA_F32, DEMO_B, DEMO_H, DEMO_N, DEMO_D, v);
    for (int i = 0; i < 3; i++) {
        result *r = &res[i];
        mxa_tensor to;
        r->recipe = mxa_recipe_name(recipes[i]);
        mxa_attention_desc_init(&r->desc, recipes[i]);
        mxa_tensor_init(&to, MXA_F32, DEMO_B, DEMO_H, DEMO_N, DEMO_D, o[i]);
        const double t0 = cli_now();
        if ((st = mxa_attention(dev, &r->desc, &tq, &tk, &tv, &to, NULL, &r->info))) {
            rc = cli_library_error(r->recipe, st);
            goto out;
        }
        r->seconds = cli_now() - t0;
        r->diff = cli_compare(o[i], o[0], n);
        /* Row sums from the reference at the Bc the device used, each recipe at its own
         * placement. Without P quantization they are 1 by construction: skip the run. */
        if (!(r->desc.quantize & MXA_QUANT_P)) r->sums = (cli_row_stats){1.0, 1.0, 1.0, 0.0, rows, 0};
        else if (cli_reference_row_sums(&r->desc, r->info.bc, r->desc.placement, &tq, &tk, &tv, &r->sums, NULL)) goto out;
    }

    mxa_device_info di;
    mxa_device_info_of(dev, &di);
    printf("mxa demo: seeded attention-like data, B=%d H=%d N=%d D=%d\n", DEMO_B, DEMO_H, DEMO_N, DEMO_D);
    printf("device:   %s (%s), kernel variant %s, Bc %d\n\n", di.id, di.name, res[2].info.variant, res[2].info.bc);
    printf("%-12s %-10s %-9s %-10s %-8s %-32s %s\n", "recipe", "NMSE", "cosine", "max err", "P placed", "row sums: mean [min, max]",
           "time");
    for (int i = 0; i < 3; i++) {
        const result *r = &res[i];
        char sums[64];
        snprintf(sums, sizeof sums, "%.6f [%.6f, %.6f]", r->sums.mean, r->sums.min, r->sums.max);
        printf("%-12s %-10.3e %-9.6f %-10.3e %-8s %-32s %.3f s\n", r->recipe, r->diff.nmse, r->diff.cosine,
               r->diff.max_abs, !r->desc.quantize ? "-" : r->desc.placement == MXA_PLACEMENT_PNQ ? "pnq" : "direct",
               sums, r->seconds);
    }
    printf("\nNMSE, cosine and max error are against fp32 (lower NMSE is better). The row sums are\n"
           "those of the quantized attention weights: PNQ normalizes by them, so they are exactly 1;\n"
           "direct placement normalizes by the unquantized sum, so they drift.\n"
           "Next: 'mxa probe' lists this machine's devices; 'mxa attention --help' runs your own .npy tensors.\n");
    rc = CLI_OK;
out:
    for (int i = 0; i < 3; i++) free(o[i]);
    free(q);
    free(k);
    free(v);
    cli_close_device(rt, dev);
    return rc;
}
