/*
 * Kernel argument blocks shared by the host (C11, backends/hip) and the
 * kernels (HIP C++). Each kernel takes one of these structs by value, so the
 * host passes a single kernel parameter whose layout both sides agree on:
 * only fixed-size scalars, device addresses as 64-bit integers, no padding
 * surprises (every struct is a multiple of 8 bytes, 8-byte fields first).
 */
#ifndef MXA_HIP_ARGS_H
#define MXA_HIP_ARGS_H

/* Threads per workgroup of each kernel (the host launches with these). */
#define MXA_HIP_PREP_THREADS 64
#define MXA_HIP_QUANT_THREADS 64
#define MXA_HIP_SCALAR_THREADS 64
#define MXA_HIP_MFMA_THREADS 64 /* one CDNA wavefront */
#define MXA_HIP_MFMA_ROWS 32    /* query rows per MFMA workgroup */

/* Variant ids (-DMXA_VARIANT=...). */
#define MXA_HIP_VARIANT_SCALAR 0
#define MXA_HIP_VARIANT_MFMA_I8 1
#define MXA_HIP_VARIANT_MFMA_FP4 2

/* Quantization switches (flags field), mirroring MXA_QUANT_* and placement. */
#define MXA_HIP_Q_QK 1
#define MXA_HIP_Q_V 2
#define MXA_HIP_Q_P 4
#define MXA_HIP_PNQ 8
#define MXA_HIP_CAUSAL 16          /* bottom-right aligned (MXA_CAUSAL_BOTTOM_RIGHT) */
#define MXA_HIP_CAUSAL_TOP_LEFT 32 /* key j visible to row i iff j <= i */

/* Output element types (-DMXA_OUT=...). */
#define MXA_HIP_OUT_F32 0
#define MXA_HIP_OUT_F16 1
#define MXA_HIP_OUT_BF16 2

/* mxa_quantize_rows: rows x cols float32 -> packed codes + E8M0 scales. */
typedef struct mxa_hip_quant_args {
    unsigned long long src;    /* float[rows * cols] */
    unsigned long long codes;  /* u8[rows * nblocks * 16] */
    unsigned long long scales; /* u8[rows * nblocks] */
    long long rows;
    int cols, nblocks;
    int rule_ceil; /* 0: OCP, 1: ceiling rule with q */
    float q;
} mxa_hip_quant_args;

/* mxa_prep_qk (rows of Q or K along D) and mxa_prep_v (V^T along tokens). */
typedef struct mxa_hip_prep_args {
    unsigned long long src;    /* float: [rows, d] (qk) or [heads, nk, d] (v) */
    unsigned long long codes;  /* u8: [rows, d/32, 16] or [heads, d, kblocks, 16] */
    unsigned long long scales; /* u8: [rows, d/32] or [heads, d, kblocks] */
    unsigned long long f32;    /* float, unquantized copy: [rows, d] or [heads, d, kblocks*32] */
    unsigned long long key_lengths; /* v: int[batches] (heads of batch b = b*hkv ..), or 0: all nk */
    long long rows;            /* qk: rows; v: heads */
    int d, nk, kblocks;
    int hadamard, quantize; /* quantize: write codes/scales, else f32 */
    int rule_ceil;
    float q, hnorm; /* hnorm: the host's fp32 1/sqrt(d), so both sides round alike */
    int hkv;        /* v: heads per batch */
    int unused;
} mxa_hip_prep_args;

/* mxa_attention: one launch does every (batch, head). The bias, mask and key
 * lengths are read only by the -DMXA_EXTRAS=1 build of the program. */
typedef struct mxa_hip_attn_args {
    unsigned long long q_codes, q_scales, q_f32; /* [b*h*nq] rows of d */
    unsigned long long k_codes, k_scales, k_f32; /* [b*hkv*nk] rows of d */
    unsigned long long v_codes, v_scales, v_f32; /* V^T: [b*hkv*d] rows of kblocks*32 */
    unsigned long long o;   /* [b*h*nq, d] of the program's MXA_OUT type */
    unsigned long long lse; /* float [b*h*nq] */
    unsigned long long bias;        /* float, rows of nk, or 0 */
    unsigned long long mask;        /* u8, rows of nk (0 = hidden), or 0 */
    unsigned long long key_lengths; /* int[b], or 0: every batch has nk keys */
    long long bias_bstride, bias_hstride; /* elements between batches / heads; 0 = broadcast */
    long long mask_bstride, mask_hstride;
    int b, h, hkv, nq, nk, kblocks;
    int flags; /* MXA_HIP_* */
    int rule_ceil;
    float q, scale;
} mxa_hip_attn_args;

#endif
