/*
 * The fused flash-attention pass: each work item is 16 query rows of one
 * head, run through every key tile with the online softmax of SPEC §2. A
 * worker holds O(tile) state (scores, P^, accumulator); nothing N x N is
 * ever stored. Items are (batch, head, query tile), handed out dynamically;
 * causal items go longest first.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/env.h"
#include "../../runtime/status.h"
#include "cpu_attention.h"
#include "cpu_pv_fp8.h"
#include "cpu_quant.h"

#define L CPU_LANES

/* A worker's scratch, carved from one allocation (64-byte aligned parts). */
typedef struct scratch {
    float *x;      /* [d][16] Q tile (fp32 path) */
    uint32_t *qp;  /* [dblk][8][16] */
    float *qsc;    /* [dblk][16] */
    float *s;      /* [bc][16] scores, then P */
    uint32_t *pp;  /* [bc/32][8][16], or the fused form's [chains][bc/32][8][16] */
    float *psc;    /* [bc/32][16] */
    float *acc;    /* [d][16] */
    uint32_t *qp8; /* [d/4][16] fused Q */
    float *qsc8;   /* [16] fused Q scale, then [CPU_FUSED_CHAINS][16] fused P^ units */
} scratch;

/* A bias or mask as the attention pass reads it: dense [b|1, h|1, nq, nk] on the host. */
typedef struct side {
    const void *data; /* NULL: absent */
    int64_t b, h;
} side;

typedef struct job {
    cpu_prep prep;
    int bc;
    int64_t qtiles;
    float *o, *lse;
    side bias, mask; /* float32, bytes */
    char *scratch_mem;
    size_t scratch_bytes;
} job;

static size_t up64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static size_t scratch_layout(int64_t d, int bc, char *base, scratch *s)
{
    const size_t sizes[9] = {(size_t)d * L * 4, (size_t)d / 32 * CPU_WORDS * L * 4, (size_t)d / 32 * L * 4,
                             (size_t)bc * L * 4, (size_t)bc / 32 * CPU_WORDS * L * 4 * CPU_FUSED_CHAINS,
                             (size_t)bc / 32 * L * 4, (size_t)d * L * 4, (size_t)d * L, (1 + CPU_FUSED_CHAINS) * L * 4};
    void *parts[9];
    size_t off = 0;
    for (int i = 0; i < 9; i++) {
        parts[i] = base ? base + off : NULL;
        off += up64(sizes[i]);
    }
    if (s) {
        s->x = parts[0];
        s->qp = parts[1];
        s->qsc = parts[2];
        s->s = parts[3];
        s->pp = parts[4];
        s->psc = parts[5];
        s->acc = parts[6];
        s->qp8 = parts[7];
        s->qsc8 = parts[8];
    }
    return off;
}

/* Row i of (b, h) in a side array, or NULL when absent. */
static const void *side_row(const side *sd, size_t esize, const cpu_prep *p, int64_t b, int64_t h, int64_t i)
{
    if (!sd->data) return NULL;
    const int64_t bb = sd->b == 1 ? 0 : b, hh = sd->h == 1 ? 0 : h;
    return (const char *)sd->data + (size_t)(((bb * sd->h + hh) * p->nq + i) * p->nk) * esize;
}

/* The scaled scores s [len][16] of keys j0.. plus the bias (one fp32 addition, as the
 * reference); a masked key's score is -inf: every softmax gives it P~ = 0 exactly (the
 * AVX-512 exp clamps its argument at -104) and never takes it as a row maximum. */
static void hide_and_bias(float *s, int len, int64_t j0, const float *const *bias, const uint8_t *const *mask)
{
    for (int j = 0; j < len; j++)
        for (int r = 0; r < L; r++) {
            float x = s[j * L + r];
            if (bias[r]) x += bias[r][j0 + j];
            if (mask[r] && !mask[r][j0 + j]) x = -INFINITY;
            s[j * L + r] = x;
        }
}

static void attention_task(void *ctx, int64_t item, int worker)
{
    const job *jb = ctx;
    const cpu_prep *p = &jb->prep;
    const mxa_attention_desc *desc = p->desc;
    const cpu_kernels *kern = p->kern;
    const int64_t d = p->d, dblk = d / 32, nq = p->nq, bc = jb->bc;
    /* causal: the last query tiles see the most keys, so they go first */
    const int64_t tile = desc->causal ? jb->qtiles - 1 - item % jb->qtiles : item % jb->qtiles;
    const int64_t bh = item / jb->qtiles, b = bh / p->h, h = bh % p->h, i0 = tile * L;
    const cpu_head_kv *hd = &p->heads[b * p->hkv + h / (p->h / p->hkv)];
    scratch sc;
    scratch_layout(d, (int)bc, jb->scratch_mem + (size_t)worker * jb->scratch_bytes, &sc);

    cpu_q_fused fz = {sc.qp8, sc.qsc8, 0};
    cpu_prep_q(p, b, h, i0, sc.x, sc.qp, sc.qsc, &fz);
    float m[L], l[L], alpha[L];
    /* docs/attention-inputs.md: row i sees keys j <= lim of the klen that exist */
    const int64_t klen = hd->len;
    int64_t lim[L], kend = 0;
    for (int r = 0; r < L; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
        const int64_t i = i0 + r;
        lim[r] = desc->causal == MXA_CAUSAL_BOTTOM_RIGHT ? i + klen - nq : desc->causal == MXA_CAUSAL_TOP_LEFT ? i : klen - 1;
        if (lim[r] > klen - 1) lim[r] = klen - 1;
        if (i < nq && lim[r] + 1 > kend) kend = lim[r] + 1;
    }
    const float *bias[L];
    const uint8_t *mask[L];
    for (int r = 0; r < L; r++) {
        const int64_t i = i0 + r < nq ? i0 + r : nq - 1; /* rows past nq are never output */
        bias[r] = side_row(&jb->bias, sizeof(float), p, b, h, i);
        mask[r] = side_row(&jb->mask, 1, p, b, h, i);
    }
    memset(sc.acc, 0, (size_t)d * L * sizeof(float));

    for (int64_t j0 = 0; j0 < kend; j0 += bc) {
        const int len = (int)(klen - j0 < bc ? klen - j0 : bc);
        const int nkeys = (len + 7) & ~7, blocks = (len + 31) / 32;
        if (fz.ok && hd->tile_ok[j0 / bc]) {
            const cpu_qk_fused_args fa = {sc.qp8, sc.qsc8, hd->k8 + j0 * d, hd->kcorr8 + j0, hd->ksc8 + j0,
                                          nkeys, (int)d, desc->scale, sc.s};
            kern->qk_fused(&fa);
        } else if (p->qk_int) {
            const cpu_qk_int_args qa = {sc.qp, sc.qsc, hd->k + j0 * d, hd->kcorr + j0 * dblk, hd->ksc + j0 * dblk,
                                        nkeys, (int)dblk, desc->scale, sc.s};
            kern->qk_int(&qa);
        } else {
            kern->qk_f32(sc.x, hd->kf + j0 * d, nkeys, (int)d, desc->scale, sc.s);
        }
        if (jb->bias.data || jb->mask.data) hide_and_bias(sc.s, len, j0, bias, mask);
        int32_t rel[L];
        for (int r = 0; r < L; r++) {
            const int64_t v = lim[r] - j0;
            rel[r] = v < -1 ? -1 : (v > bc ? (int32_t)bc : (int32_t)v);
        }
        int fused_p = 0;
        const int fp8_p = p->pv_fp8 && (desc->quantize & MXA_QUANT_P);
        float l_old[L];
        memcpy(l_old, l, sizeof l_old);
        const cpu_softmax_args sa = {sc.s, len, rel, m, l, alpha, (desc->quantize & MXA_QUANT_P) && !fp8_p,
                                     desc->placement == MXA_PLACEMENT_PNQ, !p->pv_int, p->rule, sc.pp, sc.psc,
                                     p->pv_fused && hd->vtile_ok[j0 / bc], sc.qsc8 + L, &fused_p};
        kern->softmax(&sa);
        if (fp8_p) cpu_fp8_quantize_p(sc.s, blocks, desc->placement == MXA_PLACEMENT_PNQ, l_old, alpha, l);
        if (fused_p) {
            const cpu_pv_fused_args fa = {sc.pp, sc.qsc8 + L, fused_p, hd->vt8 + j0 * d, bc, hd->vsc8 + j0 / bc,
                                          p->nk_pad / bc, blocks * CPU_WORDS, (int)d, alpha, sc.acc};
            kern->pv_fused(&fa);
        } else if (p->pv_int) {
            const cpu_pv_int_args pa = {sc.pp, sc.psc, hd->vt + j0, p->nk_pad, hd->vsc + j0 / 32, p->nk_pad / 32,
                                        blocks, (int)d, alpha, sc.acc};
            kern->pv_int(&pa);
        } else {
            kern->pv_f32(sc.s, hd->vf + j0 * d, len, (int)d, alpha, sc.acc);
        }
    }

    if (kern->end_item) kern->end_item();
    /* O = O~ / l: each column of 16 rows divided (vectorizes), then transposed into the output rows */
    const int rows = i0 + L < nq ? L : (int)(nq - i0);
    int empty[L]; /* rows that saw no key */
    float den[L];
    for (int r = 0; r < L; r++) {
        empty[r] = l[r] == 0.0f && m[r] == -INFINITY;
        den[r] = empty[r] ? 1.0f : l[r];
    }
    for (int64_t c = 0; c < d; c++)
        for (int r = 0; r < L; r++) sc.acc[c * L + r] /= den[r];
    kern->transpose(sc.acc, L, (int)d, (int)d, rows, jb->o + ((b * p->h + h) * nq + i0) * d, d);
    for (int r = 0; r < rows; r++) {
        const int64_t row = (b * p->h + h) * nq + i0 + r;
        if (empty[r]) {
            memset(jb->o + row * d, 0, (size_t)d * sizeof(float));
            if (jb->lse) jb->lse[row] = -INFINITY;
        } else if (jb->lse) {
            jb->lse[row] = m[r] + logf(l[r]);
        }
    }
}

/* A side array's host pointer (CPU buffers are host memory), or NULL when absent. */
static const void *side_host(const mxa_side_array *a)
{
    return a->host ? a->host : a->buffer ? (const char *)a->buffer + a->offset : NULL;
}

mxa_status cpu_attention_run(const cpu_kernels *kern, cpu_pool *pool, cpu_buf *arena, cpu_buf *scratch_buf,
                             const mxa_attention_call *call, const float *q, const float *k, const float *v, float *o,
                             float *lse)
{
    mxa_status st = MXA_OK;
    const mxa_attention_desc *desc = &call->desc;
    job jb;
    memset(&jb, 0, sizeof jb);
    cpu_prep *p = &jb.prep;
    p->kern = kern;
    p->desc = desc;
    p->rule = cpu_rule_of(desc->rule.kind, desc->rule.q);
    p->b = call->q.b;
    p->h = call->q.h;
    p->hkv = call->k.h;
    p->nq = call->q.n;
    p->nk = call->k.n;
    p->d = call->q.d;
    jb.bc = call->bc;
    p->nk_pad = (p->nk + call->bc - 1) / call->bc * call->bc;
    p->qk_int = (desc->quantize & MXA_QUANT_QK) != 0;
    p->k_rotated = call->kv.buffer != NULL;
    p->pv_fp8 = desc->pv_format == MXA_PV_MXFP8;
    p->pv_int = !p->pv_fp8 && (desc->quantize & MXA_QUANT_V) && (desc->quantize & MXA_QUANT_P);
    p->bc = call->bc;
    /* MXA_CPU_FUSED=0 keeps the per-block kernel (to test both) */
    const int fused_on = mxa_env_bool("MXA_CPU_FUSED", 1);
    p->pv_fused = fused_on && p->pv_int && kern->pv_fused && kern->quantize_fused && call->bc <= CPU_FUSED_MAX_BC;
    p->fused = p->qk_int && kern->qk_fused && kern->quantize_fused && fused_on;
    p->q = q;
    p->k = k;
    p->v = v;
    jb.o = o;
    jb.lse = lse;
    p->key_lengths = call->key_lengths;
    jb.bias = (side){side_host(&call->bias), call->bias.b, call->bias.h};
    jb.mask = (side){side_host(&call->mask), call->mask.b, call->mask.h};
    jb.qtiles = (p->nq + L - 1) / L;

    jb.scratch_bytes = scratch_layout(p->d, call->bc, NULL, NULL);
    jb.scratch_mem = cpu_buf_get(scratch_buf, jb.scratch_bytes * (size_t)cpu_pool_size(pool));
    if (!jb.scratch_mem) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "cpu attention: out of memory for scratch");
    p->arena = arena;
    if ((st = cpu_prep_kv(p, pool))) goto out;
    cpu_pool_run(pool, p->b * p->h * jb.qtiles, attention_task, &jb);
out:
    cpu_prep_free(p);
    return st;
}
