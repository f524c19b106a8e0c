/*
 * The public compute entry points: validate, normalise tensors to dense
 * float32, dispatch to the device's backend under its lock, write outputs
 * only on success.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_check.h"
#include "handles.h"
#include "kv.h"
#include "log.h"
#include "mxfp4.h"
#include "reference.h"
#include "runtime_internal.h"
#include "status.h"
#include "tensor.h"

/* ---------------------------------------------------------------- buffers */

mxa_status mxa_buffer_create(mxa_device *dev, size_t bytes, mxa_buffer **out)
{
    mxa_status st = mxa_device_check(dev, "mxa_buffer_create");
    if (st) return st;
    if (!out) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_buffer_create: NULL argument");
    *out = NULL;
    if (bytes == 0) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_buffer_create: size is 0");
    void *handle = NULL;
    pthread_mutex_lock(&dev->lock);
    st = dev->ops->buffer_create(dev->impl, bytes, &handle);
    pthread_mutex_unlock(&dev->lock);
    return st ? st : mxa_buffer_adopt(dev, handle, bytes, out);
}

mxa_status mxa_buffer_adopt(mxa_device *dev, void *handle, size_t bytes, mxa_buffer **out)
{
    *out = NULL;
    mxa_buffer *buf = calloc(1, sizeof *buf);
    mxa_handles_lock();
    /* the device was checked by the caller; closing it meanwhile is a caller's race, and then the handle leaks */
    const int live = mxa_handle_live_locked(dev, MXA_HANDLE_DEVICE);
    if (live && buf && mxa_handle_add_locked(buf, MXA_HANDLE_BUFFER) == 0) {
        buf->handle = handle;
        buf->bytes = bytes;
        buf->dev = dev;
        buf->next = dev->buffers;
        if (dev->buffers) dev->buffers->prev = buf;
        dev->buffers = buf;
        *out = buf;
    } else if (live) {
        pthread_mutex_lock(&dev->lock);
        dev->ops->buffer_destroy(dev->impl, handle);
        pthread_mutex_unlock(&dev->lock);
    }
    mxa_handles_unlock();
    if (*out) return MXA_OK;
    free(buf);
    return live ? mxa_fail(MXA_ERR_OUT_OF_MEMORY, "buffer: out of memory")
                : mxa_fail(MXA_ERR_INVALID_ARGUMENT, "buffer: the device was closed meanwhile");
}

void mxa_buffer_destroy(mxa_buffer *buf)
{
    if (!buf) return;
    mxa_handles_lock();
    if (!mxa_handle_remove_locked(buf, MXA_HANDLE_BUFFER)) {
        mxa_handles_unlock();
        MXA_LOG_W("mxa_buffer_destroy: not a live buffer (destroyed twice?); nothing done");
        return;
    }
    mxa_device *dev = buf->dev;
    if (dev) { /* else its device was closed and freed the memory already */
        if (buf->prev) buf->prev->next = buf->next;
        else dev->buffers = buf->next;
        if (buf->next) buf->next->prev = buf->prev;
        pthread_mutex_lock(&dev->lock);
        dev->ops->buffer_destroy(dev->impl, buf->handle);
        pthread_mutex_unlock(&dev->lock);
    }
    mxa_handles_unlock();
    free(buf);
}

/* The device of a live buffer whose device is open, or NULL after one error line. */
static mxa_device *buffer_device(const mxa_buffer *buf, const char *fn)
{
    mxa_handles_lock();
    const int live = mxa_handle_live_locked(buf, MXA_HANDLE_BUFFER);
    mxa_device *dev = live ? buf->dev : NULL;
    mxa_handles_unlock();
    if (!live) mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: not a live buffer (destroyed already?)", fn);
    else if (!dev) mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: the buffer's device was closed", fn);
    return dev;
}

static mxa_status check_range(const mxa_buffer *buf, size_t offset, const void *host, size_t bytes,
                              const char *fn)
{
    if (!buf || !host) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    if (offset > buf->bytes || bytes > buf->bytes - offset)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: %zu bytes at offset %zu do not fit the %zu-byte buffer", fn, bytes,
                        offset, buf->bytes);
    return MXA_OK;
}

mxa_status mxa_buffer_upload(mxa_buffer *buf, size_t offset, const void *src, size_t bytes)
{
    if (!buf) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_buffer_upload: NULL argument");
    mxa_device *dev = buffer_device(buf, "mxa_buffer_upload");
    if (!dev) return MXA_ERR_INVALID_ARGUMENT;
    mxa_status st = check_range(buf, offset, src, bytes, "mxa_buffer_upload");
    if (st || bytes == 0) return st;
    pthread_mutex_lock(&dev->lock);
    st = dev->ops->buffer_upload(dev->impl, buf->handle, offset, src, bytes);
    pthread_mutex_unlock(&dev->lock);
    return st;
}

mxa_status mxa_buffer_download(const mxa_buffer *buf, size_t offset, void *dst, size_t bytes)
{
    if (!buf) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_buffer_download: NULL argument");
    mxa_device *dev = buffer_device(buf, "mxa_buffer_download");
    if (!dev) return MXA_ERR_INVALID_ARGUMENT;
    mxa_status st = check_range(buf, offset, dst, bytes, "mxa_buffer_download");
    if (st || bytes == 0) return st;
    pthread_mutex_lock(&dev->lock);
    st = dev->ops->buffer_download(dev->impl, buf->handle, offset, dst, bytes);
    pthread_mutex_unlock(&dev->lock);
    return st;
}

/* ------------------------------------------------------------- arguments */

/* An input as a backend array: the device buffer itself, the caller's dense
 * f32 memory, or a converted copy (owned, freed by arg_free). */
typedef struct arg {
    mxa_array array;
    float *owned;
} arg;

static void arg_free(arg *a)
{
    free(a->owned);
    a->owned = NULL;
}

#define DT(dtype) (1u << (dtype))

/* "float32", "float32, float16 or bfloat16", "bool": the dtypes of a DT() mask. */
static void dtypes_text(unsigned dtypes, char *out, size_t size)
{
    static const char *const names[] = {[MXA_F32] = "float32", [MXA_F16] = "float16", [MXA_BF16] = "bfloat16", [MXA_BOOL] = "bool"};
    int left = 0;
    for (unsigned m = dtypes; m; m &= m - 1) left++;
    size_t len = 0;
    out[0] = 0;
    for (unsigned i = 0; i < sizeof names / sizeof names[0] && len < size; i++)
        if (dtypes & (1u << i)) {
            left--;
            len += (size_t)snprintf(out + len, size - len, "%s%s", names[i], left > 1 ? ", " : left == 1 ? " or " : "");
        }
}

/* A device-buffer tensor: on this device, of one of the `dtypes` (a DT() mask), aligned to
 * its element size, inside its buffer. */
static mxa_status check_device_tensor(const mxa_device *dev, const mxa_tensor *t, const char *name, unsigned dtypes)
{
    const size_t esize = mxa_dtype_size(t->dtype), bytes = (size_t)mxa_tensor_numel(t) * esize;
    const mxa_device *owner = buffer_device(t->buffer, name);
    if (!owner) return MXA_ERR_INVALID_ARGUMENT;
    if (owner != dev) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: the buffer belongs to another device", name);
    if (!(dtypes & DT(t->dtype))) {
        char want[64];
        dtypes_text(dtypes, want, sizeof want);
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: device-buffer tensors here must be %s", name, want);
    }
    if (t->offset % esize)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: offset %zu is not a multiple of %zu (its element size)", name,
                        t->offset, esize);
    if (t->offset > t->buffer->bytes || bytes > t->buffer->bytes - t->offset)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: %zu bytes at offset %zu do not fit its %zu-byte buffer", name,
                        bytes, t->offset, t->buffer->bytes);
    return MXA_OK;
}

/* An input: a host tensor as dense float32 (converted if need be), or a device-buffer tensor
 * as it is, of one of `buffer_dtypes` (a DT() mask). */
static mxa_status arg_input(mxa_device *dev, const mxa_tensor *t, const char *name, int check_values, unsigned buffer_dtypes,
                            arg *a)
{
    memset(a, 0, sizeof *a);
    a->array.b = t->shape[0]; a->array.h = t->shape[1]; a->array.n = t->shape[2]; a->array.d = t->shape[3];
    int64_t n = mxa_tensor_numel(t);
    if (t->buffer) {
        mxa_status st = check_device_tensor(dev, t, name, buffer_dtypes);
        if (st) return st;
        a->array.buffer = t->buffer->handle;
        a->array.offset = t->offset;
        a->array.dtype = t->dtype;
        return MXA_OK;
    }
    if (mxa_tensor_is_dense_f32(t)) {
        a->array.host = t->data;
    } else {
        a->owned = malloc((size_t)n * sizeof(float));
        if (!a->owned) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "%s: out of memory converting to float32", name);
        mxa_tensor_gather(t, a->owned);
        a->array.host = a->owned;
    }
    if (check_values) {
        mxa_status st = mxa_check_values(a->array.host, n, MXA_ATTENTION_INPUT_LIMIT, name);
        if (st) arg_free(a);
        return st;
    }
    return MXA_OK;
}

/* ------------------------------------------------------------- quantize */

mxa_status mxa_quantize(mxa_device *dev, const mxa_tensor *x, mxa_rule rule, uint8_t *codes, uint8_t *scales)
{
    mxa_status st = mxa_device_check(dev, "mxa_quantize");
    if (st) return st;
    if (!codes || !scales) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_quantize: NULL argument");
    if ((st = mxa_tensor_check(x, "x"))) return st;
    if (!mxa_rule_valid(rule))
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_quantize: invalid rule (q must be in [6, 8])");
    arg a;
    if ((st = arg_input(dev, x, "x", 0, DT(MXA_F32), &a))) return st;
    int64_t rows = a.array.b * a.array.h * a.array.n, nblocks = (a.array.d + MXA_BLOCK - 1) / MXA_BLOCK;
    uint8_t *tmp = malloc((size_t)(rows * nblocks * 17));
    if (!tmp) {
        arg_free(&a);
        return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_quantize: out of memory");
    }
    pthread_mutex_lock(&dev->lock);
    st = dev->ops->quantize(dev->impl, &a.array, rule, tmp, tmp + rows * nblocks * 16);
    pthread_mutex_unlock(&dev->lock);
    if (!st) {
        memcpy(codes, tmp, (size_t)(rows * nblocks * 16));
        memcpy(scales, tmp + rows * nblocks * 16, (size_t)(rows * nblocks));
    }
    free(tmp);
    arg_free(&a);
    return st;
}

mxa_status mxa_quantize_mxfp8(mxa_device *dev, const mxa_tensor *x, uint8_t *codes, uint8_t *scales)
{
    mxa_status st = mxa_device_check(dev, "mxa_quantize_mxfp8");
    if (st) return st;
    if (!codes || !scales) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_quantize_mxfp8: NULL argument");
    if ((st = mxa_tensor_check(x, "x"))) return st;
    if (!dev->ops->quantize_mxfp8)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "mxa_quantize_mxfp8: the %s backend has no MXFP8 quantizer", dev->ops->name);
    arg a;
    if ((st = arg_input(dev, x, "x", 0, DT(MXA_F32), &a))) return st;
    const int64_t rows = a.array.b * a.array.h * a.array.n, nblocks = (a.array.d + MXA_BLOCK - 1) / MXA_BLOCK;
    const size_t ncodes = (size_t)(rows * nblocks * MXA_BLOCK), nscales = (size_t)(rows * nblocks);
    uint8_t *tmp = malloc(ncodes + nscales); /* the caller's arrays are written only on success */
    if (!tmp) {
        arg_free(&a);
        return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_quantize_mxfp8: out of memory");
    }
    pthread_mutex_lock(&dev->lock);
    st = dev->ops->quantize_mxfp8(dev->impl, &a.array, tmp, tmp + ncodes);
    pthread_mutex_unlock(&dev->lock);
    if (!st) {
        memcpy(codes, tmp, ncodes);
        memcpy(scales, tmp + ncodes, nscales);
    }
    free(tmp);
    arg_free(&a);
    return st;
}

/* ------------------------------------------------------------- attention */

/* The NVFP4 baseline exists only as the reference, so only the CPU device runs
 * it; arrays in device buffers go through the backend's own copy calls. */
static mxa_status nvfp4_attention(mxa_device *dev, const mxa_attention_call *call, mxa_attention_info *info)
{
    const mxa_array *arr[4] = {&call->q, &call->k, &call->v, &call->o};
    float *host[4] = {NULL, NULL, NULL, NULL}, *copy[4] = {NULL, NULL, NULL, NULL};
    mxa_status st = MXA_OK;
    for (int i = 0; i < 4 && !st; i++) {
        const size_t bytes = (size_t)(arr[i]->b * arr[i]->h * arr[i]->n * arr[i]->d) * sizeof(float);
        if (arr[i]->host) {
            host[i] = arr[i]->host;
        } else if (!(host[i] = copy[i] = malloc(bytes))) {
            st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "attention (NVFP4): out of memory");
        } else if (i < 3) {
            st = dev->ops->buffer_download(dev->impl, arr[i]->buffer, arr[i]->offset, copy[i], bytes);
        }
    }
    const mxa_attention_dims dm = {call->q.b, call->q.h, call->k.h, call->q.n, call->k.n, call->q.d, call->desc.scale};
    const mxa_reference_extras ex = {call->bias, {0}, NULL}; /* a host bias, gathered dense by call_prepare */
    if (!st) st = mxa_reference_run(&call->desc, call->bc, &dm, &ex, host[0], host[1], host[2], host[3], call->lse, NULL);
    if (!st && copy[3])
        st = dev->ops->buffer_upload(dev->impl, call->o.buffer, call->o.offset, copy[3],
                                     (size_t)(dm.b * dm.h * dm.nq * dm.d) * sizeof(float));
    if (!st) snprintf(info->variant, sizeof info->variant, "reference-nvfp4");
    for (int i = 0; i < 4; i++) free(copy[i]);
    return st;
}

/* A validated call with its converted host copies: what mxa_attention and
 * mxa_attention_async share. Outputs reach the caller's tensors in call_finish. */
typedef struct prepared_call {
    mxa_attention_call call;
    arg q, k, v;
    float *o_host, *lse_host, *bias_host;
    uint8_t *mask_host;
    int32_t *key_lengths;
    mxa_tensor *o, *lse; /* the caller's */
} prepared_call;

static void call_free(prepared_call *pc)
{
    free(pc->o_host);
    free(pc->lse_host);
    free(pc->bias_host);
    free(pc->mask_host);
    free(pc->key_lengths);
    arg_free(&pc->q);
    arg_free(&pc->k);
    arg_free(&pc->v);
    memset(pc, 0, sizeof *pc);
}

/* The extras of a call the device's backend does not take, as one error. */
static mxa_status extras_check(const mxa_device *dev, const mxa_attention_desc *desc, const mxa_tensor *o,
                               const mxa_tensor *lse)
{
    const unsigned have = dev->ops->extras;
    const char *what = NULL;
    if (desc->bias && !(have & MXA_EXTRA_BIAS)) what = "an additive bias";
    else if (desc->mask && !(have & MXA_EXTRA_MASK)) what = "a boolean mask";
    else if (desc->key_lengths && !(have & MXA_EXTRA_KEY_LENGTHS)) what = "per-batch key lengths";
    else if (desc->causal == MXA_CAUSAL_TOP_LEFT && !(have & MXA_EXTRA_CAUSAL_TOP_LEFT)) what = "top-left causal alignment";
    else if (o->buffer && o->dtype != MXA_F32 && !(have & MXA_EXTRA_OUT_HALF)) what = "a 16-bit output in a device buffer";
    else if (lse && lse->buffer && !(have & MXA_EXTRA_LSE_BUFFER)) what = "lse in a device buffer";
    else if (desc->kv && !(have & MXA_EXTRA_KV)) what = "pre-quantized K/V (mxa_prepare_kv)";
    else if (desc->pv_format == MXA_PV_MXFP8 && (desc->quantize & (MXA_QUANT_P | MXA_QUANT_V)) &&
             !(have & MXA_EXTRA_PV_MXFP8))
        what = "an MXFP8 P V (pv_format MXFP8)";
    if (what) return mxa_fail(MXA_ERR_UNSUPPORTED, "attention: the %s backend does not take %s", dev->ops->name, what);
    return MXA_OK;
}

/* A bias or mask as a backend side array: the device buffer itself, or a dense host copy. */
static mxa_status side_input(mxa_device *dev, const mxa_tensor *t, const char *name, int check_values,
                             mxa_side_array *out, float **f32_copy, uint8_t **byte_copy)
{
    memset(out, 0, sizeof *out);
    if (!t) return MXA_OK;
    out->b = t->shape[0]; out->h = t->shape[1]; out->nq = t->shape[2]; out->nk = t->shape[3];
    const int64_t n = mxa_tensor_numel(t);
    if (t->buffer) { /* attention_check made a mask bool and a bias a float type */
        mxa_status st = check_device_tensor(dev, t, name, t->dtype == MXA_BOOL ? DT(MXA_BOOL) : DT(MXA_F32));
        if (st) return st;
        out->buffer = t->buffer->handle;
        out->offset = t->offset;
        return MXA_OK;
    }
    if (t->dtype == MXA_BOOL) {
        if (!(*byte_copy = malloc((size_t)n))) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
        mxa_tensor_gather_bytes(t, *byte_copy);
        out->host = *byte_copy;
        return MXA_OK;
    }
    if (!(*f32_copy = malloc((size_t)n * sizeof(float)))) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    mxa_tensor_gather(t, *f32_copy);
    out->host = *f32_copy;
    if (check_values) /* -inf hides a key; NaN and +inf have no meaning as a bias */
        for (int64_t i = 0; i < n; i++)
            if (isnan((*f32_copy)[i]) || (*f32_copy)[i] == INFINITY)
                return mxa_fail(MXA_ERR_NON_FINITE, "%s: element %lld is %s (a bias may be finite or -inf)", name,
                                (long long)i, isnan((*f32_copy)[i]) ? "NaN" : "+Inf");
    return MXA_OK;
}

static mxa_status call_prepare(mxa_device *dev, const mxa_attention_desc *desc, const mxa_tensor *q, const mxa_tensor *k,
                               const mxa_tensor *v, mxa_tensor *o, mxa_tensor *lse, prepared_call *pc)
{
    memset(pc, 0, sizeof *pc);
    mxa_attention_call *call = &pc->call;
    mxa_tensor kv_shape; /* with desc->kv: the shape of the prepared k and v */
    mxa_status st;
    if (!desc) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "attention: desc is NULL");
    if ((st = mxa_kv_attach(dev, desc, k, v, &kv_shape, &call->kv))) return st;
    if (call->kv.buffer) k = v = &kv_shape;
    mxa_attention_dims dm;
    if ((st = mxa_attention_check(desc, q, k, v, o, lse, &dm))) return st;
    call->desc = *desc;
    call->desc.scale = dm.scale;
    call->desc.bias = call->desc.mask = NULL;
    call->desc.key_lengths = NULL;
    call->desc.kv = NULL;
    if (!(desc->quantize & (MXA_QUANT_P | MXA_QUANT_V))) call->desc.pv_format = MXA_PV_MXFP4; /* nothing to format */
    call->bc = desc->bc ? desc->bc : dev->probed->info.default_bc;
    if ((st = mxa_bc_check(call->bc))) return st;
    if (desc->format == MXA_FORMAT_NVFP4 && strcmp(dev->ops->name, "cpu") != 0)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "attention: the NVFP4 baseline runs on the \"cpu\" device only, not on %s",
                        dev->probed->info.id);
    if (desc->format == MXA_FORMAT_NVFP4 && (desc->mask || desc->key_lengths || (desc->bias && desc->bias->buffer)))
        return mxa_fail(MXA_ERR_UNSUPPORTED, "attention: the NVFP4 baseline takes no mask, key lengths or bias in a device buffer");
    if ((st = extras_check(dev, desc, o, lse))) return st;
    if (o->buffer && (st = check_device_tensor(dev, o, "out", DT(MXA_F32) | DT(MXA_F16) | DT(MXA_BF16)))) return st;
    if (lse && lse->buffer && (st = check_device_tensor(dev, lse, "lse", DT(MXA_F32)))) return st;

    const int check = !desc->allow_non_finite;
    pc->o = o;
    pc->lse = lse;
    if (call->kv.buffer) { /* the shapes only: the data are the prepared codes */
        pc->k.array = (mxa_array){dm.b, dm.hkv, dm.nk, dm.d, NULL, NULL, 0, MXA_F32};
        pc->v.array = pc->k.array;
    }
    /* 16-bit inputs in device buffers where the backend reads them itself */
    const unsigned in_dtypes = DT(MXA_F32) | (dev->ops->extras & MXA_EXTRA_IN_HALF ? DT(MXA_F16) | DT(MXA_BF16) : 0u);
    if ((st = arg_input(dev, q, "q", check, in_dtypes, &pc->q)) ||
        (!call->kv.buffer && (st = arg_input(dev, k, "k", check, in_dtypes, &pc->k))) ||
        (!call->kv.buffer && (st = arg_input(dev, v, "v", check, in_dtypes, &pc->v))) ||
        (st = side_input(dev, desc->bias, "bias", check, &call->bias, &pc->bias_host, &pc->mask_host)) ||
        (st = side_input(dev, desc->mask, "mask", 0, &call->mask, &pc->bias_host, &pc->mask_host)))
        goto fail;
    call->q = pc->q.array; call->k = pc->k.array; call->v = pc->v.array;
    call->o = (mxa_array){dm.b, dm.h, dm.nq, dm.d, NULL, NULL, 0, MXA_F32};
    call->o_dtype = o->buffer ? o->dtype : MXA_F32;
    const size_t rows = (size_t)(dm.b * dm.h * dm.nq);
    if (o->buffer) {
        call->o.buffer = o->buffer->handle;
        call->o.offset = o->offset;
    } else if (!(call->o.host = pc->o_host = malloc(rows * (size_t)dm.d * sizeof(float)))) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_attention: out of memory");
        goto fail;
    }
    if (lse && lse->buffer) {
        call->lse_buffer = lse->buffer->handle;
        call->lse_offset = lse->offset;
    } else if (lse && !(call->lse = pc->lse_host = malloc(rows * sizeof(float)))) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_attention: out of memory");
        goto fail;
    }
    if (desc->key_lengths) { /* a copy: an asynchronous call outlives the caller's array */
        if (!(pc->key_lengths = malloc((size_t)dm.b * sizeof(int32_t)))) {
            st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_attention: out of memory");
            goto fail;
        }
        memcpy(pc->key_lengths, desc->key_lengths, (size_t)dm.b * sizeof(int32_t));
        call->key_lengths = pc->key_lengths;
    }
    return MXA_OK;
fail:
    call_free(pc);
    return st;
}

mxa_status mxa_attention_call_device(mxa_device *dev, const char *fn, const mxa_attention_desc *desc,
                                     const mxa_tensor *q, const mxa_tensor *k, const mxa_tensor *v, mxa_tensor *o,
                                     mxa_tensor *lse, mxa_attention_call *call)
{
    mxa_status st = mxa_device_check(dev, fn);
    if (st) return st;
    if (!desc || !q || (!desc->kv && (!k || !v)) || !o || !call)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    const mxa_tensor *const all[7] = {q, k, v, o, lse, desc->bias, desc->mask};
    static const char *const names[7] = {"q", "k", "v", "out", "lse", "bias", "mask"};
    for (int i = 0; i < 7; i++)
        if (all[i] && !all[i]->buffer)
            return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: %s is a host tensor; every tensor must be a device buffer of the device",
                            fn, names[i]);
    prepared_call pc;
    if ((st = call_prepare(dev, desc, q, k, v, o, lse, &pc))) return st;
    *call = pc.call;
    call->key_lengths = desc->key_lengths; /* the caller's, valid while the entry point runs */
    call_free(&pc);
    return MXA_OK;
}

/* Writes a completed call's host outputs into the caller's tensors. */
static void call_finish(prepared_call *pc)
{
    if (pc->o_host) mxa_tensor_scatter(pc->o, pc->o_host);
    if (pc->lse_host) mxa_tensor_scatter(pc->lse, pc->lse_host);
}

static mxa_status call_run(mxa_device *dev, prepared_call *pc, mxa_attention_info *local)
{
    memset(local, 0, sizeof *local);
    local->kernel_seconds = -1.0;
    pthread_mutex_lock(&dev->lock);
    mxa_status st = pc->call.desc.format == MXA_FORMAT_NVFP4 ? nvfp4_attention(dev, &pc->call, local)
                                                             : dev->ops->attention(dev->impl, &pc->call, local);
    pthread_mutex_unlock(&dev->lock);
    local->bc = pc->call.bc;
    return st;
}

mxa_status mxa_attention(mxa_device *dev, const mxa_attention_desc *desc, const mxa_tensor *q,
                         const mxa_tensor *k, const mxa_tensor *v, mxa_tensor *o, mxa_tensor *lse,
                         mxa_attention_info *info)
{
    mxa_status st = mxa_device_check(dev, "mxa_attention");
    if (st) return st;
    prepared_call pc;
    if ((st = call_prepare(dev, desc, q, k, v, o, lse, &pc))) return st;
    mxa_attention_info local;
    if (!(st = call_run(dev, &pc, &local))) {
        call_finish(&pc);
        if (info) *info = local;
    }
    call_free(&pc);
    return st;
}

/* ------------------------------------------------------- asynchronous calls */

struct mxa_event {
    mxa_device *dev;
    prepared_call pc;
    mxa_pending pending;
    int finished; /* host outputs written */
};

mxa_status mxa_attention_async(mxa_device *dev, const mxa_attention_desc *desc, const mxa_tensor *q,
                               const mxa_tensor *k, const mxa_tensor *v, mxa_tensor *o, mxa_tensor *lse,
                               mxa_event **event)
{
    mxa_status st = mxa_device_check(dev, "mxa_attention_async");
    if (st) return st;
    if (!event) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_attention_async: event is NULL");
    *event = NULL;
    mxa_event *ev = calloc(1, sizeof *ev);
    if (!ev) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "mxa_attention_async: out of memory");
    if ((st = call_prepare(dev, desc, q, k, v, o, lse, &ev->pc))) {
        free(ev);
        return st;
    }
    ev->dev = dev;
    if (dev->ops->attention_submit && ev->pc.call.desc.format != MXA_FORMAT_NVFP4) {
        memset(&ev->pending.info, 0, sizeof ev->pending.info);
        ev->pending.info.kernel_seconds = -1.0;
        pthread_mutex_lock(&dev->lock);
        st = dev->ops->attention_submit(dev->impl, &ev->pc.call, &ev->pending);
        pthread_mutex_unlock(&dev->lock);
        ev->pending.info.bc = ev->pc.call.bc;
    } else { /* a backend without queues computes now */
        st = call_run(dev, &ev->pc, &ev->pending.info);
        ev->pending.done = 1;
        ev->pending.status = st;
    }
    if (st) {
        call_free(&ev->pc);
        free(ev);
        return st;
    }
    *event = ev;
    return MXA_OK;
}

mxa_status mxa_event_wait(mxa_event *ev, mxa_attention_info *info)
{
    if (!ev) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_event_wait: event is NULL");
    if (!ev->pending.done) {
        if (mxa_device_check(ev->dev, "mxa_event_wait")) /* a closed device completed its work first */
            return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_event_wait: the event's device was closed before it was waited for");
        pthread_mutex_lock(&ev->dev->lock);
        ev->dev->ops->attention_wait(ev->dev->impl, &ev->pending);
        pthread_mutex_unlock(&ev->dev->lock);
    }
    if (ev->pending.status != MXA_OK)
        return mxa_fail(ev->pending.status, "%s", ev->pending.message[0] ? ev->pending.message : "attention failed");
    if (!ev->finished) {
        call_finish(&ev->pc);
        ev->finished = 1;
    }
    if (info) *info = ev->pending.info;
    return MXA_OK;
}

void mxa_event_destroy(mxa_event *ev)
{
    if (!ev) return;
    if (!ev->pending.done && mxa_device_check(ev->dev, "mxa_event_destroy") == MXA_OK) {
        pthread_mutex_lock(&ev->dev->lock);
        ev->dev->ops->attention_wait(ev->dev->impl, &ev->pending);
        pthread_mutex_unlock(&ev->dev->lock);
    }
    mxa_clear_error();
    call_free(&ev->pc);
    free(ev);
}
