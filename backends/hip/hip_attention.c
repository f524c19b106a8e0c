/*
 * mxa_attention on a HIP device: rotate + quantize Q, K (mxa_prep_qk) and V^T
 * (mxa_prep_v) into scratch buffers, then one launch of the variant's
 * attention kernel over every (batch, head), then copy O and LSE back.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../runtime/hadamard.h"
#include "../../runtime/status.h"
#include "hip_device.h"

/* Device memory of one call; every pointer is freed at the end. */
typedef struct scratch {
    void *owned[4]; /* uploaded q, k, v, and o when the output is on the host */
    void *qc, *qs, *qf, *kc, *ks, *kf, *vc, *vs, *vf, *lse;
} scratch;

static void scratch_free(mxa_hip_device *dev, scratch *s)
{
    void *all[] = {s->owned[0], s->owned[1], s->owned[2], s->owned[3], s->qc, s->qs, s->qf,
                   s->kc,       s->ks,       s->kf,       s->vc,       s->vs, s->vf, s->lse};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mxa_hip_free(dev, all[i]);
}

static unsigned long long addr(const void *p)
{
    return (unsigned long long)(uintptr_t)p;
}

/* Codes + scales when `quantized`, else an fp32 copy: `elems` values in `rows`-many 32-blocks. */
static mxa_status alloc_operand(mxa_hip_device *dev, int quantized, long long blocks, void **codes, void **scales,
                                void **f32)
{
    mxa_status st;
    if (!quantized) return mxa_hip_alloc(dev, (size_t)blocks * 32 * sizeof(float), f32);
    if ((st = mxa_hip_alloc(dev, (size_t)blocks * 16, codes))) return st;
    return mxa_hip_alloc(dev, (size_t)blocks, scales);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

mxa_status mxa_hip_attention(void *impl, const mxa_attention_call *call, mxa_attention_info *info)
{
    mxa_hip_device *dev = impl;
    const mxa_attention_desc *desc = &call->desc;
    const long long b = call->q.b, h = call->q.h, hkv = call->k.h, nq = call->q.n, nk = call->k.n;
    const int d = (int)call->q.d, bc = call->bc;
    const int kblocks = (int)((nk + 31) / 32);
    const int qk = (desc->quantize & MXA_QUANT_QK) != 0, qv = (desc->quantize & MXA_QUANT_V) != 0;
    const mxa_hip_kernel *prep = NULL, *attn = NULL;
    mxa_hip_choice choice;
    scratch s;
    void *q = NULL, *k = NULL, *v = NULL, *o = NULL;
    memset(&s, 0, sizeof s);

    if (desc->format != MXA_FORMAT_MXFP4)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "hip: only MXFP4 attention runs on HIP devices (NVFP4 runs on the CPU)");
    mxa_hip_choose_for_call(&dev->choice, desc, bc, &choice);
    if (bc > MXA_HIP_SCALAR_MAX_BC)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "hip: bc = %d is above %d", bc, MXA_HIP_SCALAR_MAX_BC);
    if (b * h * nq > 0x7fffffffLL || b * hkv * nk > 0x7fffffffLL || b > 65535 || h > 65535)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "hip: the problem is larger than one launch grid covers");
    hipError_t e = dev->api->hipSetDevice(dev->ordinal);
    if (e != MXA_HIP_SUCCESS) return mxa_hip_fail(dev->api, e, "hipSetDevice");

    mxa_status st = mxa_hip_prep_kernels(dev, &prep);
    if (st || (st = mxa_hip_attention_kernel(dev, d, bc, choice.variant, &attn))) return st;
    if ((st = mxa_hip_array_ptr(dev, &call->q, &q, &s.owned[0])) ||
        (st = mxa_hip_array_ptr(dev, &call->k, &k, &s.owned[1])) ||
        (st = mxa_hip_array_ptr(dev, &call->v, &v, &s.owned[2])))
        goto out;
    if (call->o.host) {
        if ((st = mxa_hip_alloc(dev, (size_t)(b * h * nq * d) * sizeof(float), &s.owned[3]))) goto out;
        o = s.owned[3];
    } else {
        o = (char *)call->o.buffer + call->o.offset;
    }
    if ((st = alloc_operand(dev, qk, b * h * nq * (d / 32), &s.qc, &s.qs, &s.qf)) ||
        (st = alloc_operand(dev, qk, b * hkv * nk * (d / 32), &s.kc, &s.ks, &s.kf)) ||
        (st = alloc_operand(dev, qv, b * hkv * d * kblocks, &s.vc, &s.vs, &s.vf)) ||
        (st = mxa_hip_alloc(dev, (size_t)(b * h * nq) * sizeof(float), &s.lse)))
        goto out;

    /* SPEC §2 steps 1-2. */
    const int ceil_rule = desc->rule.kind == MXA_RULE_CEIL;
    const float hnorm = mxa_hadamard_norm(d);
    mxa_hip_prep_args pq = {addr(q), addr(s.qc), addr(s.qs), addr(s.qf), b * h * nq, d, (int)nk, kblocks,
                            desc->hadamard, qk, ceil_rule, desc->rule.q, hnorm};
    mxa_hip_prep_args pk = pq;
    pk.src = addr(k), pk.codes = addr(s.kc), pk.scales = addr(s.ks), pk.f32 = addr(s.kf), pk.rows = b * hkv * nk;
    mxa_hip_prep_args pv = {addr(v), addr(s.vc), addr(s.vs), addr(s.vf), b * hkv, d, (int)nk, kblocks,
                            0, qv, ceil_rule, desc->rule.q, hnorm};
    const long long v_items = b * hkv * d * kblocks;
    if ((st = mxa_hip_launch(dev, prep->fn_b, "mxa_prep_qk", (unsigned)pq.rows, 1, 1, MXA_HIP_PREP_THREADS, &pq)) ||
        (st = mxa_hip_launch(dev, prep->fn_b, "mxa_prep_qk", (unsigned)pk.rows, 1, 1, MXA_HIP_PREP_THREADS, &pk)) ||
        (st = mxa_hip_launch(dev, prep->fn_c, "mxa_prep_v",
                             (unsigned)((v_items + MXA_HIP_PREP_THREADS - 1) / MXA_HIP_PREP_THREADS), 1, 1,
                             MXA_HIP_PREP_THREADS, &pv)))
        goto out;

    /* SPEC §2 steps 3-5. */
    int flags = (qk ? MXA_HIP_Q_QK : 0) | (qv ? MXA_HIP_Q_V : 0) | (desc->causal ? MXA_HIP_CAUSAL : 0) |
                ((desc->quantize & MXA_QUANT_P) ? MXA_HIP_Q_P : 0) |
                (desc->placement == MXA_PLACEMENT_PNQ ? MXA_HIP_PNQ : 0);
    mxa_hip_attn_args aa = {addr(s.qc), addr(s.qs), addr(s.qf), addr(s.kc), addr(s.ks), addr(s.kf),
                            addr(s.vc), addr(s.vs), addr(s.vf), addr(o),    addr(s.lse),
                            (int)b,     (int)h,     (int)hkv,   (int)nq,    (int)nk,    kblocks,
                            flags,      ceil_rule,  desc->rule.q, desc->scale};
    const unsigned gx = choice.variant == MXA_HIP_SCALAR ? (unsigned)nq : (unsigned)((nq + 31) / 32);
    const double t0 = now_seconds();
    if ((st = mxa_hip_launch(dev, attn->fn_a, "mxa_attention", gx, (unsigned)h, (unsigned)b,
                             choice.variant == MXA_HIP_SCALAR ? MXA_HIP_SCALAR_THREADS : MXA_HIP_MFMA_THREADS, &aa)))
        goto out;
    if ((e = dev->api->hipDeviceSynchronize()) != MXA_HIP_SUCCESS) {
        st = mxa_hip_fail(dev->api, e, "hipDeviceSynchronize (attention kernel)");
        goto out;
    }
    info->kernel_seconds = now_seconds() - t0; /* host wall time around the kernel */
    if (call->o.host && (e = dev->api->hipMemcpyDtoH(call->o.host, o, (size_t)(b * h * nq * d) * sizeof(float))))
        st = mxa_hip_fail(dev->api, e, "hipMemcpyDtoH (output)");
    else if (call->lse && (e = dev->api->hipMemcpyDtoH(call->lse, s.lse, (size_t)(b * h * nq) * sizeof(float))))
        st = mxa_hip_fail(dev->api, e, "hipMemcpyDtoH (lse)");
    if (!st) snprintf(info->variant, sizeof info->variant, "%s", choice.name);
out:
    scratch_free(dev, &s);
    return st;
}
