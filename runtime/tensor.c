/* Host tensors: strides, dtype conversion, validation. */
#include <math.h>
#include <string.h>

#include "status.h"
#include "tensor.h"

static uint32_t bits_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float float_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float mxa_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return float_of(sign | 0x7f800000u | (man << 13));
    if (exp == 0) { /* zero or subnormal: exact in fp32 */
        float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    }
    return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t mxa_f32_to_f16(float f)
{
    uint32_t u = bits_of(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    float a = fabsf(f);
    if (isnan(f)) return (uint16_t)(sign | 0x7e00);
    if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00); /* rounds to Inf */
    if (a < 6.103515625e-05f) { /* f16 subnormal range: units of 2^-24 */
        float units = nearbyintf(ldexpf(a, 24)); /* default mode: ties to even */
        return (uint16_t)(sign | (uint16_t)units);
    }
    uint32_t au = u & 0x7fffffffu;
    uint32_t rounded = au + 0x0fffu + ((au >> 13) & 1u); /* RNE on 13 dropped bits */
    return (uint16_t)(sign | (((rounded >> 23) - 112) << 10) | ((rounded >> 13) & 0x3ff));
}

float mxa_bf16_to_f32(uint16_t h)
{
    return float_of((uint32_t)h << 16);
}

void mxa_widen16(mxa_dtype dtype, const uint16_t *src, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++) out[i] = dtype == MXA_F16 ? mxa_f16_to_f32(src[i]) : mxa_bf16_to_f32(src[i]);
}

uint16_t mxa_f32_to_bf16(float f)
{
    uint32_t u = bits_of(f);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

size_t mxa_dtype_size(mxa_dtype dtype)
{
    switch (dtype) {
    case MXA_F32: return 4;
    case MXA_F16:
    case MXA_BF16: return 2;
    case MXA_BOOL: return 1;
    }
    return 0;
}

mxa_status mxa_tensor_init(mxa_tensor *t, mxa_dtype dtype, int64_t b, int64_t h, int64_t n,
                           int64_t d, void *data)
{
    if (!t) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_tensor_init: tensor is NULL");
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->shape[0] = b; t->shape[1] = h; t->shape[2] = n; t->shape[3] = d;
    t->data = data;
    return mxa_tensor_check(t, "tensor");
}

void mxa_tensor_strides(const mxa_tensor *t, int64_t s[4])
{
    if (t->strides[0] || t->strides[1] || t->strides[2] || t->strides[3]) {
        memcpy(s, t->strides, sizeof t->strides);
        return;
    }
    s[3] = 1;
    for (int i = 2; i >= 0; i--) s[i] = s[i + 1] * t->shape[i + 1];
}

int64_t mxa_tensor_numel(const mxa_tensor *t)
{
    return t->shape[0] * t->shape[1] * t->shape[2] * t->shape[3];
}

mxa_status mxa_tensor_check(const mxa_tensor *t, const char *name)
{
    if (!t) return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: tensor is NULL", name);
    if (mxa_dtype_size(t->dtype) == 0)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d (expected f32, f16, bf16 or bool)",
                        name, (int)t->dtype);
    for (int i = 0; i < 4; i++) {
        if (t->shape[i] <= 0 || t->shape[i] > ((int64_t)1 << 31))
            return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: dimension %d is %lld (must be in 1..2^31)",
                            name, i, (long long)t->shape[i]);
        if (t->strides[i] < 0)
            return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: stride %d is negative (%lld)", name, i,
                            (long long)t->strides[i]);
    }
    if ((double)t->shape[0] * t->shape[1] * t->shape[2] * t->shape[3] > 9.0e15)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: too many elements", name);
    if (!t->data && !t->buffer)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: neither host data nor a device buffer is set", name);
    if (t->buffer && (t->strides[0] || t->strides[1] || t->strides[2] || t->strides[3])) {
        int64_t s[4];
        mxa_tensor t2 = *t;
        memset(t2.strides, 0, sizeof t2.strides);
        mxa_tensor_strides(&t2, s);
        if (memcmp(s, t->strides, sizeof s) != 0)
            return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "%s: a device-buffer tensor must be contiguous", name);
    }
    return MXA_OK;
}

int mxa_tensor_is_dense_f32(const mxa_tensor *t)
{
    if (t->dtype != MXA_F32 || !t->data || t->buffer) return 0;
    int64_t s[4];
    mxa_tensor_strides(t, s);
    int64_t want = 1;
    for (int i = 3; i >= 0; i--) {
        if (t->shape[i] != 1 && s[i] != want) return 0;
        want *= t->shape[i];
    }
    return 1;
}

static void *element(const mxa_tensor *t, const int64_t s[4], int64_t b, int64_t h, int64_t n,
                     int64_t d)
{
    int64_t off = b * s[0] + h * s[1] + n * s[2] + d * s[3];
    return (char *)t->data + off * (int64_t)mxa_dtype_size(t->dtype);
}

static float load(mxa_dtype dtype, const void *p)
{
    uint16_t h;
    switch (dtype) {
    case MXA_F16: memcpy(&h, p, 2); return mxa_f16_to_f32(h);
    case MXA_BF16: memcpy(&h, p, 2); return mxa_bf16_to_f32(h);
    case MXA_BOOL: return *(const uint8_t *)p ? 1.0f : 0.0f;
    case MXA_F32: break;
    }
    float f;
    memcpy(&f, p, 4);
    return f;
}

static void store(mxa_dtype dtype, void *p, float v)
{
    uint16_t h;
    switch (dtype) {
    case MXA_F16: h = mxa_f32_to_f16(v); memcpy(p, &h, 2); return;
    case MXA_BF16: h = mxa_f32_to_bf16(v); memcpy(p, &h, 2); return;
    case MXA_BOOL: *(uint8_t *)p = v != 0.0f; return;
    case MXA_F32: break;
    }
    memcpy(p, &v, 4);
}

float mxa_tensor_get(const mxa_tensor *t, int64_t b, int64_t h, int64_t n, int64_t d)
{
    int64_t s[4];
    mxa_tensor_strides(t, s);
    return load(t->dtype, element(t, s, b, h, n, d));
}

void mxa_tensor_set(const mxa_tensor *t, int64_t b, int64_t h, int64_t n, int64_t d, float v)
{
    int64_t s[4];
    mxa_tensor_strides(t, s);
    store(t->dtype, element(t, s, b, h, n, d), v);
}

void mxa_tensor_gather(const mxa_tensor *t, float *out)
{
    int64_t s[4];
    mxa_tensor_strides(t, s);
    if (mxa_tensor_is_dense_f32(t)) {
        memcpy(out, t->data, (size_t)mxa_tensor_numel(t) * sizeof(float));
        return;
    }
    for (int64_t b = 0; b < t->shape[0]; b++)
        for (int64_t h = 0; h < t->shape[1]; h++)
            for (int64_t n = 0; n < t->shape[2]; n++)
                for (int64_t d = 0; d < t->shape[3]; d++)
                    *out++ = load(t->dtype, element(t, s, b, h, n, d));
}

void mxa_tensor_scatter(const mxa_tensor *t, const float *in)
{
    int64_t s[4];
    mxa_tensor_strides(t, s);
    if (mxa_tensor_is_dense_f32(t)) {
        memcpy(t->data, in, (size_t)mxa_tensor_numel(t) * sizeof(float));
        return;
    }
    for (int64_t b = 0; b < t->shape[0]; b++)
        for (int64_t h = 0; h < t->shape[1]; h++)
            for (int64_t n = 0; n < t->shape[2]; n++)
                for (int64_t d = 0; d < t->shape[3]; d++)
                    store(t->dtype, element(t, s, b, h, n, d), *in++);
}

void mxa_tensor_gather_bytes(const mxa_tensor *t, uint8_t *out)
{
    int64_t s[4];
    mxa_tensor_strides(t, s);
    for (int64_t b = 0; b < t->shape[0]; b++)
        for (int64_t h = 0; h < t->shape[1]; h++)
            for (int64_t n = 0; n < t->shape[2]; n++)
                for (int64_t d = 0; d < t->shape[3]; d++)
                    *out++ = load(t->dtype, element(t, s, b, h, n, d)) != 0.0f;
}

mxa_status mxa_check_values(const float *x, int64_t n, float limit, const char *name)
{
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            return mxa_fail(MXA_ERR_NON_FINITE, "%s: element %lld is %s (non-finite inputs are rejected)",
                            name, (long long)i, isnan(x[i]) ? "NaN" : "Inf");
        if (fabsf(x[i]) > limit)
            return mxa_fail(MXA_ERR_NON_FINITE,
                            "%s: element %lld has magnitude %g, above the supported %g (scores would overflow float32)",
                            name, (long long)i, (double)fabsf(x[i]), (double)limit);
    }
    return MXA_OK;
}
