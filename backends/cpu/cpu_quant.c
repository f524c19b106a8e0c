/*
 * Tile preparation: K and V of every kv head are rotated and quantized once
 * (in parallel over 32-key slices), before any query tile uses them; each Q
 * tile is prepared once by the worker that owns it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/hadamard.h"
#include "../../runtime/mxfp4.h"
#include "../../runtime/status.h"
#include "cpu_quant.h"
#include "cpu_pv_fp8.h"

#define L CPU_LANES

void *cpu_buf_get(cpu_buf *b, size_t size)
{
    if (b->p && b->size >= size) return b->p;
    free(b->p);
    b->size = (size + 63) & ~(size_t)63;
    b->p = aligned_alloc(64, b->size);
    if (!b->p) b->size = 0;
    return b->p;
}

void cpu_buf_free(cpu_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->size = 0;
}

cpu_rule cpu_rule_of(mxa_rule_kind kind, float q)
{
    cpu_rule r = {1 << 23, -1};
    if (kind != MXA_RULE_CEIL) return r;
    /* the reference compares 4m <= q and 8m <= q with m = 1 + f 2^-23, exactly in double */
    const double up = floor(((double)q / 4.0 - 1.0) * 8388608.0);
    const double down = floor(((double)q / 8.0 - 1.0) * 8388608.0);
    r.up = up >= (double)(1 << 23) ? 1 << 23 : (int32_t)up;
    r.down = down < 0.0 ? -1 : (int32_t)down;
    return r;
}

/* How many of the n rows from j0 exist when there are len: in [0, n]. */
static int rows_present(int64_t len, int64_t j0, int n)
{
    const int64_t have = len - j0;
    return have < 0 ? 0 : have < n ? (int)have : n;
}

/* Keys [j0, j0 + 16) of a kv head. */
static void prep_k16(const cpu_prep *p, const float *k, cpu_head_kv *hd, int64_t j0)
{
    const int64_t d = p->d, dblk = d / 32;
    float x[256 * L];
    uint32_t packed[8 * CPU_WORDS * L];
    float scale[8 * L];
    int32_t sum[8 * L];
    if (d < 32 || d > 256) return; /* checked by the runtime; tells the compiler x gets written */
    p->kern->transpose(k + j0 * d, d, L, rows_present(hd->len, j0, L), (int)d, x, L);
    if (p->desc->hadamard && !p->k_rotated) p->kern->rotate(x, (int)d);
    if (!p->qk_int) {
        for (int l = 0; l < L; l++)
            for (int64_t c = 0; c < d; c++) hd->kf[(j0 + l) * d + c] = x[c * L + l];
        return;
    }
    const cpu_quant_out out = {packed, scale, NULL, NULL, NULL, sum};
    p->kern->quantize(x, (int)dblk, p->rule, 0, &out);
    p->kern->transpose(packed, L, (int)(d / 4), (int)(d / 4), L, hd->k + j0 * d, d / 4);
    for (int64_t b = 0; b < dblk; b++)
        for (int l = 0; l < L; l++) {
            hd->kcorr[(j0 + l) * dblk + b] = -CPU_Q_OFFSET * sum[b * L + l];
            hd->ksc[(j0 + l) * dblk + b] = scale[b * L + l] * 0.25f;
        }
    /* the fused form reuses packed and sum: after the per-block form (the fallback for
     * tiles with a wide row) is stored */
    if (p->fused) {
        float smin[L];
        const unsigned ok = p->kern->quantize_fused(x, (int)dblk, p->rule, 0, packed, smin, sum);
        p->kern->transpose(packed, L, (int)(d / 4), (int)(d / 4), L, hd->k8 + j0 * d, d / 4);
        for (int l = 0; l < L; l++) {
            hd->kok[j0 + l] = (uint8_t)((ok >> l) & 1);
            hd->kcorr8[j0 + l] = -p->kern->fused_q_offset * sum[l];
            hd->ksc8[j0 + l] = smin[l] * 0.25f;
        }
    }
}

/* x [n][16] = columns [c0, c0 + 16) of V's keys [j0, j0 + n), zero past len: one row copy each. */
static void v_rows(const float *v, int64_t d, int64_t c0, int64_t j0, int n, int64_t len, float *x)
{
    const int rows = rows_present(len, j0, n);
    for (int i = 0; i < rows; i++) memcpy(x + i * L, v + (j0 + i) * d + c0, L * sizeof(float));
    memset(x + rows * L, 0, (size_t)(n - rows) * L * sizeof(float));
}

/* Keys [j0, j0 + 32) of V, 16 columns at a time, blocks along the keys. */
static void prep_v32(const cpu_prep *p, const float *v, cpu_head_kv *hd, int64_t j0)
{
    const int64_t d = p->d, kblk = p->nk_pad / 32;
    const int quant_v = (p->desc->quantize & MXA_QUANT_V) != 0;
    float x[32 * L], dec[32 * L];
    uint32_t packed[CPU_WORDS * L];
    float scale[L];
    for (int64_t c0 = 0; c0 < d; c0 += L) {
        v_rows(v, d, c0, j0, 32, hd->len, x);
        const float *rows = x;
        if (quant_v && p->pv_fp8) {
            cpu_fp8_fake_quantize_lanes(x, 1, NULL);
        } else if (quant_v) {
            const cpu_quant_out out = {packed, scale, p->pv_int ? NULL : dec, NULL, NULL, NULL};
            p->kern->quantize(x, 1, p->rule, 0, &out);
            rows = dec;
        }
        if (p->pv_int) {
            p->kern->transpose(packed, L, CPU_WORDS, CPU_WORDS, L, hd->vt + c0 * p->nk_pad + j0, p->nk_pad / 4);
            for (int l = 0; l < L; l++) {
                hd->vsc[(c0 + l) * kblk + j0 / 32] = scale[l] * 0.25f;
            }
        } else {
            for (int i = 0; i < 32; i++)
                for (int l = 0; l < L; l++) hd->vf[(j0 + i) * d + c0 + l] = rows[i * L + l];
        }
    }
}

/* The fused V^ of key tile t: per column, codes shifted to the column's
 * smallest non-zero block exponent within the tile. */
static void prep_v_fused(void *ctx, int64_t item, int worker)
{
    (void)worker;
    const cpu_prep *p = ctx;
    const int64_t tiles = p->nk_pad / p->bc, head = item / tiles, t = item % tiles, j0 = t * p->bc, d = p->d;
    const float *v = p->v + head * p->nk * d;
    cpu_head_kv *hd = &p->heads[head];
    float x[CPU_FUSED_MAX_BC * L], smin[L];
    uint32_t packed[CPU_FUSED_MAX_BC / 4 * L];
    uint8_t ok = 1;
    for (int64_t c0 = 0; c0 < d; c0 += L) {
        v_rows(v, d, c0, j0, (int)p->bc, hd->len, x);
        ok &= p->kern->quantize_fused(x, p->bc / 32, p->rule, 0, packed, smin, NULL) == 0xffffu;
        p->kern->transpose(packed, L, (int)(p->bc / 4), (int)(p->bc / 4), L, hd->vt8 + j0 * d + c0 * p->bc, p->bc / 4);
        for (int l = 0; l < L; l++) {
            hd->vsc8[(c0 + l) * tiles + t] = smin[l] * 0.25f;
        }
    }
    hd->vtile_ok[t] = ok;
}

static void prep_task(void *ctx, int64_t item, int worker)
{
    (void)worker;
    const cpu_prep *p = ctx;
    const int64_t slices = p->nk_pad / 32, head = item / slices, j0 = (item % slices) * 32;
    const int64_t off = head * p->nk * p->d;
    cpu_head_kv *hd = &p->heads[head];
    prep_k16(p, p->k + off, hd, j0);
    prep_k16(p, p->k + off, hd, j0 + 16);
    prep_v32(p, p->v + off, hd, j0);
}

mxa_status cpu_prep_kv(cpu_prep *p, cpu_pool *pool)
{
    const int64_t nheads = p->b * p->hkv, d = p->d, np = p->nk_pad, dblk = d / 32;
#define UP64(n) (((size_t)(n) + 63) & ~(size_t)63) /* every part starts 64-byte aligned */
    const size_t k_bytes = UP64(p->qk_int ? np * d + np * dblk * 8 : np * d * 4);
    const size_t v_bytes = UP64(p->pv_int ? np * d + d * (np / 32) * 4 : np * d * 4);
    const size_t f_bytes = p->fused ? UP64(np * d + np * 9 + np / 32) : 0;
    const size_t g_bytes = p->pv_fused ? UP64(np * d + d * (np / p->bc) * 4 + np / p->bc) : 0;
    const size_t per_head = k_bytes + v_bytes + f_bytes + g_bytes;
#undef UP64
    p->heads = calloc((size_t)nheads, sizeof *p->heads);
    char *arena = cpu_buf_get(p->arena, (size_t)nheads * per_head);
    if (!p->heads || !arena) {
        cpu_prep_free(p);
        return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "cpu attention: out of memory for the prepared K/V (%zu bytes)",
                        (size_t)nheads * per_head);
    }
    for (int64_t i = 0; i < nheads; i++) {
        char *base = arena + i * per_head;
        cpu_head_kv *hd = &p->heads[i];
        /* a key length is a length: the keys after it do not exist, so V's last block is zero-padded */
        hd->len = p->key_lengths ? p->key_lengths[i / p->hkv] : p->nk;
        if (p->qk_int) {
            hd->ksc = (float *)base;
            hd->kcorr = (int32_t *)(base + np * dblk * 4);
            hd->k = (int8_t *)(base + np * dblk * 8);
        } else {
            hd->kf = (float *)base;
        }
        base += k_bytes;
        if (p->pv_int) {
            hd->vsc = (float *)base;
            hd->vt = (int8_t *)(base + d * (np / 32) * 4);
        } else {
            hd->vf = (float *)base;
        }
        base += v_bytes;
        if (p->fused) {
            hd->ksc8 = (float *)base;
            hd->kcorr8 = (int32_t *)(base + np * 4);
            hd->k8 = (int8_t *)(base + np * 8);
            hd->kok = (uint8_t *)(base + np * 8 + np * d);
            hd->tile_ok = hd->kok + np;
        }
        base += f_bytes;
        if (p->pv_fused) {
            hd->vsc8 = (float *)base;
            hd->vt8 = (int8_t *)(base + d * (np / p->bc) * 4);
            hd->vtile_ok = (uint8_t *)(base + d * (np / p->bc) * 4 + np * d);
        }
    }
    cpu_pool_run(pool, nheads * (np / 32), prep_task, p);
    if (p->pv_fused) cpu_pool_run(pool, nheads * (np / p->bc), prep_v_fused, p);
    if (p->fused) /* after the parallel part: a tile's keys come from several tasks */
        for (int64_t i = 0; i < nheads; i++)
            for (int64_t t = 0; t < np / p->bc; t++) {
                uint8_t ok = 1;
                for (int64_t j = t * p->bc; j < (t + 1) * p->bc; j++) ok &= p->heads[i].kok[j];
                p->heads[i].tile_ok[t] = ok;
            }
    return MXA_OK;
}

void cpu_prep_free(cpu_prep *p)
{
    free(p->heads); /* the arena stays with the device */
    p->heads = NULL;
}

void cpu_prep_q(const cpu_prep *p, int64_t b, int64_t h, int64_t i0, float *x, uint32_t *qp, float *qsc,
                cpu_q_fused *fz)
{
    const int64_t d = p->d;
    const float *q = p->q + (b * p->h + h) * p->nq * d;
    p->kern->transpose(q + i0 * d, d, L, rows_present(p->nq, i0, L), (int)d, x, L);
    if (p->desc->hadamard) p->kern->rotate(x, (int)d);
    if (p->qk_int) {
        const cpu_quant_out out = {qp, qsc, NULL, NULL, NULL, NULL};
        p->kern->quantize(x, (int)(d / 32), p->rule, CPU_Q_OFFSET, &out);
    }
    fz->ok = p->fused && p->kern->quantize_fused(x, (int)(d / 32), p->rule, p->kern->fused_q_offset, fz->qp8, fz->qsc8, NULL) == 0xffffu;
}

/* ----------------------------------------------------------- mxa_quantize */

typedef struct rows_job {
    const cpu_kernels *kern;
    const float *x;
    int64_t rows, d, nblk;
    cpu_rule rule;
    uint8_t *codes, *scales;
} rows_job;

/* Four bytes as the 32-bit word that holds them in this order in memory. */
static inline uint32_t bytes_word(uint32_t b0, uint32_t b1, uint32_t b2, uint32_t b3)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return b0 << 24 | b1 << 16 | b2 << 8 | b3;
#else
    return b0 | b1 << 8 | b2 << 16 | b3 << 24;
#endif
}

/* Rows [16 item, 16 item + 16), 8 blocks at a time. The rows come in and the codes go out
 * through the ISA's 16 x 16 transpose (the codes as words of four bytes, packed across the
 * lanes first), not element by element. */
static void rows_task(void *ctx, int64_t item, int worker)
{
    (void)worker;
    const rows_job *j = ctx;
    float x[8 * 32 * L];
    uint8_t nib[8 * 32 * L], sb[8 * L];
    uint32_t words[8 * 4 * L];
    const int64_t r0 = item * L;
    const int valid = rows_present(j->rows, r0, L);
    for (int64_t b0 = 0; b0 < j->nblk; b0 += 8) {
        const int nb = (int)(j->nblk - b0 < 8 ? j->nblk - b0 : 8);
        const int64_t cols = j->d - b0 * 32 < nb * 32 ? j->d - b0 * 32 : nb * 32; /* the row's tail block is short */
        j->kern->transpose(j->x + r0 * j->d + b0 * 32, j->d, L, valid, (int)cols, x, L);
        memset(x + cols * L, 0, (size_t)(nb * 32 - cols) * L * sizeof *x);
        const cpu_quant_out out = {NULL, NULL, NULL, nib, sb, NULL};
        j->kern->quantize(x, nb, j->rule, 0, &out);
        for (int w = 0; w < nb * 4; w++) { /* code bytes 4w .. 4w + 3 of every lane: elements 8w .. 8w + 7 */
            const uint8_t *e = nib + 8 * w * L;
            for (int l = 0; l < L; l++)
                words[w * L + l] = bytes_word((uint32_t)(e[l] | e[L + l] << 4), (uint32_t)(e[2 * L + l] | e[3 * L + l] << 4),
                                              (uint32_t)(e[4 * L + l] | e[5 * L + l] << 4), (uint32_t)(e[6 * L + l] | e[7 * L + l] << 4));
        }
        j->kern->transpose(words, L, nb * 4, nb * 4, valid, j->codes + r0 * j->nblk * 16 + b0 * 16, j->nblk * 4);
        for (int l = 0; l < valid; l++)
            for (int b = 0; b < nb; b++) j->scales[(r0 + l) * j->nblk + b0 + b] = sb[b * L + l];
    }
}

mxa_status cpu_quantize_rows(const cpu_kernels *kern, cpu_pool *pool, const float *x, int64_t rows, int64_t d,
                             mxa_rule rule, uint8_t *codes, uint8_t *scales)
{
    rows_job j = {kern, x, rows, d, (d + 31) / 32, cpu_rule_of(rule.kind, rule.q), codes, scales};
    cpu_pool_run(pool, (rows + L - 1) / L, rows_task, &j);
    return MXA_OK;
}
