/* Validation of an attention call: one clear message for each mistake. */
#include <math.h>

#include "attention_check.h"
#include "hadamard.h"
#include "mxfp4.h"
#include "status.h"
#include "tensor.h"

mxa_status mxa_bc_check(int bc)
{
    if (bc <= 0 || bc % MXA_BLOCK != 0 || bc > 4096)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "key-tile size bc=%d must be a positive multiple of 32, at most 4096", bc);
    return MXA_OK;
}

/* A bias (float) or mask (bool) must be [B|1, H|1, Nq, Nk]. */
static mxa_status side_check(const mxa_tensor *t, const char *name, int64_t b, int64_t h, int64_t nq, int64_t nk)
{
    if (!t) return MXA_OK;
    mxa_status st = mxa_tensor_check(t, name);
    if (st) return st;
    const int is_mask = name[0] == 'm';
    if (is_mask ? t->dtype != MXA_BOOL : t->dtype == MXA_BOOL)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: %s must be %s", name,
                        is_mask ? "MXA_BOOL (one byte per element, 0 = hidden)" : "float (f32, f16 or bf16)");
    if ((t->shape[0] != 1 && t->shape[0] != b) || (t->shape[1] != 1 && t->shape[1] != h) || t->shape[2] != nq ||
        t->shape[3] != nk)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: %s is [%lld, %lld, %lld, %lld]; it must be [%lld or 1, %lld or 1, %lld, %lld]",
                        name, (long long)t->shape[0], (long long)t->shape[1], (long long)t->shape[2],
                        (long long)t->shape[3], (long long)b, (long long)h, (long long)nq, (long long)nk);
    return MXA_OK;
}

mxa_status mxa_attention_check(const mxa_attention_desc *desc, const mxa_tensor *q,
                               const mxa_tensor *k, const mxa_tensor *v, const mxa_tensor *o,
                               const mxa_tensor *lse, mxa_attention_dims *dims)
{
    mxa_status st;
    if (!desc) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: desc is NULL");
    if ((st = mxa_tensor_check(q, "q")) || (st = mxa_tensor_check(k, "k")) ||
        (st = mxa_tensor_check(v, "v")) || (st = mxa_tensor_check(o, "out")))
        return st;
    if (q->dtype == MXA_BOOL || k->dtype == MXA_BOOL || v->dtype == MXA_BOOL || o->dtype == MXA_BOOL)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: q, k, v and out must be float tensors (MXA_BOOL is for masks)");
    if (desc->quantize & ~(uint32_t)MXA_QUANT_ALL)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: unknown quantize bits 0x%x", (unsigned)desc->quantize);
    if (desc->quantize && !mxa_rule_valid(desc->rule))
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: invalid scale rule (kind %d, q=%g; q must be in [6, 8])",
                        (int)desc->rule.kind, (double)desc->rule.q);
    if (desc->placement != MXA_PLACEMENT_PNQ && desc->placement != MXA_PLACEMENT_DIRECT)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: unknown placement %d", (int)desc->placement);
    if (!(desc->scale >= 0.0f) || !isfinite(desc->scale))
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: scale %g must be finite and > 0 (0 = 1/sqrt(D))",
                        (double)desc->scale);
    if (desc->bc != 0 && (st = mxa_bc_check(desc->bc))) return st;
    if (desc->format != MXA_FORMAT_MXFP4 && desc->format != MXA_FORMAT_NVFP4)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: unknown format %d", (int)desc->format);
    if (desc->causal < MXA_CAUSAL_NONE || desc->causal > MXA_CAUSAL_TOP_LEFT)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: causal is %d (expected 0 none, 1 bottom-right, 2 top-left)",
                        desc->causal);
    if (desc->pv_format != MXA_PV_MXFP4 && desc->pv_format != MXA_PV_MXFP8)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: unknown pv_format %d (expected 0 MXFP4, 1 MXFP8)",
                        (int)desc->pv_format);
    if (desc->pv_format == MXA_PV_MXFP8 && desc->format != MXA_FORMAT_MXFP4)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: an MXFP8 P V goes with the MXFP4 format only (not NVFP4)");
    if (desc->pv_format == MXA_PV_MXFP8 && desc->kv)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "attention: a pre-quantized K/V holds an MXFP4 V; an MXFP8 P V takes k and v");
    if (desc->smooth && desc->format != MXA_FORMAT_NVFP4)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: smoothing applies to the NVFP4 baseline only");

    const int64_t b = q->shape[0], h = q->shape[1], nq = q->shape[2], d = q->shape[3];
    const int64_t hkv = k->shape[1], nk = k->shape[2];
    if (k->shape[0] != b || v->shape[0] != b)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: batch sizes differ (q %lld, k %lld, v %lld)",
                        (long long)b, (long long)k->shape[0], (long long)v->shape[0]);
    if (k->shape[3] != d || v->shape[3] != d)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: head sizes differ (q %lld, k %lld, v %lld)",
                        (long long)d, (long long)k->shape[3], (long long)v->shape[3]);
    if (v->shape[1] != hkv || v->shape[2] != nk)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: k [%lld heads, %lld tokens] and v [%lld, %lld] differ",
                        (long long)hkv, (long long)nk, (long long)v->shape[1], (long long)v->shape[2]);
    if (h % hkv != 0)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: kv heads (%lld) must divide query heads (%lld)",
                        (long long)hkv, (long long)h);
    if (o->shape[0] != b || o->shape[1] != h || o->shape[2] != nq || o->shape[3] != d)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: out must be [%lld, %lld, %lld, %lld]",
                        (long long)b, (long long)h, (long long)nq, (long long)d);
    if (d % MXA_BLOCK != 0)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "attention: head size D=%lld is not a multiple of 32", (long long)d);
    if (desc->hadamard && !mxa_hadamard_supported((int)d))
        return mxa_fail(MXA_ERR_UNSUPPORTED,
                        "attention: the Hadamard rotation needs D in {32, 64, 128, 256}, got D=%lld", (long long)d);
    if (d > 256)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "attention: head size D=%lld is above 256", (long long)d);
    if (lse) {
        if ((st = mxa_tensor_check(lse, "lse"))) return st;
        if (lse->dtype != MXA_F32 || lse->shape[0] != b || lse->shape[1] != h || lse->shape[2] != nq ||
            lse->shape[3] != 1)
            return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: lse must be float32 [%lld, %lld, %lld, 1]",
                            (long long)b, (long long)h, (long long)nq);
    }
    if ((st = side_check(desc->bias, "bias", b, h, nq, nk)) || (st = side_check(desc->mask, "mask", b, h, nq, nk)))
        return st;
    if (desc->key_lengths)
        for (int64_t i = 0; i < b; i++)
            if (desc->key_lengths[i] < 0 || desc->key_lengths[i] > nk)
                return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: key_lengths[%lld] = %d is outside [0, Nk = %lld]",
                                (long long)i, (int)desc->key_lengths[i], (long long)nk);
    dims->b = b; dims->h = h; dims->hkv = hkv; dims->nq = nq; dims->nk = nk; dims->d = d;
    dims->scale = desc->scale > 0.0f ? desc->scale : (float)(1.0 / sqrt((double)d));
    return MXA_OK;
}
