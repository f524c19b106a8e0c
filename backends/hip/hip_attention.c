/*
 * Attention on a HIP device, all on one stream: uploads of host inputs, rotate +
 * quantize Q, K (mxa_prep_qk) and V^T (mxa_prep_v) into the device's scratch, one
 * launch of the variant's attention kernel over every (batch, head).
 * A pre-quantized K/V (mxa_prepare_kv) is already in the prep's output layout, byte for
 * byte (K blocks [rows][D/32], V^T blocks [heads*D][Nk32/32], the same codes the prep
 * makes of the float32 K and V, zero-padded after the key lengths alike): the attention
 * kernel reads it in place, and only Q is prepared.
 *   mxa_attention:              mxa's stream, waited for, host outputs copied back;
 *   mxa_attention_async:        mxa's stream, host outputs copied back on completion;
 *   mxa_hip_attention_enqueue:  the application's stream, nothing waited for.
 * Program builds: with or without the extras' loads, one per output type (hip_kernels.c).
 * The scratch is reused by every call, so each call is ordered behind the previous
 * one's `done` event (on the device, not the host) before it touches it.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../runtime/hadamard.h"
#include "../../runtime/status.h"
#include "hip_device.h"

/* Byte offsets of one call's regions in the scratch (every region 256-byte aligned). */
typedef struct layout {
    size_t q, k, v, o;          /* host inputs uploaded, and o when it goes to the host */
    size_t qc, qs, kc, ks, vc, vs; /* quantized operands: codes, scales */
    size_t qf, kf, vf;          /* or their fp32 copies */
    size_t lse, bias, mask, lengths;
    size_t total;
} layout;

static size_t region(layout *l, size_t bytes)
{
    const size_t at = l->total;
    l->total += (bytes + 255) & ~(size_t)255;
    return at;
}

static size_t array_bytes(const mxa_array *a)
{
    return (size_t)(a->b * a->h * a->n * a->d) * sizeof(float);
}

/* Codes + scales when `quantized`, else an fp32 copy, of `blocks` 32-element blocks. */
static void operand(layout *l, int quantized, long long blocks, size_t *codes, size_t *scales, size_t *f32)
{
    if (quantized) {
        *codes = region(l, (size_t)blocks * 16);
        *scales = region(l, (size_t)blocks);
    } else {
        *f32 = region(l, (size_t)blocks * 32 * sizeof(float));
    }
}

static size_t side_bytes(const mxa_side_array *s, size_t esize)
{
    return s->host ? (size_t)(s->b * s->h * s->nq * s->nk) * esize : 0;
}

static layout plan(const mxa_attention_call *call)
{
    const mxa_attention_desc *desc = &call->desc;
    const long long b = call->q.b, h = call->q.h, hkv = call->k.h, nq = call->q.n, nk = call->k.n, d = call->q.d;
    const int qk = (desc->quantize & MXA_QUANT_QK) != 0, qv = (desc->quantize & MXA_QUANT_V) != 0;
    layout l;
    memset(&l, 0, sizeof l);
    l.q = region(&l, call->q.host ? array_bytes(&call->q) : 0);
    l.k = region(&l, call->k.host ? array_bytes(&call->k) : 0);
    l.v = region(&l, call->v.host ? array_bytes(&call->v) : 0);
    l.o = region(&l, call->o.host ? array_bytes(&call->o) : 0);
    operand(&l, qk, b * h * nq * (d / 32), &l.qc, &l.qs, &l.qf);
    if (!call->kv.buffer) {
        operand(&l, qk, b * hkv * nk * (d / 32), &l.kc, &l.ks, &l.kf);
        operand(&l, qv, b * hkv * d * ((nk + 31) / 32), &l.vc, &l.vs, &l.vf);
    }
    l.lse = region(&l, call->lse_buffer ? 0 : (size_t)(b * h * nq) * sizeof(float));
    l.bias = region(&l, side_bytes(&call->bias, sizeof(float)));
    l.mask = region(&l, side_bytes(&call->mask, 1));
    l.lengths = region(&l, call->key_lengths ? (size_t)b * sizeof(int32_t) : 0);
    return l;
}

/* Makes the scratch at least `bytes` long; the old one may still be read by the previous call. */
static mxa_status scratch_reserve(mxa_hip_device *dev, size_t bytes)
{
    if (bytes <= dev->scratch_bytes) return MXA_OK;
    if (dev->done_recorded) {
        hipError_t e = dev->api->hipEventSynchronize(dev->done);
        if (e != MXA_HIP_SUCCESS) return mxa_hip_fail(dev->api, e, "hipEventSynchronize (growing the scratch)");
    }
    mxa_hip_free(dev, dev->scratch);
    dev->scratch = NULL;
    dev->scratch_bytes = 0;
    mxa_status st = mxa_hip_alloc(dev, bytes, &dev->scratch);
    if (!st) dev->scratch_bytes = bytes;
    return st;
}

static unsigned long long addr(const void *p)
{
    return (unsigned long long)(uintptr_t)p;
}

/* Copies `bytes` of host `src` into the scratch on the stream. Pageable sources are
 * staged (or copied) before the call returns (HIP and CUDA alike), so a caller's
 * array, such as the key lengths of an enqueue, may go away after it. */
static mxa_status upload(mxa_hip_device *dev, hipStream_t stream, void *dst, const void *src, size_t bytes,
                         const char *what)
{
    if (!bytes) return MXA_OK;
    hipError_t e = dev->api->hipMemcpyHtoDAsync(dst, src, bytes, stream);
    if (e == MXA_HIP_SUCCESS) return MXA_OK;
    char call[96];
    snprintf(call, sizeof call, "hipMemcpyHtoDAsync (%s)", what);
    return mxa_hip_fail(dev->api, e, call);
}

/* An array's device address: its copy in the scratch, its buffer, or NULL (k, v of a prepared K/V). */
static char *array_at(const mxa_array *a, char *upload)
{
    if (a->host) return upload;
    return a->buffer ? mxa_hip_buffer_at(a->buffer, a->offset) : NULL;
}

/* A side array's device address (its buffer, or its upload in the scratch), or 0. */
static unsigned long long side_ptr(const mxa_side_array *s, char *scratch, size_t at)
{
    if (s->buffer) return addr(mxa_hip_buffer_at(s->buffer, s->offset));
    return s->host ? addr(scratch + at) : 0;
}

static mxa_status launch_all(mxa_hip_device *dev, hipStream_t stream, const mxa_attention_call *call,
                             const mxa_hip_choice *choice, const layout *l, mxa_hip_readback *rb)
{
    const mxa_attention_desc *desc = &call->desc;
    const long long b = call->q.b, h = call->q.h, hkv = call->k.h, nq = call->q.n, nk = call->k.n;
    const int d = (int)call->q.d, bc = call->bc, kblocks = (int)((nk + 31) / 32);
    const int qk = (desc->quantize & MXA_QUANT_QK) != 0, qv = (desc->quantize & MXA_QUANT_V) != 0;
    const int extras = call->bias.host || call->bias.buffer || call->mask.host || call->mask.buffer ||
                       call->key_lengths;
    const int out_type = call->o_dtype == MXA_F16    ? MXA_HIP_OUT_F16
                         : call->o_dtype == MXA_BF16 ? MXA_HIP_OUT_BF16
                                                     : MXA_HIP_OUT_F32;
    const mxa_hip_kernel *prep = NULL, *attn = NULL;
    char *const s = dev->scratch;
    mxa_status st = mxa_hip_prep_kernels(dev, &prep);
    if (st || (st = mxa_hip_attention_kernel(dev, d, bc, choice->variant, extras, out_type, &attn))) return st;

    char *q = array_at(&call->q, s + l->q), *k = array_at(&call->k, s + l->k), *v = array_at(&call->v, s + l->v);
    char *o = array_at(&call->o, s + l->o);
    /* the quantized K and V^T the attention reads: made by the prep below, or prepared */
    const mxa_kv_arrays *kv = &call->kv;
    char *kc = kv->buffer ? mxa_hip_buffer_at(kv->buffer, kv->offset[0]) : s + l->kc;
    char *ks = kv->buffer ? mxa_hip_buffer_at(kv->buffer, kv->offset[1]) : s + l->ks;
    char *vc = kv->buffer ? mxa_hip_buffer_at(kv->buffer, kv->offset[2]) : s + l->vc;
    char *vs = kv->buffer ? mxa_hip_buffer_at(kv->buffer, kv->offset[3]) : s + l->vs;
    char *lse = call->lse_buffer ? mxa_hip_buffer_at(call->lse_buffer, call->lse_offset) : s + l->lse;
    const void *lengths = call->key_lengths ? s + l->lengths : NULL;
    if ((call->q.host && (st = upload(dev, stream, q, call->q.host, array_bytes(&call->q), "q"))) ||
        (call->k.host && (st = upload(dev, stream, k, call->k.host, array_bytes(&call->k), "k"))) ||
        (call->v.host && (st = upload(dev, stream, v, call->v.host, array_bytes(&call->v), "v"))) ||
        (st = upload(dev, stream, s + l->bias, call->bias.host, side_bytes(&call->bias, sizeof(float)), "bias")) ||
        (st = upload(dev, stream, s + l->mask, call->mask.host, side_bytes(&call->mask, 1), "mask")) ||
        (lengths && (st = upload(dev, stream, s + l->lengths, call->key_lengths, (size_t)b * sizeof(int32_t),
                                 "key lengths"))))
        return st;

    /* SPEC §2 steps 1-2 (of Q only, on a prepared K/V). */
    const int ceil_rule = desc->rule.kind == MXA_RULE_CEIL;
    const float hnorm = mxa_hadamard_norm(d);
    mxa_hip_prep_args pq = {addr(q), addr(s + l->qc), addr(s + l->qs), addr(s + l->qf), 0, b * h * nq, d, (int)nk,
                            kblocks, desc->hadamard, qk, ceil_rule, desc->rule.q, hnorm, (int)hkv, 0};
    mxa_hip_prep_args pk = pq;
    pk.src = addr(k), pk.codes = addr(kc), pk.scales = addr(ks), pk.f32 = addr(s + l->kf);
    pk.rows = b * hkv * nk;
    mxa_hip_prep_args pv = {addr(v), addr(vc), addr(vs), addr(s + l->vf), addr(lengths), b * hkv, d,
                            (int)nk, kblocks, 0, qv, ceil_rule, desc->rule.q, hnorm, (int)hkv, 0};
    const long long v_items = b * hkv * d * kblocks;
    if ((st = mxa_hip_launch(dev, stream, prep->fn_b, "mxa_prep_qk", (unsigned)pq.rows, 1, 1, MXA_HIP_PREP_THREADS,
                             &pq)) ||
        (!kv->buffer &&
         ((st = mxa_hip_launch(dev, stream, prep->fn_b, "mxa_prep_qk", (unsigned)pk.rows, 1, 1, MXA_HIP_PREP_THREADS,
                               &pk)) ||
          (st = mxa_hip_launch(dev, stream, prep->fn_c, "mxa_prep_v",
                               (unsigned)((v_items + MXA_HIP_PREP_THREADS - 1) / MXA_HIP_PREP_THREADS), 1, 1,
                               MXA_HIP_PREP_THREADS, &pv)))))
        return st;

    /* SPEC §2 steps 3-5. */
    const int flags = (qk ? MXA_HIP_Q_QK : 0) | (qv ? MXA_HIP_Q_V : 0) | ((desc->quantize & MXA_QUANT_P) ? MXA_HIP_Q_P : 0) |
                      (desc->placement == MXA_PLACEMENT_PNQ ? MXA_HIP_PNQ : 0) |
                      (desc->causal == MXA_CAUSAL_BOTTOM_RIGHT ? MXA_HIP_CAUSAL : 0) |
                      (desc->causal == MXA_CAUSAL_TOP_LEFT ? MXA_HIP_CAUSAL_TOP_LEFT : 0);
    const mxa_side_array *bias = &call->bias, *mask = &call->mask;
    mxa_hip_attn_args aa = {addr(s + l->qc), addr(s + l->qs), addr(s + l->qf), addr(kc), addr(ks),
                            addr(s + l->kf), addr(vc), addr(vs), addr(s + l->vf), addr(o), addr(lse),
                            side_ptr(bias, s, l->bias), side_ptr(mask, s, l->mask), addr(lengths),
                            bias->b == 1 ? 0 : bias->h * nq * nk, bias->h == 1 ? 0 : nq * nk,
                            mask->b == 1 ? 0 : mask->h * nq * nk, mask->h == 1 ? 0 : nq * nk,
                            (int)b, (int)h, (int)hkv, (int)nq, (int)nk, kblocks, flags, ceil_rule, desc->rule.q,
                            desc->scale};
    const unsigned gx = choice->variant == MXA_HIP_SCALAR ? (unsigned)nq : (unsigned)((nq + 31) / 32);
    hipError_t e = dev->api->hipEventRecord(dev->start, stream);
    if (e != MXA_HIP_SUCCESS) return mxa_hip_fail(dev->api, e, "hipEventRecord");
    if ((st = mxa_hip_launch(dev, stream, attn->fn_a, "mxa_attention", gx, (unsigned)h, (unsigned)b,
                             choice->variant == MXA_HIP_SCALAR ? MXA_HIP_SCALAR_THREADS : MXA_HIP_MFMA_THREADS, &aa)))
        return st;
    memset(rb, 0, sizeof *rb);
    if (call->o.host) rb->o_host = call->o.host, rb->o_dev = o, rb->o_bytes = array_bytes(&call->o);
    if (call->lse) rb->lse_host = call->lse, rb->lse_dev = lse, rb->lse_bytes = (size_t)(b * h * nq) * sizeof(float);
    return MXA_OK;
}

mxa_status mxa_hip_attention_enqueue_call(mxa_hip_device *dev, const mxa_attention_call *call, hipStream_t stream,
                                          mxa_hip_readback *readback, const char **variant)
{
    const mxa_attention_desc *desc = &call->desc;
    const long long b = call->q.b, h = call->q.h, hkv = call->k.h, nq = call->q.n, nk = call->k.n;
    mxa_hip_choice choice;
    if (desc->format != MXA_FORMAT_MXFP4)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "hip: only MXFP4 attention runs on HIP devices (NVFP4 runs on the CPU)");
    if (call->bc > MXA_HIP_SCALAR_MAX_BC)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "hip: bc = %d is above %d", call->bc, MXA_HIP_SCALAR_MAX_BC);
    if (b * h * nq > 0x7fffffffLL || b * hkv * nk > 0x7fffffffLL || b > 65535 || h > 65535)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "hip: the problem is larger than one launch grid covers");
    mxa_hip_choose_for_call(&dev->choice, desc, call->bc, &choice);
    const layout l = plan(call);
    mxa_status st = scratch_reserve(dev, l.total);
    if (st) return st;
    hipError_t e = MXA_HIP_SUCCESS;
    if (dev->done_recorded && dev->done_stream != stream && (e = dev->api->hipStreamWaitEvent(stream, dev->done, 0)))
        return mxa_hip_fail(dev->api, e, "hipStreamWaitEvent (ordering the call behind the previous one)");
    st = launch_all(dev, stream, call, &choice, &l, readback);
    /* Even after a failed launch, `done` must cover whatever this call put on the stream. */
    if ((e = dev->api->hipEventRecord(dev->done, stream)) == MXA_HIP_SUCCESS) {
        dev->done_recorded = 1;
        dev->done_stream = stream;
    } else if (!st) {
        st = mxa_hip_fail(dev->api, e, "hipEventRecord");
    }
    if (!st) *variant = mxa_hip_variant_name(choice.variant);
    return st;
}

/* Waits for the latest call and copies its host outputs back; fills info. */
static mxa_status finish(mxa_hip_device *dev, const mxa_hip_readback *rb, mxa_attention_info *info)
{
    const mxa_hip_api *api = dev->api;
    hipError_t e = api->hipEventSynchronize(dev->done);
    if (e != MXA_HIP_SUCCESS) return mxa_hip_fail(api, e, "hipEventSynchronize (attention)");
    float ms = 0.0f;
    info->kernel_seconds = api->hipEventElapsedTime(&ms, dev->start, dev->done) == MXA_HIP_SUCCESS ? 1e-3 * ms : -1.0;
    if (rb->o_bytes && (e = api->hipMemcpyDtoH(rb->o_host, rb->o_dev, rb->o_bytes)) != MXA_HIP_SUCCESS)
        return mxa_hip_fail(api, e, "hipMemcpyDtoH (output)");
    if (rb->lse_bytes && (e = api->hipMemcpyDtoH(rb->lse_host, rb->lse_dev, rb->lse_bytes)) != MXA_HIP_SUCCESS)
        return mxa_hip_fail(api, e, "hipMemcpyDtoH (lse)");
    return MXA_OK;
}

void mxa_hip_complete_pending(mxa_hip_device *dev)
{
    mxa_pending *p = dev->pending;
    if (!p) return;
    dev->pending = NULL;
    p->status = finish(dev, &dev->readback, &p->info);
    if (p->status) snprintf(p->message, sizeof p->message, "%s", mxa_last_error_message());
    else snprintf(p->info.variant, sizeof p->info.variant, "%s", dev->pending_variant);
    p->done = 1;
    mxa_clear_error();
}

mxa_status mxa_hip_attention(void *impl, const mxa_attention_call *call, mxa_attention_info *info)
{
    mxa_hip_device *dev = impl;
    mxa_hip_readback rb;
    const char *variant = NULL;
    int previous;
    mxa_status st = mxa_hip_enter(dev, &previous);
    if (st) return st;
    mxa_hip_complete_pending(dev);
    if (!(st = mxa_hip_attention_enqueue_call(dev, call, dev->stream, &rb, &variant)) &&
        !(st = finish(dev, &rb, info)))
        snprintf(info->variant, sizeof info->variant, "%s", variant);
    mxa_hip_leave(dev, previous);
    return st;
}

mxa_status mxa_hip_attention_submit(void *impl, const mxa_attention_call *call, mxa_pending *pending)
{
    mxa_hip_device *dev = impl;
    const char *variant = NULL;
    int previous;
    mxa_status st = mxa_hip_enter(dev, &previous);
    if (st) return st;
    mxa_hip_complete_pending(dev);
    if (!(st = mxa_hip_attention_enqueue_call(dev, call, dev->stream, &dev->readback, &variant))) {
        snprintf(dev->pending_variant, sizeof dev->pending_variant, "%s", variant);
        dev->pending = pending;
    }
    mxa_hip_leave(dev, previous);
    return st;
}

void mxa_hip_attention_wait(void *impl, mxa_pending *pending)
{
    mxa_hip_device *dev = impl;
    int previous;
    if (dev->pending != pending) return; /* completed already, by a later operation */
    const mxa_status st = mxa_hip_enter(dev, &previous);
    if (st) {
        pending->status = st;
        snprintf(pending->message, sizeof pending->message, "%s", mxa_last_error_message());
        pending->done = 1;
        dev->pending = NULL;
        return;
    }
    mxa_hip_complete_pending(dev);
    mxa_hip_leave(dev, previous);
}
