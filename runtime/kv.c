/*
 * Pre-quantized K and V (mxa_prepare_kv): K rotated and quantized along D, V quantized
 * along tokens (as V^T rows, zero-padded after each batch's key length), in
 * mxa_quantize's layout, kept in one buffer on the device:
 *   K codes [B*Hkv*Nk][D/32][16] | K scales [B*Hkv*Nk][D/32] | V codes [B*Hkv*D][Nk32/32][16] |
 *   V scales [B*Hkv*D][Nk32/32]        (Nk32 = Nk rounded up to 32; each part 256-aligned)
 * The codes are made on the host by runtime/mxfp4.c, the definition every device's
 * quantizer matches bit for bit; attention decodes them on the device. Re-quantizing a
 * decoded MXFP4 block with the same rule gives the same values, so attention on them is
 * bit-identical to attention on the float32 K and V.
 */
#include <stdlib.h>
#include <string.h>

#include "attention_check.h"
#include "hadamard.h"
#include "kv.h"
#include "mxfp4.h"
#include "runtime_internal.h"
#include "status.h"
#include "tensor.h"

static size_t align256(size_t x) { return (x + 255) / 256 * 256; }

/* The float32 rows of a tensor (host or device buffer), dense. */
static mxa_status dense_rows(const mxa_tensor *t, const char *name, float **out)
{
    const size_t n = (size_t)mxa_tensor_numel(t);
    *out = malloc(n * sizeof(float));
    if (!*out) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_prepare_kv: out of memory for %s", name);
    if (!t->buffer) {
        mxa_tensor_gather(t, *out);
        return MXA_OK;
    }
    if (t->dtype == MXA_F32) return mxa_buffer_download(t->buffer, t->offset, *out, n * sizeof(float));
    /* float16 or bfloat16: mxa_attention_check has refused MXA_BOOL */
    uint16_t *half = malloc(n * 2); /* 16-bit: downloaded, then widened exactly */
    mxa_status st = half ? mxa_buffer_download(t->buffer, t->offset, half, n * 2)
                         : mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_prepare_kv: out of memory for %s", name);
    if (!st) mxa_widen16(t->dtype, half, n, *out);
    free(half);
    return st;
}

mxa_status mxa_prepare_kv(mxa_device *dev, const mxa_attention_desc *desc, const mxa_tensor *k, const mxa_tensor *v,
                          mxa_kv **out)
{
    mxa_status st = mxa_device_check(dev, "mxa_prepare_kv");
    if (st) return st;
    if (!desc || !k || !v || !out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_prepare_kv: NULL argument");
    *out = NULL;
    if ((desc->quantize & (MXA_QUANT_QK | MXA_QUANT_V)) != (MXA_QUANT_QK | MXA_QUANT_V) || desc->format != MXA_FORMAT_MXFP4 ||
        desc->pv_format != MXA_PV_MXFP4)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "mxa_prepare_kv: pre-quantized K/V needs an MXFP4 recipe (MXFP4 P V) that quantizes Q/K and V");
    /* the shapes as attention checks them, with q standing in as k's own shape */
    mxa_tensor o = *k;
    mxa_attention_desc plain = *desc;
    plain.bias = plain.mask = NULL;
    plain.kv = NULL;
    mxa_attention_dims dm;
    if ((st = mxa_attention_check(&plain, k, k, v, &o, NULL, &dm))) return st;
    const int64_t b = dm.b, hkv = dm.h, nk = dm.nk, d = dm.d, nk32 = (nk + 31) / 32 * 32;
    const int64_t krows = b * hkv * nk, kblocks = d / MXA_BLOCK, vrows = b * hkv * d, vblocks = nk32 / MXA_BLOCK;
    mxa_kv *kv = calloc(1, sizeof *kv);
    float *kh = NULL, *vh = NULL, *col = malloc((size_t)nk32 * sizeof(float));
    uint8_t *host = NULL;
    if (!kv || !col) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_prepare_kv: out of memory");
        goto out;
    }
    kv->b = b, kv->hkv = hkv, kv->nk = nk, kv->d = d;
    kv->hadamard = desc->hadamard != 0;
    kv->rule = desc->rule;
    kv->off[0] = 0;
    kv->off[1] = align256(kv->off[0] + (size_t)(krows * kblocks * 16));
    kv->off[2] = align256(kv->off[1] + (size_t)(krows * kblocks));
    kv->off[3] = align256(kv->off[2] + (size_t)(vrows * vblocks * 16));
    kv->bytes = (kv->off[3] + (size_t)(vrows * vblocks) + 3) / 4 * 4; /* whole words: the devices read words */
    if (desc->key_lengths) {
        if (!(kv->key_lengths = malloc((size_t)b * sizeof(int32_t)))) {
            st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_prepare_kv: out of memory");
            goto out;
        }
        memcpy(kv->key_lengths, desc->key_lengths, (size_t)b * sizeof(int32_t));
    }
    if ((st = dense_rows(k, "k", &kh)) || (st = dense_rows(v, "v", &vh))) goto out;
    if (!desc->allow_non_finite && ((st = mxa_check_values(kh, krows * d, MXA_ATTENTION_INPUT_LIMIT, "k")) ||
                                    (st = mxa_check_values(vh, krows * d, MXA_ATTENTION_INPUT_LIMIT, "v"))))
        goto out;
    if (!(host = calloc(1, kv->bytes))) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_prepare_kv: out of memory (%zu bytes)", kv->bytes);
        goto out;
    }
    for (int64_t r = 0; r < krows; r++) {
        float *row = kh + r * d;
        if (kv->hadamard) mxa_hadamard(row, (int)d);
        mxa_quantize_row(row, d, desc->rule, host + kv->off[0] + r * kblocks * 16, host + kv->off[1] + r * kblocks);
    }
    for (int64_t head = 0; head < b * hkv; head++) {
        const int64_t len = kv->key_lengths ? kv->key_lengths[head / hkv] : nk; /* V stops at the batch's length */
        for (int64_t c = 0; c < d; c++) {
            for (int64_t t = 0; t < nk32; t++) col[t] = t < len ? vh[(head * nk + t) * d + c] : 0.0f;
            const int64_t r = head * d + c;
            mxa_quantize_row(col, nk32, desc->rule, host + kv->off[2] + r * vblocks * 16, host + kv->off[3] + r * vblocks);
        }
    }
    if ((st = mxa_buffer_create(dev, kv->bytes, &kv->buf)) || (st = mxa_buffer_upload(kv->buf, 0, host, kv->bytes))) goto out;
    kv->dev = dev;
    *out = kv;
    kv = NULL;
out:
    free(kh);
    free(vh);
    free(col);
    free(host);
    mxa_kv_destroy(kv);
    return st;
}

mxa_status mxa_kv_bytes(const mxa_kv *kv, size_t *bytes)
{
    if (!kv || !bytes) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_kv_bytes: NULL argument");
    *bytes = kv->bytes;
    return MXA_OK;
}

void mxa_kv_destroy(mxa_kv *kv)
{
    if (!kv) return;
    mxa_buffer_destroy(kv->buf);
    free(kv->key_lengths);
    free(kv);
}

mxa_status mxa_kv_attach(const mxa_device *dev, const mxa_attention_desc *desc, const mxa_tensor *k, const mxa_tensor *v,
                         mxa_tensor *kv_shape, mxa_kv_arrays *arrays)
{
    const mxa_kv *kv = desc->kv;
    memset(arrays, 0, sizeof *arrays);
    if (!kv) return MXA_OK;
    if (k || v) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: with desc->kv, k and v must be NULL");
    if (kv->dev != dev || !kv->buf || kv->buf->dev != dev)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: desc->kv was prepared on another device (or its device was closed)");
    if ((desc->hadamard != 0) != kv->hadamard || desc->rule.kind != kv->rule.kind ||
        (desc->rule.kind == MXA_RULE_CEIL && desc->rule.q != kv->rule.q) ||
        (desc->quantize & (MXA_QUANT_QK | MXA_QUANT_V)) != (MXA_QUANT_QK | MXA_QUANT_V) || desc->format != MXA_FORMAT_MXFP4)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT,
                        "attention: desc->kv was prepared with another rotation, rule or quantization than this desc");
    if (desc->key_lengths && (!kv->key_lengths || memcmp(desc->key_lengths, kv->key_lengths, (size_t)kv->b * sizeof(int32_t))))
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: desc->key_lengths differ from those desc->kv was prepared with");
    if (!desc->key_lengths && kv->key_lengths)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: desc->kv was prepared with key lengths; pass the same ones");
    mxa_tensor_init(kv_shape, MXA_F32, kv->b, kv->hkv, kv->nk, kv->d, NULL);
    kv_shape->data = NULL;
    kv_shape->buffer = kv->buf;
    arrays->buffer = kv->buf->handle;
    arrays->nk32 = (kv->nk + 31) / 32 * 32;
    for (int i = 0; i < 4; i++) arrays->offset[i] = kv->off[i];
    return MXA_OK;
}
