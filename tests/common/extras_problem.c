/* Problems with bias, mask and key lengths for the tests (extras_problem.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "extras_problem.h"
#include "testutil.h"

problem make(uint64_t seed, int64_t b, int64_t h, int64_t hkv, int64_t nq, int64_t nk, int64_t d)
{
    problem p;
    memset(&p, 0, sizeof p);
    p.b = b, p.h = h, p.hkv = hkv, p.nq = nq, p.nk = nk, p.d = d;
    p.q = malloc((size_t)(b * h * nq * d) * 4);
    p.k = malloc((size_t)(b * hkv * nk * d) * 4);
    p.v = malloc((size_t)(b * hkv * nk * d) * 4);
    p.o = malloc((size_t)(b * h * nq * d) * 4);
    p.lse = malloc((size_t)(b * h * nq) * 4);
    assert_true(p.q && p.k && p.v && p.o && p.lse);
    tu_rng rng = {seed};
    tu_fill_attention(&rng, p.q, p.k, p.v, b, h, hkv, nq, nk, d);
    return p;
}

void add_bias(problem *p, int64_t bb, int64_t bh)
{
    p->bb = bb, p->bh = bh;
    p->bias = calloc((size_t)(bb * bh * p->nq * p->nk), 4);
    assert_non_null(p->bias);
}

void add_mask(problem *p, int64_t mb, int64_t mh)
{
    p->mb = mb, p->mh = mh;
    p->mask = malloc((size_t)(mb * mh * p->nq * p->nk));
    assert_non_null(p->mask);
    memset(p->mask, 1, (size_t)(mb * mh * p->nq * p->nk));
}

void drop(problem *p)
{
    free(p->q), free(p->k), free(p->v), free(p->o), free(p->lse), free(p->bias), free(p->mask), free(p->lengths);
    memset(p, 0, sizeof *p);
}

mxa_attention_desc recipe(mxa_recipe r, int causal)
{
    mxa_attention_desc desc;
    assert_int_equal(mxa_attention_desc_init(&desc, r), MXA_OK);
    desc.causal = causal;
    desc.bc = 64;
    return desc;
}
