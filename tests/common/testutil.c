/* Helpers shared by the test programs. */
#include <math.h>
#include <string.h>

#include "testutil.h"

uint64_t tu_next(tu_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tu_uniform(tu_rng *r)
{
    return (double)(tu_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

double tu_normal(tu_rng *r)
{
    double u1 = tu_uniform(r), u2 = tu_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void tu_fill_normal(tu_rng *r, float *x, int64_t n, float sigma)
{
    for (int64_t i = 0; i < n; i++) x[i] = (float)(sigma * tu_normal(r));
}

void tu_fill_attention(tu_rng *r, float *q, float *k, float *v, int64_t b, int64_t h, int64_t hkv,
                       int64_t nq, int64_t nk, int64_t d)
{
    /* Unit-normal q/k with every 17th channel three times larger: score
     * standard deviation about 2.5 at D = 128, and the channel outliers that
     * the Hadamard rotation spreads out. */
    for (int64_t i = 0; i < b * h * nq * d; i++) q[i] = (float)tu_normal(r) * ((i % d) % 17 == 3 ? 3.0f : 1.0f);
    for (int64_t i = 0; i < b * hkv * nk * d; i++) k[i] = (float)tu_normal(r) * ((i % d) % 17 == 3 ? 3.0f : 1.0f);
    /* v: unit noise around a per-channel mean, as real value activations have */
    float mean[256];
    for (int64_t c = 0; c < d; c++) mean[c] = (float)tu_normal(r);
    for (int64_t i = 0; i < b * hkv * nk * d; i++) v[i] = mean[i % d] + (float)tu_normal(r);
}

double tu_nmse(const float *a, const float *b, int64_t n)
{
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double)a[i] - b[i];
        num += e * e;
        den += (double)b[i] * b[i];
    }
    return den > 0.0 ? num / den : num;
}

double tu_cosine(const float *a, const float *b, int64_t n)
{
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (int64_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return (aa > 0.0 && bb > 0.0) ? ab / sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
}

double tu_max_abs_diff(const float *a, const float *b, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (e > m || isnan(e)) m = e;
    }
    return m;
}

mxa_tensor tu_tensor(float *data, int64_t b, int64_t h, int64_t n, int64_t d)
{
    mxa_tensor t;
    mxa_tensor_init(&t, MXA_F32, b, h, n, d, data);
    return t;
}

mxa_status tu_small_attention(mxa_device *dev, uint64_t seed)
{
    float q[64], k[64], v[64], o[64];
    tu_rng r = {seed};
    tu_fill_normal(&r, q, 64, 1.0f);
    tu_fill_normal(&r, k, 64, 1.0f);
    tu_fill_normal(&r, v, 64, 1.0f);
    mxa_tensor tq = tu_tensor(q, 1, 1, 2, 32), tk = tu_tensor(k, 1, 1, 2, 32), tv = tu_tensor(v, 1, 1, 2, 32),
               to = tu_tensor(o, 1, 1, 2, 32);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    return mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, NULL);
}
