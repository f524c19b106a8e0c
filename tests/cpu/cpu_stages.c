/*
 * cpu_stages [amx|avx512] [keys] [bc]: where one CPU worker's time goes in the fused
 * mxattention pass (a tool, not a test). One thread runs the kernels of one work item
 * (16 query rows, D 128, key tiles of bc, default 128, at most 256) over `keys` keys
 * (default 4096), as cpu_attention.c calls them, on seeded MXFP4 codes, three ways:
 * QK^T alone, QK^T + softmax, and the whole item (+ P V); the differences are each
 * stage's share. Prints the time per 16 x 1 (rows x key) step and what the item
 * reaches in TFLOP/s (4 D flops per row and key). Exit 1 if the path is not supported
 * here.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/cpu_quant.h"

#define D 128
static int bc = 128; /* the key tile, argv[3] */
#define L CPU_LANES

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint32_t rng = 12345u;
static int code(void) /* a doubled E2M1 value with a sign */
{
    static const int codes[8] = {0, 1, 2, 3, 4, 6, 8, 12};
    rng = rng * 1664525u + 1013904223u;
    const int c = codes[(rng >> 20) & 7];
    return (rng >> 28) & 1 ? -c : c;
}

typedef struct item { /* 64-byte aligned parts, as the worker's scratch */
    _Alignas(64) uint32_t qp[D / 4 * L];
    float qsc[L];
    int8_t *k, *vt;
    int32_t *kcorr;
    float *ksc, *vsc;
    _Alignas(64) float s[CPU_FUSED_MAX_BC * L];
    _Alignas(64) float psc[CPU_FUSED_MAX_BC / 32 * L], psc8[CPU_FUSED_CHAINS * L], alpha[L], m[L], l[L], acc[D * L];
    _Alignas(64) uint32_t pp[CPU_FUSED_CHAINS * CPU_FUSED_MAX_BC / 32 * CPU_WORDS * L];
    int keys;
} item;

/* stages: 1 QK^T, 2 + softmax, 3 + P V */
static double run(const cpu_kernels *kern, item *it, int stages, int reps)
{
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    const cpu_rule rule = cpu_rule_of(desc.rule.kind, desc.rule.q);
    int32_t lim[L];
    for (int r = 0; r < L; r++) lim[r] = bc - 1;
    const double t0 = now();
    for (int rep = 0; rep < reps; rep++) {
        for (int r = 0; r < L; r++) {
            it->m[r] = -INFINITY;
            it->l[r] = 0.0f;
        }
        for (int j0 = 0; j0 < it->keys; j0 += bc) {
            const cpu_qk_fused_args qa = {it->qp, it->qsc, it->k + (size_t)j0 * D, it->kcorr + j0, it->ksc + j0,
                                          bc, D, 0.08838834764f, it->s};
            kern->qk_fused(&qa);
            if (stages < 2) continue;
            int fused = 0;
            const cpu_softmax_args sa = {it->s, bc, lim, it->m, it->l, it->alpha, 1, 1, 0, rule, it->pp, it->psc,
                                         1, it->psc8, &fused};
            kern->softmax(&sa);
            if (stages < 3 || !fused) continue;
            const cpu_pv_fused_args pa = {it->pp, it->psc8, fused, it->vt + (size_t)j0 * D, bc, it->vsc + j0 / bc,
                                          it->keys / bc, bc / 32 * CPU_WORDS, D, it->alpha, it->acc};
            kern->pv_fused(&pa);
        }
        if (kern->end_item) kern->end_item();
    }
    return (now() - t0) / reps;
}

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "amx";
    const cpu_isa isa = strcmp(want, "amx") == 0 ? CPU_ISA_AMX : CPU_ISA_AVX512;
    if (!cpu_isa_supported(isa)) {
        printf("cpu_stages: %s is not supported on this machine\n", want);
        return 1;
    }
    const cpu_kernels *kern = cpu_isa_kernels(isa);
    item *it = aligned_alloc(64, sizeof(item));
    const int keys = argc > 2 ? atoi(argv[2]) : 4096;
    bc = argc > 3 ? atoi(argv[3]) : 128;
    if (!it || bc < 32 || bc > CPU_FUSED_MAX_BC || bc % 32 || keys < bc || keys % bc) return 1;
    memset(it, 0, sizeof *it);
    it->keys = keys;
    it->k = aligned_alloc(64, (size_t)keys * D); /* 64-byte rows: a misaligned tile load costs twice */
    it->vt = aligned_alloc(64, (size_t)keys * D);
    it->kcorr = malloc(sizeof(int32_t) * (size_t)keys);
    it->ksc = malloc(sizeof(float) * (size_t)keys);
    it->vsc = malloc(sizeof(float) * (size_t)(D * (keys / bc)));
    if (!it->k || !it->vt || !it->kcorr || !it->ksc || !it->vsc) return 1;
    for (int w = 0; w < D / 4 * L; w++) { /* Q^ + the path's offset, four bytes per word */
        uint32_t x = 0;
        for (int b = 0; b < 4; b++) x |= (uint32_t)(uint8_t)(code() + kern->fused_q_offset) << (8 * b);
        it->qp[w] = x;
    }
    for (int r = 0; r < L; r++) it->qsc[r] = 0.03125f;
    for (int j = 0; j < keys; j++) {
        int32_t sum = 0;
        for (int c = 0; c < D; c++) sum += it->k[(size_t)j * D + c] = (int8_t)code();
        it->kcorr[j] = -kern->fused_q_offset * sum;
        it->ksc[j] = 0.015625f;
    }
    for (size_t i = 0; i < (size_t)keys * D; i++) it->vt[i] = (int8_t)code();
    for (int i = 0; i < D * (keys / bc); i++) it->vsc[i] = 0.25f;

    run(kern, it, 3, 2); /* warm-up */
    double t1 = 1e30, t2 = 1e30, t3 = 1e30; /* the best of 8 interleaved rounds: other load only adds time */
    for (int round = 0; round < 8; round++) {
        const double a = run(kern, it, 1, 4), b = run(kern, it, 2, 4), c = run(kern, it, 3, 4);
        t1 = a < t1 ? a : t1;
        t2 = b < t2 ? b : t2;
        t3 = c < t3 ? c : t3;
    }
    const double steps = (double)keys; /* 16 rows x 1 key each */
    const double flops = 4.0 * D * L * (double)keys;
    printf("%s (%s), one worker, 16 rows x %d keys, D %d, Bc %d, mxattention (fused P V)\n", want, kern->name, keys, D, bc);
    printf("  QK^T       %7.2f ns per 16x1 step  %5.1f%%\n", 1e9 * t1 / steps, 100.0 * t1 / t3);
    printf("  softmax    %7.2f ns per 16x1 step  %5.1f%%\n", 1e9 * (t2 - t1) / steps, 100.0 * (t2 - t1) / t3);
    printf("  P V        %7.2f ns per 16x1 step  %5.1f%%\n", 1e9 * (t3 - t2) / steps, 100.0 * (t3 - t2) / t3);
    printf("  item       %7.2f ns per 16x1 step, %.3f TFLOP/s on this thread\n", 1e9 * t3 / steps, flops / t3 / 1e12);
    return 0;
}
