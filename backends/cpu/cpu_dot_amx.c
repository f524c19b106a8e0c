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

/* General layout: tmm0 C 16 x 16 int32; tmm1 A 16 x 64 bytes; tmm2..5 B 16
 * words x 16 lanes; tmm6 / tmm7 A and B for a last chunk of 32 bytes.
 * Triple layout (at most 2 whole chunks): C in tmm0/4/6, A in tmm1/5/7, B in
 * tmm2/3, so three products run at once (one TDPBSUD's latency is several
 * times its issue interval). Pair layout (4 whole chunks): C in tmm0/6, A in
 * tmm1/7, B in tmm2..5. All three are one configuration (every tile 16 x 64
 * bytes); only a last chunk of 32 bytes needs another. */
/* The configuration this thread's tiles hold (0: none, 1: whole chunks, 2:
 * with a last chunk of 32 bytes): loading one costs about as much as a
 * product, so it stays until the work item ends. */
static _Thread_local int amx_loaded;

static int amx_configure(int words)
{
    /* one configuration serves every whole-chunk size (Q K^T at D 128, P V at Bc 128 or 256) */
    const int partial = words % 16 != 0, triple = !partial && words <= 32;
    if (amx_loaded == 1 + partial) return triple;
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
    return triple;
}

/* B signed (Q^ codes, TDPBSSD) or unsigned (P^ codes, TDPBSUD). */
#define AMX_DP(c, a, b, signed_b) \
    do { \
        if (signed_b) _tile_dpbssd(c, a, b); \
        else _tile_dpbsud(c, a, b); \
    } while (0)

/* Triple layout: C0/C1/C2 = A B for 16 rows at a, a + 16 stride, a + 32 stride. */
static inline void amx_product3(const int8_t *a, long stride, int words, int32_t *cbuf, int signed_b)
{
    _tile_zero(0);
    _tile_zero(4);
    _tile_zero(6);
    _tile_loadd(1, a, stride);
    _tile_loadd(5, a + 16 * stride, stride);
    _tile_loadd(7, a + 32 * stride, stride);
    AMX_DP(0, 1, 2, signed_b);
    AMX_DP(4, 5, 2, signed_b);
    AMX_DP(6, 7, 2, signed_b);
    if (words > 16) {
        _tile_loadd(1, a + 64, stride);
        _tile_loadd(5, a + 16 * stride + 64, stride);
        _tile_loadd(7, a + 32 * stride + 64, stride);
        AMX_DP(0, 1, 3, signed_b);
        AMX_DP(4, 5, 3, signed_b);
        AMX_DP(6, 7, 3, signed_b);
    }
    _tile_stored(0, cbuf, 64);
    _tile_stored(4, cbuf + 256, 64);
    _tile_stored(6, cbuf + 512, 64);
}

/* Two products at once for 4 whole chunks (B in tmm2..5: P V at Bc 256):
 * C0/C1 = A B for 16 rows at a and a + 16 stride, in tmm0/6 with A in tmm1/7. */
static inline void amx_product2x4(const int8_t *a, long stride, int32_t *cbuf, int signed_b)
{
    _tile_zero(0);
    _tile_zero(6);
#define AMX_STEP(t, b) \
    _tile_loadd(1, a + 64 * (t), stride); \
    _tile_loadd(7, a + 16 * stride + 64 * (t), stride); \
    AMX_DP(0, 1, b, signed_b); \
    AMX_DP(6, 7, b, signed_b);
    AMX_STEP(0, 2)
    AMX_STEP(1, 3)
    AMX_STEP(2, 4)
    AMX_STEP(3, 5)
#undef AMX_STEP
    _tile_stored(0, cbuf, 64);
    _tile_stored(6, cbuf + 256, 64);
}

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
    int32_t cbuf[3 * 16 * CPU_LANES] __attribute__((aligned(64)));
    /* 2^eq * scale is exact (a power of two times a float), so dot * (that * ksc) rounds once, as dot * 2^(eq + ek) * scale */
    const __m512 qss = _mm512_mul_ps(_mm512_loadu_ps(a->qsc), _mm512_set1_ps(a->scale));
    const int triple = amx_configure(d / 4);
    amx_load_b(a->qp, d / 4);
    /* 16 keys per product; nkeys is a multiple of 8 and the K buffer holds whole tiles, so reading 16 is safe */
    for (int j = 0; j < a->nkeys;) {
        const int group = triple && a->nkeys - j > 32 ? 48 : 16;
        if (group == 48) {
            amx_product3(a->k + (size_t)j * d, d, d / 4, cbuf, 1);
        } else {
            amx_product(a->k + (size_t)j * d, d, d / 4, 1);
            _tile_stored(0, cbuf, 64);
        }
        const int rr = a->nkeys - j < group ? a->nkeys - j : group;
        for (int r = 0; r < rr; r++) { /* fused_q_offset 0: no kcorr */
            const __m512 sc = _mm512_mul_ps(qss, _mm512_set1_ps(a->ksc[j + r]));
            _mm512_storeu_ps(a->s + (j + r) * CPU_LANES, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cbuf + r * CPU_LANES)), sc));
        }
        j += group;
    }
}

static void amx_pv_fused(const cpu_pv_fused_args *a)
{
    int32_t cbuf[3 * 16 * CPU_LANES] __attribute__((aligned(64)));
    const __m512 alpha = _mm512_loadu_ps(a->alpha), ps = _mm512_loadu_ps(a->psc8);
    /* alpha = 1 in every row (no row's maximum moved): alpha O~ = O~ exactly, so skip the product */
    const int rescale = _mm512_cmp_ps_mask(alpha, _mm512_set1_ps(1.0f), _CMP_NEQ_UQ) != 0;
    const int triple = amx_configure(a->words);
    amx_load_b(a->pp, a->words);
    const int pair = a->words == 64; /* whole chunks, but four: two products at once */
    for (int c = 0; c < a->d;) {
        const int group = triple && a->d - c >= 48 ? 48 : pair && a->d - c >= 32 ? 32 : 16;
        if (group == 48) {
            amx_product3(a->vt + c * a->vt_stride, (long)a->vt_stride, a->words, cbuf, 0);
        } else if (group == 32) {
            amx_product2x4(a->vt + c * a->vt_stride, (long)a->vt_stride, cbuf, 0);
        } else {
            amx_product(a->vt + c * a->vt_stride, (long)a->vt_stride, a->words, 0);
            _tile_stored(0, cbuf, 64);
        }
        for (int r = 0; r < group; r++) {
            float *o = a->acc + (c + r) * CPU_LANES;
            const __m512 sc = _mm512_mul_ps(ps, _mm512_set1_ps(a->vsc[(c + r) * a->vsc_stride]));
            const __m512 o0 = rescale ? _mm512_mul_ps(alpha, _mm512_loadu_ps(o)) : _mm512_loadu_ps(o);
            /* the product is exact (< 2^24 times a power of two), so the fma rounds once, as the reference's sum */
            _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cbuf + r * CPU_LANES)), sc, o0));
        }
        c += group;
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
