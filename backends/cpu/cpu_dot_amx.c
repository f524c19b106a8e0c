/*
 * AMX int8 kernels for the fused forms (compiled with -mamx-tile -mamx-int8
 * and the AVX-512 flags; used only when cpuid, XCR0 and the kernel's
 * permission allow it). The fused layouts are already what the tile products
 * take: rows of K^ (or of V^ transposed) are the signed A tile, and the word
 * arrays of Q^ (signed, TDPBSSD: no offset to correct) or P^ (unsigned,
 * TDPBSUD) -- four bytes per lane per word -- are the B tile. C = A B is
 * then S transposed ([key][row], the layout the softmax reads) or O~
 * transposed ([column][row], the accumulator's layout). Everything else is
 * the AVX-512 path.
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "cpu_kernels.h"

typedef struct amx_cfg {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

/* Layout: tmm0 C 16 x 16 int32; tmm1 A 16 x 64 bytes; tmm2..5 B 16 words x 16
 * lanes; tmm6 / tmm7 A and B for a last chunk of 32 bytes. One product at a
 * time, its C stored before the next starts: on a Sapphire Rapids core (the
 * development machine, cpu_stages) that ran Q K^T 1.3x faster than three
 * products in flight on three C tiles, and P V faster than two. */
/* The configuration this thread's tiles hold (0: none, 1: whole chunks, 2:
 * with a last chunk of 32 bytes): loading one costs about as much as a
 * product, so it stays until the work item ends. */
static _Thread_local int amx_loaded;

static void amx_configure(int words)
{
    /* one configuration serves every whole-chunk size (Q K^T at D 128, P V at Bc 128 or 256) */
    const int partial = words % 16 != 0;
    if (amx_loaded == 1 + partial) return;
    amx_loaded = 1 + partial;
    amx_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) {
        c.rows[t] = 16;
        c.colsb[t] = 64;
    }
    if (partial) {
        c.colsb[6] = 32;
        c.rows[7] = 8;
    }
    _tile_loadconfig(&c);
}

/* B signed (Q^ codes, TDPBSSD) or unsigned (P^ codes, TDPBSUD). */
#define AMX_DP(c, a, b, signed_b) \
    do { \
        if (signed_b) _tile_dpbssd(c, a, b); \
        else _tile_dpbsud(c, a, b); \
    } while (0)

/* B tiles from `words` words of 16 lanes (a multiple of 8, at most 64). */
static void amx_load_b(const uint32_t *w, int words)
{
    const int full = words / 16;
    if (full > 0) _tile_loadd(2, w, 64);
    if (full > 1) _tile_loadd(3, w + 256, 64);
    if (full > 2) _tile_loadd(4, w + 512, 64);
    if (full > 3) _tile_loadd(5, w + 768, 64);
    if (words % 16) _tile_loadd(7, w + full * 256, 64);
}

/* tmm0 = A B for 16 rows of A at `a` (row stride `stride`), 4 * words bytes each. */
static inline void amx_product(const int8_t *a, long stride, int words, int signed_b)
{
    const int full = words / 16;
    _tile_zero(0);
    if (full > 0) {
        _tile_loadd(1, a, stride);
        AMX_DP(0, 1, 2, signed_b);
    }
    if (full > 1) {
        _tile_loadd(1, a + 64, stride);
        AMX_DP(0, 1, 3, signed_b);
    }
    if (full > 2) {
        _tile_loadd(1, a + 128, stride);
        AMX_DP(0, 1, 4, signed_b);
    }
    if (full > 3) {
        _tile_loadd(1, a + 192, stride);
        AMX_DP(0, 1, 5, signed_b);
    }
    if (words % 16) {
        _tile_loadd(6, a + 64 * full, stride);
        AMX_DP(0, 6, 7, signed_b);
    }
}

static void amx_qk_fused(const cpu_qk_fused_args *a)
{
    const int d = a->d;
    int32_t cbuf[16 * CPU_LANES] __attribute__((aligned(64)));
    /* 2^eq * scale is exact (a power of two times a float), so dot * (that * ksc) rounds once, as dot * 2^(eq + ek) * scale */
    const __m512 qss = _mm512_mul_ps(_mm512_loadu_ps(a->qsc), _mm512_set1_ps(a->scale));
    amx_configure(d / 4);
    amx_load_b(a->qp, d / 4);
    /* 16 keys per product; nkeys is a multiple of 8 and the K buffer holds whole tiles, so reading 16 is safe */
    for (int j = 0; j < a->nkeys; j += 16) {
        amx_product(a->k + (size_t)j * d, d, d / 4, 1);
        _tile_stored(0, cbuf, 64);
        const int rr = a->nkeys - j < 16 ? a->nkeys - j : 16;
        for (int r = 0; r < rr; r++) { /* fused_q_offset 0: no kcorr */
            const __m512 sc = _mm512_mul_ps(qss, _mm512_set1_ps(a->ksc[j + r]));
            _mm512_storeu_ps(a->s + (j + r) * CPU_LANES, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cbuf + r * CPU_LANES)), sc));
        }
    }
}

static void amx_pv_fused(const cpu_pv_fused_args *a)
{
    int32_t cbuf[16 * CPU_LANES] __attribute__((aligned(64)));
    const __m512 alpha = _mm512_loadu_ps(a->alpha);
    /* alpha = 1 in every row (no row's maximum moved): alpha O~ = O~ exactly, so skip the product */
    const int rescale = _mm512_cmp_ps_mask(alpha, _mm512_set1_ps(1.0f), _CMP_NEQ_UQ) != 0;
    amx_configure(a->words);
    for (int ch = 0; ch < a->chains; ch++) { /* one pass over O~ per chain: a second is rare */
        const __m512 ps = _mm512_loadu_ps(a->psc8 + ch * CPU_LANES);
        amx_load_b(a->pp + (size_t)ch * a->words * CPU_LANES, a->words);
        for (int c = 0; c < a->d; c += 16) {
            amx_product(a->vt + c * a->vt_stride, (long)a->vt_stride, a->words, 0);
            _tile_stored(0, cbuf, 64);
            for (int r = 0; r < 16; r++) {
                float *o = a->acc + (c + r) * CPU_LANES;
                const __m512 sc = _mm512_mul_ps(ps, _mm512_set1_ps(a->vsc[(c + r) * a->vsc_stride]));
                const __m512 o0 = rescale && ch == 0 ? _mm512_mul_ps(alpha, _mm512_loadu_ps(o)) : _mm512_loadu_ps(o);
                /* the product is exact (< 2^24 times a power of two), so the fma rounds once, as the reference's sum */
                _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cbuf + r * CPU_LANES)), sc, o0));
            }
        }
    }
}

/* Hands the tile state back at the end of a work item (the calling thread
 * may be the user's). */
static void amx_end_item(void)
{
    if (!amx_loaded) return;
    _tile_release();
    amx_loaded = 0;
}

static cpu_kernels amx_table;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void amx_init(void)
{
    amx_table = cpu_kernels_avx512;
    amx_table.name = "amx-int8";
    amx_table.qk_fused = amx_qk_fused;
    amx_table.fused_q_offset = 0;
    amx_table.pv_fused = amx_pv_fused;
    amx_table.end_item = amx_end_item;
}

const cpu_kernels *cpu_kernels_amx(void)
{
    pthread_once(&amx_once, amx_init);
    return &amx_table;
}
