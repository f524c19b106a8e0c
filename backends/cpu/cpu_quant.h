/*
 * Rotation and quantization of whole tiles, once each: K and V of every kv
 * head before the attention pass (shared by all query tiles), Q per query
 * tile, and the rows of mxa_quantize.
 */
#ifndef MXA_CPU_QUANT_H
#define MXA_CPU_QUANT_H

#include "../../runtime/backend.h"
#include "cpu_kernels.h"
#include "cpu_threads.h"

/* Memory a device keeps between calls (grow-only, 64-byte aligned): the
 * prepared K/V and the workers' scratch are not re-faulted in every call. */
typedef struct cpu_buf {
    void *p;
    size_t size;
} cpu_buf;

/* At least `size` bytes of b (its old contents are lost), or NULL. */
void *cpu_buf_get(cpu_buf *b, size_t size);
void cpu_buf_free(cpu_buf *b);

/* The prepared K and V of one kv head (keys padded with zeros to nk_pad). */
typedef struct cpu_head_kv {
    int64_t len;    /* keys that exist (the batch's key length, else nk); zeros after them */
    int8_t *k;      /* QK int: [nk_pad][d] doubled codes */
    int32_t *kcorr; /* QK int: [nk_pad][dblk] -12 * block code sum */
    float *ksc;     /* QK int: [nk_pad][dblk] 2^(e - 2) */
    float *kf;      /* QK fp32: [nk_pad][d] (rotated) K */
    int8_t *vt;     /* PV int: [d][nk_pad] doubled codes, blocks along keys */
    float *vsc;     /* PV int: [d][nk_pad / 32] 2^(e - 2) */
    float *vf;      /* PV fp32: [nk_pad][d] V, or the decoded V^ */
    int8_t *k8;       /* QK fused: [nk_pad][d] codes << (e_b - smallest e) */
    int32_t *kcorr8;  /* QK fused: [nk_pad] -96 * sum of the shifted codes */
    float *ksc8;      /* QK fused: [nk_pad] 2^(smallest e - 2) */
    uint8_t *kok;     /* QK fused: [nk_pad] 1 if the key's exponents allow it */
    uint8_t *tile_ok; /* QK fused: [nk_pad / bc] 1 if every key of the tile does */
    int8_t *vt8;      /* PV fused: [nk_pad / bc][d][bc] codes << (e_b - the column's smallest e in
                       * the tile); tile-major so 16 columns are not 16 rows 4 KiB apart (one L1 set) */
    float *vsc8;      /* PV fused: [d][nk_pad / bc] 2^(smallest e - 2) */
    uint8_t *vtile_ok; /* PV fused: [nk_pad / bc] 1 if every column of the tile allows it */
} cpu_head_kv;

/* Everything the attention pass reads that does not depend on the query. */
typedef struct cpu_prep {
    const cpu_kernels *kern;
    const mxa_attention_desc *desc;
    cpu_rule rule;
    int64_t b, h, hkv, nq, nk, d, nk_pad;
    int qk_int, pv_int;
    int pv_fp8;     /* desc.pv_format MXFP8: P and V quantized to MXFP8 and multiplied in fp32 (cpu_pv_fp8.h) */
    int k_rotated;  /* k holds rotated rows already (pre-quantized K/V): rotate q only */
    int fused, bc;  /* fused: the QK fused kernel may run (AVX-512, MXA_CPU_FUSED != 0) */
    int pv_fused;   /* the PV fused kernel may run (also Bc <= CPU_FUSED_MAX_BC) */
    const float *q, *k, *v;
    const int32_t *key_lengths; /* b entries, or NULL (every batch has nk keys) */
    cpu_head_kv *heads; /* b * hkv */
    cpu_buf *arena;     /* the prepared K/V live here */
} cpu_prep;

/* Allocates and fills prep->heads (in parallel on the pool). */
mxa_status cpu_prep_kv(cpu_prep *prep, cpu_pool *pool);
void cpu_prep_free(cpu_prep *prep);

/* The fused form of a Q tile: qp8 [d/4][16] words, qsc8 [16]. `ok` is 0
 * when some row cannot use it. */
typedef struct cpu_q_fused {
    uint32_t *qp8;
    float *qsc8;
    int ok;
} cpu_q_fused;

/* Loads, rotates and quantizes the 16 query rows [i0, i0 + 16) of head
 * (b, h): into qp/qsc (int path) or x itself ([d][16], fp32 path), and into
 * `fz` when prep->fused. */
void cpu_prep_q(const cpu_prep *prep, int64_t b, int64_t h, int64_t i0, float *x, uint32_t *qp, float *qsc,
                cpu_q_fused *fz);

/* mxa_quantize: rows x d of x into packed codes and scale bytes. */
mxa_status cpu_quantize_rows(const cpu_kernels *kern, cpu_pool *pool, const float *x, int64_t rows, int64_t d,
                             mxa_rule rule, uint8_t *codes, uint8_t *scales);

/* Thresholds of a valid rule. */
cpu_rule cpu_rule_of(mxa_rule_kind kind, float q);

#endif
