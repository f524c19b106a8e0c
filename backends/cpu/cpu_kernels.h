/*
 * The CPU kernels behind one table per instruction set (portable C, AVX2,
 * AVX-512 VNNI). Every tile is "lanes = rows": 16 independent rows side by
 * side, so softmax, block maxima and shared exponents are vertical vector
 * operations and no path needs a horizontal reduction.
 *
 * MXFP4 values travel as doubled E2M1 integers (0 1 2 3 4 6 8 12, signed)
 * packed four to a 32-bit word along the block axis: word [blk][t][lane]
 * holds elements 4t..4t+3 of block blk of that lane. A block product is an
 * exact int8 dot product (|sum| <= 4608) scaled by a power of two in fp32.
 */
#ifndef MXA_CPU_KERNELS_H
#define MXA_CPU_KERNELS_H

#include <stdint.h>

#include "mxa/mxa.h"

#define CPU_LANES 16
#define CPU_WORDS 8       /* 32-bit words per 32-element block */
#define CPU_Q_OFFSET 12   /* Q codes + 12 are unsigned: u8 x s8 dot products */
#define CPU_FUSED_SHIFT 3  /* codes << 3 still fit a byte: |12 << 3| = 96 */
#define CPU_FUSED_SHIFT_P 4 /* P^ codes are unsigned (u8 operand): 12 << 4 = 192 */
/* A row whose P^ blocks span more than CPU_FUSED_SHIFT_P binades splits them over
 * chains of CPU_FUSED_SHIFT_P + 1 binades each, one integer product per chain */
#define CPU_FUSED_CHAINS 3
#define CPU_FUSED_OFFSET 96
#define CPU_FUSED_MAX_BC 256 /* 256 keys * 192 * 96 < 2^24 */
/* The E2M1 boundaries above code 0 as boundaries of j = 7 (log2 w + 1), w = 2 P~ 2^-e:
 * the one-pass PNQ softmaxes read a score's P^ code off them (cpu_dot_avx512.c says why) */
#define CPU_P_BOUND_1 11.094737505048093f /* codes 1 | 2 */
#define CPU_P_BOUND_2 16.253496664211536f /* 2 | 3 */
#define CPU_P_BOUND_3 19.651484454403228f /* 3 | 4 */
#define CPU_P_BOUND_4 23.253496664211536f /* 4 | 6 */
#define CPU_P_BOUND_5 26.651484454403228f /* 6 | 8 */
#define CPU_P_BOUND_6 30.253496664211536f /* 8 | 12 */

/* A shared-exponent rule as integer thresholds on the fraction of the block
 * maximum (SPEC §1): e = E - 2 + [f > up] - [f <= down]. */
typedef struct cpu_rule {
    int32_t up;   /* 1 << 23 (never) for OCP */
    int32_t down; /* 0 when q = 8, else -1 (never) */
} cpu_rule;

/* Outputs of a lane-wise quantization; any pointer may be NULL. */
typedef struct cpu_quant_out {
    uint32_t *packed; /* [nblk][8][16] doubled codes (+ offset), 4 per word */
    float *scale;     /* [nblk][16] 2^e, NaN for a non-finite block */
    float *decoded;   /* [nblk*32][16] dequantized values */
    uint8_t *nibble;  /* [nblk*32][16] 4-bit codes (sign << 3 | E2M1 code) */
    uint8_t *sbyte;   /* [nblk][16] E8M0 scale bytes */
    int32_t *sum;     /* [nblk][16] sum of the doubled codes of the block */
} cpu_quant_out;

/* One online-softmax step over a key tile, for 16 query rows. */
typedef struct cpu_softmax_args {
    float *s;           /* [bc][16] scaled scores in; P (decoded P^ or P~) out when want_float */
    int len;            /* keys of the tile (<= bc); blocks = ceil(len / 32) */
    const int32_t *lim; /* [16] last visible key of each row, relative to the tile */
    float *m, *l;       /* [16] running maximum and row sum */
    float *alpha;       /* [16] out: the rescale of the accumulator */
    int quant_p, pnq, want_float;
    cpu_rule rule;
    uint32_t *pp; /* [blocks][8][16] P^ codes when quant_p */
    float *psc;   /* [blocks][16] 2^e of each P^ block when quant_p */
    int fuse;     /* try the fused form: pp as chains of codes shifted onto a unit per row (see pv_fused) */
    float *psc8;  /* [chains][16] each chain's unit 2^(smallest e + 5 chain) when *fused is set */
    int *fused;   /* out: the chain count (1..CPU_FUSED_CHAINS) if pp holds the fused form, else 0;
                   * pp then holds [chains][blocks][8][16] words */
} cpu_softmax_args;

/* S = Q^ K^T for 16 query rows and `nkeys` keys (a multiple of 8). */
typedef struct cpu_qk_int_args {
    const uint32_t *qp;   /* [dblk][8][16] Q codes + 12 */
    const float *qsc;     /* [dblk][16] 2^eq */
    const int8_t *k;      /* [nkeys][d] K codes, row-major */
    const int32_t *kcorr; /* [nkeys][dblk] -12 * sum of the block's K codes */
    const float *ksc;     /* [nkeys][dblk] 2^(ek - 2) */
    int nkeys, dblk;
    float scale;
    float *s; /* [nkeys][16] */
} cpu_qk_int_args;

/* S = Q^ K^T in one integer dot product over all of D. Valid when, in every
 * row and key, the block exponents span at most CPU_FUSED_SHIFT: codes are
 * pre-shifted to the smallest one, so the whole sum is an exact integer
 * (< 2^24) times one power of two, which is also what the reference's fp32
 * sum of exact block products comes to. */
typedef struct cpu_qk_fused_args {
    const uint32_t *qp;   /* [dblk][8][16] (code << shift) + fused_q_offset */
    const float *qsc;     /* [16] 2^(smallest eq) */
    const int8_t *k;      /* [nkeys][d] code << shift */
    const int32_t *kcorr; /* [nkeys] -fused_q_offset * sum of the row's shifted codes */
    const float *ksc;     /* [nkeys] 2^(smallest ek - 2) */
    int nkeys, d;
    float scale;
    float *s;
} cpu_qk_fused_args;

/* acc = alpha * acc + P^ V^ over `blocks` 32-key blocks. */
typedef struct cpu_pv_int_args {
    const uint32_t *pp; /* [blocks][8][16] */
    const float *psc;   /* [blocks][16] */
    const int8_t *vt;   /* V^ transposed: column c at vt + c * vt_stride, tile start */
    int64_t vt_stride;
    const float *vsc;   /* column c block b at vsc[c * vsc_stride + b]: 2^(ev - 2) */
    int64_t vsc_stride;
    int blocks, d;
    const float *alpha;
    float *acc; /* [d][16] */
} cpu_pv_int_args;

/* acc = alpha * acc + P^ V^ as one integer dot per (row, column) and chain over
 * the tile: V^ codes pre-shifted as in cpu_qk_fused_args; a row's P^ block
 * with exponent e lies in chain c = (e - smallest e) / (CPU_FUSED_SHIFT_P + 1)
 * (zeros in the other chains), its (unsigned) codes shifted left by the rest,
 * so each chain's sum is exact (|sum| < 2^24 for tiles of <= 256 keys). */
typedef struct cpu_pv_fused_args {
    const uint32_t *pp; /* [chains][words][16] */
    const float *psc8;  /* [chains][16] each chain's unit */
    int chains;
    const int8_t *vt;   /* column c at vt + c * vt_stride, tile start */
    int64_t vt_stride;
    const float *vsc;   /* column c at vsc[c * vsc_stride]: 2^(smallest ev - 2) */
    int64_t vsc_stride;
    int words, d;
    const float *alpha;
    float *acc;
} cpu_pv_fused_args;

typedef struct cpu_kernels {
    const char *name;
    /* Quantizes x [nblk*32][16] along its first axis, lanes independent. */
    void (*quantize)(const float *x, int nblk, cpu_rule rule, int offset, const cpu_quant_out *out);
    /* Walsh-Hadamard rotation of x [d][16] along d (SPEC §2 step 1 order). */
    void (*rotate)(float *x, int d);
    /* dst[c * dst_stride + r] = r < valid ? src[r * src_stride + c] : 0 for r < rows, c < cols:
     * 32-bit elements at any 1-byte alignment (the tile layouts to and from rows of keys). */
    void (*transpose)(const void *src, int64_t src_stride, int rows, int valid, int cols, void *dst, int64_t dst_stride);
    void (*qk_int)(const cpu_qk_int_args *a);
    void (*qk_fused)(const cpu_qk_fused_args *a); /* NULL: not on this path */
    int fused_q_offset; /* added to qk_fused's Q codes: 96 for u8 x s8 products, 0 for s8 x s8 (AMX) */
    void (*pv_fused)(const cpu_pv_fused_args *a); /* NULL: not on this path */
    /* Quantizes x [nblk*32][16] like `quantize`, then shifts each lane's codes
     * to its smallest non-zero block exponent: packed words of (code << shift)
     * + offset, smin [16] = 2^(smallest e), sum [16] of the shifted codes (may
     * be NULL). Returns the mask of lanes where that is exact (span <= 3, no
     * NaN block, smallest e in [-60, 60]); the other lanes' outputs are junk. */
    unsigned (*quantize_fused)(const float *x, int nblk, cpu_rule rule, int offset, uint32_t *packed, float *smin,
                               int32_t *sum);
    /* Called by a worker after each work item (may be NULL): AMX releases its tiles. */
    void (*end_item)(void);
    /* s [nkeys][16] = scale * qt^T k^T; qt [d][16], k [nkeys][d]; nkeys % 8 == 0. */
    void (*qk_f32)(const float *qt, const float *k, int nkeys, int d, float scale, float *s);
    void (*softmax)(const cpu_softmax_args *a);
    void (*pv_int)(const cpu_pv_int_args *a);
    /* acc [d][16] = alpha * acc + sum_j p[j] v[j]; p [len][16], v [len][d]. */
    void (*pv_f32)(const float *p, const float *v, int len, int d, const float *alpha, float *acc);
} cpu_kernels;

extern const cpu_kernels cpu_kernels_portable;
#if defined(__x86_64__) || defined(__i386__)
extern const cpu_kernels cpu_kernels_avx2;
extern const cpu_kernels cpu_kernels_avx512;
#endif
#if defined(MXA_CPU_HAVE_AMX)
/* The AVX-512 table with AMX fused QK and PV kernels. */
const cpu_kernels *cpu_kernels_amx(void);
#endif


#endif
