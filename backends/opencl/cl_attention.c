/*
 * Attention on an OpenCL device: prepare Q, K, V (prep.cl), then run the
 * chosen variant's kernel, with the extras of docs/attention-inputs.md. A
 * pre-quantized K/V (mxa_prepare_kv) is decoded to float32 K (rotated) and V
 * first, then prepared as usual with K's rotation off. Calls are enqueued
 * without waiting (submit); the synchronous call is a submit and a wait.
 * Kernel time comes from event profiling: from the first kernel's start (the
 * decode or the preparation) to the attention kernel's end.
 */
#include <stdio.h>
#include <string.h>

#include "cl_internal.h"
#include "env.h"
#include "hadamard.h"
#include "log.h"
#include "status.h"

/* Shapes of one call, in the kernels' int arguments. */
typedef struct shape {
    cl_int b, h, hkv, nq, nk, d, nq_pad, nk_pad;
} shape;

/* A bias or mask on the device: element offset and batch / head strides (0: broadcast). */
typedef struct side {
    cl_mem mem;
    cl_ulong off, bs, hs;
} side;

/* Everything the variants share: device inputs, output, lse, extras, events. */
typedef struct run {
    cl_impl *d;
    const mxa_attention_call *call;
    shape s;
    cl_rule_args rule;
    cl_mem q, k, v, o, lse, klen;
    cl_ulong q_off, k_off, v_off, o_off, lse_off;
    cl_int has_lse, has_klen;
    cl_int rotate[2]; /* Hadamard on Q, K (off for K decoded from a prepared K/V: stored rotated) */
    cl_int in16[3];   /* Q, K, V elements: 0 float32, 1 float16, 2 bfloat16 (prep.cl's mxa_in) */
    side bias, mask;
    char extra_options[64]; /* the attention program's -D options for the extras */
    cl_event events[CL_MAX_EVENTS];
    int nevents;
} run;

/* Tiled-kernel geometry that fits the device's local memory. */
typedef struct tiled_cfg {
    int br, kc, vc;
    size_t local_bytes;
} tiled_cfg;

static size_t tiled_local_bytes(int d, int bc, int br, int kc, int vc)
{
    const size_t chunk = (size_t)(kc * bc > vc * d ? kc * bc : vc * d);
    return 4u * ((size_t)d * br + chunk + (size_t)br * (bc + 1) + 3u * br + 3u * br * (bc / 32));
}

static mxa_status tiled_config(const cl_impl *d, int dim, int bc, tiled_cfg *cfg)
{
    static const int brs[2] = {32, 16}, vcs[4] = {32, 16, 8, 4};
    for (int i = 0; i < 2; i++) {
        const int br = brs[i], tc = 128 / (br / 4);
        if (bc % tc != 0 || bc / tc > 16) continue; /* keys per work-item: whole, and registers bounded */
        for (int j = 0; j < 4; j++) {
            int kc = 32;
            while (kc > 1 && kc * bc > vcs[j] * dim) kc /= 2; /* K stage no larger than the V stage */
            const size_t bytes = tiled_local_bytes(dim, bc, br, kc, vcs[j]);
            if (bytes + 256u <= d->desc.local_mem) {
                cfg->br = br;
                cfg->kc = kc;
                cfg->vc = vcs[j];
                cfg->local_bytes = bytes;
                return MXA_OK;
            }
        }
    }
    return mxa_fail(MXA_ERR_UNSUPPORTED, "opencl cl-tiled: bc=%d with D=%d does not fit %zu bytes of local memory "
                    "(or exceeds 512 keys per tile); use a smaller bc", bc, dim, d->desc.local_mem);
}

/* Rows per work-group of mxa_prep_qk / mxa_prep_qk_i8 (32 work-items each):
 * 8, or 4 for D > 128 (the kernels' local memory holds 2 x rows x D floats,
 * at most 2 x 1024), fewer if the device's work-groups are smaller. */
static size_t qk_rows_per_group(const cl_impl *d, int dim)
{
    size_t rows = dim > 128 ? 4 : 8;
    while (rows > 1 && 32 * rows > d->desc.max_wg) rows /= 2;
    return rows;
}

/* The rounding rule's three arguments, in the order every kernel declares them. */
static void rule_args(cl_args *a, const run *r)
{
    mxa_cl_arg(a, sizeof r->rule.ceil_rule, &r->rule.ceil_rule);
    mxa_cl_arg(a, sizeof r->rule.thr, &r->rule.thr);
    mxa_cl_arg(a, sizeof r->rule.pow2_dec, &r->rule.pow2_dec);
}

/* The arguments mxa_prep_qk and mxa_prep_qk_i8 start with: Q (which = 0) or K (1) as input. */
static void qk_source_args(cl_args *a, const run *r, int which, const cl_float *norm)
{
    const cl_mem *src = which ? &r->k : &r->q;
    const cl_ulong *off = which ? &r->k_off : &r->q_off;
    const cl_int *n = which ? &r->s.nk : &r->s.nq, *n_pad = which ? &r->s.nk_pad : &r->s.nq_pad;
    mxa_cl_arg(a, sizeof *src, src);
    mxa_cl_arg(a, sizeof *off, off);
    mxa_cl_arg(a, sizeof r->in16[which], &r->in16[which]);
    mxa_cl_arg(a, sizeof *n, n);
    mxa_cl_arg(a, sizeof *n_pad, n_pad);
    mxa_cl_arg(a, sizeof r->s.d, &r->s.d);
    mxa_cl_arg(a, sizeof *norm, norm);
    mxa_cl_arg(a, sizeof r->rotate[which], &r->rotate[which]);
}

/* The arguments mxa_prep_v and mxa_prep_v_i8 start with (key lengths included: V is
 * quantized as if a batch had only its keys). */
static void v_source_args(cl_args *a, const run *r)
{
    mxa_cl_arg(a, sizeof r->v, &r->v);
    mxa_cl_arg(a, sizeof r->v_off, &r->v_off);
    mxa_cl_arg(a, sizeof r->in16[2], &r->in16[2]);
    mxa_cl_arg(a, sizeof r->s.nk, &r->s.nk);
    mxa_cl_arg(a, sizeof r->s.nk_pad, &r->s.nk_pad);
    mxa_cl_arg(a, sizeof r->s.d, &r->s.d);
    mxa_cl_arg(a, sizeof r->klen, &r->klen);
    mxa_cl_arg(a, sizeof r->has_klen, &r->has_klen);
    mxa_cl_arg(a, sizeof r->s.hkv, &r->s.hkv);
}

/* Launches a Q/K prep kernel: 32 work-items per row, qk_rows_per_group rows per work-group. */
static mxa_status qk_launch(run *r, cl_args *a, int which, const char *name)
{
    const size_t heads = (size_t)r->s.b * (which ? r->s.hkv : r->s.h), rows = qk_rows_per_group(r->d, r->s.d);
    const size_t n_pad = (size_t)(which ? r->s.nk_pad : r->s.nq_pad);
    const size_t global[3] = {32, (n_pad + rows - 1) / rows * rows, heads}, local[3] = {32, rows, 1};
    return mxa_cl_launch(r->d, a, 3, global, local, r->events, &r->nevents, name);
}

/* Rotation/quantization of Q (rows [bh][nq_pad][D]) and K (transposed [bh][D][nk_pad]), and V. */
static mxa_status prep_float(run *r, cl_mem qp, cl_mem kp, cl_mem vp)
{
    cl_impl *d = r->d;
    const mxa_attention_desc *desc = &r->call->desc;
    const cl_int qk = (desc->quantize & MXA_QUANT_QK) != 0, qv = (desc->quantize & MXA_QUANT_V) != 0;
    const cl_int fp8 = desc->pv_format == MXA_PV_MXFP8;
    const cl_float norm = desc->hadamard ? mxa_hadamard_norm(r->s.d) : 1.0f;
    cl_program prog = NULL;
    cl_kernel kqk = NULL, kv = NULL;
    mxa_status st;
    if ((st = mxa_cl_program(d, CL_FAMILY_PREP, "-cl-std=CL1.2", &prog)) ||
        (st = mxa_cl_kernel(d, prog, "mxa_prep_qk", &kqk)) || (st = mxa_cl_kernel(d, prog, "mxa_prep_v", &kv)))
        goto out;
    for (int which = 0; which < 2 && !st; which++) {
        const cl_mem dst = which ? kp : qp;
        const cl_int transpose = which;
        cl_args a = {d->cl, kqk, 0, CL_SUCCESS};
        qk_source_args(&a, r, which, &norm);
        mxa_cl_arg(&a, sizeof qk, &qk);
        rule_args(&a, r);
        mxa_cl_arg(&a, sizeof transpose, &transpose);
        mxa_cl_arg(&a, sizeof dst, &dst);
        st = qk_launch(r, &a, which, "mxa_prep_qk");
    }
    if (st) goto out;
    cl_args a = {d->cl, kv, 0, CL_SUCCESS};
    v_source_args(&a, r);
    mxa_cl_arg(&a, sizeof qv, &qv);
    rule_args(&a, r);
    mxa_cl_arg(&a, sizeof fp8, &fp8);
    mxa_cl_arg(&a, sizeof vp, &vp);
    const size_t global[3] = {(size_t)r->s.d, (size_t)r->s.nk_pad / 32, (size_t)r->s.b * r->s.hkv};
    st = mxa_cl_launch(d, &a, 3, global, NULL, r->events, &r->nevents, "mxa_prep_v");
out:
    if (kqk) d->cl->ReleaseKernel(kqk);
    if (kv) d->cl->ReleaseKernel(kv);
    return st;
}

/* The arguments both attention kernels take right after their inputs, in the
 * same order: output, lse, shapes, score scale, causal mode, the extras
 * (attention_common.cl, MXA_EXTRA_PARAMS). Set in one place so that the
 * cl-tiled and the cl-mma-ptx launchers cannot drift apart. */
static void attention_out_args(cl_args *a, const run *r, cl_float scale)
{
    const cl_int causal = r->call->desc.causal;
    mxa_cl_arg(a, sizeof r->o, &r->o);
    mxa_cl_arg(a, sizeof r->o_off, &r->o_off);
    mxa_cl_arg(a, sizeof r->lse, &r->lse);
    mxa_cl_arg(a, sizeof r->has_lse, &r->has_lse);
    mxa_cl_arg(a, sizeof r->s.h, &r->s.h);
    mxa_cl_arg(a, sizeof r->s.hkv, &r->s.hkv);
    mxa_cl_arg(a, sizeof r->s.nq, &r->s.nq);
    mxa_cl_arg(a, sizeof r->s.nk, &r->s.nk);
    mxa_cl_arg(a, sizeof r->s.nq_pad, &r->s.nq_pad);
    mxa_cl_arg(a, sizeof r->s.nk_pad, &r->s.nk_pad);
    mxa_cl_arg(a, sizeof scale, &scale);
    mxa_cl_arg(a, sizeof causal, &causal);
    const side *sd[2] = {&r->bias, &r->mask};
    for (int i = 0; i < 2; i++) {
        mxa_cl_arg(a, sizeof sd[i]->mem, &sd[i]->mem);
        mxa_cl_arg(a, sizeof sd[i]->off, &sd[i]->off);
        mxa_cl_arg(a, sizeof sd[i]->bs, &sd[i]->bs);
        mxa_cl_arg(a, sizeof sd[i]->hs, &sd[i]->hs);
    }
    mxa_cl_arg(a, sizeof r->klen, &r->klen);
    mxa_cl_arg(a, sizeof r->has_klen, &r->has_klen);
    mxa_cl_arg(a, sizeof r->lse_off, &r->lse_off);
}

static mxa_status run_tiled(run *r)
{
    cl_impl *d = r->d;
    const mxa_attention_call *call = r->call;
    tiled_cfg cfg = {0, 0, 0, 0};
    mxa_status st = tiled_config(d, r->s.d, call->bc, &cfg);
    if (st) return st;
    r->s.nq_pad = (r->s.nq + cfg.br - 1) / cfg.br * cfg.br;
    r->s.nk_pad = (r->s.nk + call->bc - 1) / call->bc * call->bc;
    cl_mem qp = NULL, kp = NULL, vp = NULL;
    cl_program prog = NULL;
    cl_kernel k = NULL;
    char options[256];
    snprintf(options, sizeof options, "-cl-std=CL1.2 -DMXA_D=%d -DMXA_BC=%d -DMXA_BR=%d -DMXA_KC=%d -DMXA_VC=%d%s",
             r->s.d, call->bc, cfg.br, cfg.kc, cfg.vc, r->extra_options);
    const size_t f = sizeof(float);
    if ((st = mxa_cl_scratch(d, SCRATCH_QP, (size_t)r->s.b * r->s.h * r->s.nq_pad * r->s.d * f, &qp)) ||
        (st = mxa_cl_scratch(d, SCRATCH_KP, (size_t)r->s.b * r->s.hkv * r->s.nk_pad * r->s.d * f, &kp)) ||
        (st = mxa_cl_scratch(d, SCRATCH_VP, (size_t)r->s.b * r->s.hkv * r->s.nk_pad * r->s.d * f, &vp)) ||
        (st = mxa_cl_program(d, CL_FAMILY_TILED, options, &prog)) ||
        (st = mxa_cl_kernel(d, prog, "mxa_attention_tiled", &k)) || (st = prep_float(r, qp, kp, vp)))
        goto out;
    const cl_int quant_p = (call->desc.quantize & MXA_QUANT_P) != 0, pnq = call->desc.placement == MXA_PLACEMENT_PNQ;
    const cl_int pv_fp8 = call->desc.pv_format == MXA_PV_MXFP8;
    cl_args a = {d->cl, k, 0, CL_SUCCESS};
    mxa_cl_arg(&a, sizeof qp, &qp);
    mxa_cl_arg(&a, sizeof kp, &kp);
    mxa_cl_arg(&a, sizeof vp, &vp);
    attention_out_args(&a, r, call->desc.scale);
    mxa_cl_arg(&a, sizeof quant_p, &quant_p);
    mxa_cl_arg(&a, sizeof pnq, &pnq);
    rule_args(&a, r);
    mxa_cl_arg(&a, sizeof pv_fp8, &pv_fp8);
    const size_t global[2] = {128u * (size_t)(r->s.nq_pad / cfg.br), (size_t)r->s.b * r->s.h};
    const size_t local[2] = {128, 1};
    st = mxa_cl_launch(d, &a, 2, global, local, r->events, &r->nevents, "mxa_attention_tiled");
out:
    if (k) d->cl->ReleaseKernel(k);
    return st;
}

/* Local bytes of one K/V stage of the tensor-core kernel (attention_mma.cl STAGE_WORDS). */
static size_t mma_stage_bytes(int dim, int bc)
{
    const size_t kpitch = dim / 4 == 8 ? 8 : dim / 4 + 8, vpitch = bc / 4 == 8 ? 8 : bc / 4 + 8;
    return 4u * ((size_t)bc * kpitch + (size_t)dim * vpitch + (size_t)bc * (dim / 32) + (size_t)(bc / 32) * dim);
}

/* 2 (double buffering) when two stages fit the local memory, 1 when one does, else 0. */
int mxa_cl_mma_stages(const cl_impl *d, int dim, int bc)
{
    const size_t one = mma_stage_bytes(dim, bc);
    return 2 * one + 256u <= d->desc.local_mem ? 2 : one + 256u <= d->desc.local_mem ? 1 : 0;
}

/* The tensor-core variant: int8 codes + block scales for Q, K and V^T. */
static mxa_status run_mma(run *r)
{
    cl_impl *d = r->d;
    const mxa_attention_call *call = r->call;
    const mxa_attention_desc *desc = &call->desc;
    r->s.nq_pad = (r->s.nq + 63) / 64 * 64;
    r->s.nk_pad = (r->s.nk + call->bc - 1) / call->bc * call->bc;
    const size_t qrows = (size_t)r->s.b * r->s.h * r->s.nq_pad, krows = (size_t)r->s.b * r->s.hkv * r->s.nk_pad;
    const size_t dim = (size_t)r->s.d;
    cl_mem q8 = NULL, k8 = NULL, v8 = NULL, qe = NULL, ke = NULL, ve = NULL, vx = NULL;
    cl_program prep = NULL, prog = NULL;
    cl_kernel kqk = NULL, kv = NULL, k = NULL;
    /* Switches for experiments: MXA_OPENCL_EXACT_EXP (exp() instead of ex2),
     * MXA_OPENCL_NATIVE_EXP2 (native_exp2, which keeps subnormals, instead of ex2.ftz),
     * MXA_OPENCL_NO_ASYNC (plain loads instead of cp.async, one stage),
     * MXA_OPENCL_PER_BLOCK_QK (scores always by per-block scales). */
    const int stages = mxa_cl_mma_stages(d, r->s.d, call->bc);
    const int no_async = mxa_env_flag("MXA_OPENCL_NO_ASYNC");
    char options[256];
    const int exact_exp = mxa_env_flag("MXA_OPENCL_EXACT_EXP");
    snprintf(options, sizeof options, "-cl-std=CL1.2 -DMXA_D=%d -DMXA_BC=%d -DMXA_STAGES=%d -DMXA_PNQ=%d%s%s%s%s%s",
             r->s.d, call->bc, no_async ? 1 : stages, desc->placement == MXA_PLACEMENT_PNQ,
             mxa_env_flag("MXA_OPENCL_NATIVE_EXP2") ? " -DMXA_NATIVE_EXP2" : "",
             exact_exp ? " -DMXA_EXACT_EXP" : "", no_async ? " -DMXA_NO_CP_ASYNC" : "",
             mxa_env_flag("MXA_OPENCL_PER_BLOCK_QK") ? " -DMXA_QK_CHAIN=0" : "", r->extra_options);
    /* The tensor-core family runs where inline PTX does: its prep program is built for this D
     * (the per-row loops unroll) and exchanges a row's values with warp shuffles (prep.cl,
     * MXA_PTX_SHFL). MXA_OPENCL_PREP_QK=local keeps local memory and barriers (the same bits,
     * for A/B timing). */
    const char *prep_form = getenv("MXA_OPENCL_PREP_QK");
    char prep_options[64];
    snprintf(prep_options, sizeof prep_options, "-cl-std=CL1.2 -DMXA_PREP_D=%d%s", r->s.d,
             prep_form && strcmp(prep_form, "local") == 0 ? "" : " -DMXA_PTX_SHFL");
    const size_t sf = sizeof(float);
    /* V's column exponents [b * hkv][D] and key-block flags [b * hkv][nk_pad / 32] (prep.cl) */
    const size_t kv_heads = (size_t)r->s.b * r->s.hkv, vx_bytes = kv_heads * (dim + (size_t)r->s.nk_pad / 32) * sizeof(cl_uint);
    mxa_status st;
    if ((st = mxa_cl_scratch(d, SCRATCH_QP, qrows * dim, &q8)) || (st = mxa_cl_scratch(d, SCRATCH_QS, qrows * dim / 32 * sf, &qe)) ||
        (st = mxa_cl_scratch(d, SCRATCH_KP, krows * dim, &k8)) || (st = mxa_cl_scratch(d, SCRATCH_KS, krows * dim / 32 * sf, &ke)) ||
        (st = mxa_cl_scratch(d, SCRATCH_VP, krows * dim, &v8)) || (st = mxa_cl_scratch(d, SCRATCH_VS, krows * dim / 32 * sf, &ve)) ||
        (st = mxa_cl_scratch(d, SCRATCH_VX, vx_bytes, &vx)) || (st = mxa_cl_program(d, CL_FAMILY_PREP, prep_options, &prep)) ||
        (st = mxa_cl_kernel(d, prep, "mxa_prep_qk_i8", &kqk)) || (st = mxa_cl_kernel(d, prep, "mxa_prep_v_i8", &kv)) ||
        (st = mxa_cl_program(d, CL_FAMILY_MMA, options, &prog)) || (st = mxa_cl_kernel(d, prog, "mxa_attention_mma", &k)))
        goto out;
    const cl_float norm = desc->hadamard ? mxa_hadamard_norm(r->s.d) : 1.0f;
    for (int which = 0; which < 2 && !st; which++) {
        const cl_mem dst = which ? k8 : q8, dste = which ? ke : qe;
        const cl_int scales_t = which; /* K scales [block][key]: one 16-byte copy per 4 keys */
        cl_args a = {d->cl, kqk, 0, CL_SUCCESS};
        qk_source_args(&a, r, which, &norm);
        rule_args(&a, r);
        mxa_cl_arg(&a, sizeof scales_t, &scales_t);
        mxa_cl_arg(&a, sizeof dst, &dst);
        mxa_cl_arg(&a, sizeof dste, &dste);
        st = qk_launch(r, &a, which, "mxa_prep_qk_i8");
    }
    if (st) goto out;
    {
        const cl_uint zero = 0;
        const cl_event *wait = NULL;
        const cl_uint nwait = mxa_cl_take_wait(d, &wait);
        const cl_int err = d->cl->EnqueueFillBuffer(d->target, vx, &zero, sizeof zero, 0, vx_bytes, nwait, wait, NULL);
        if (err != CL_SUCCESS) {
            st = mxa_cl_fail(err, "clEnqueueFillBuffer (V column exponents)");
            goto out;
        }
    }
    for (cl_int pass = 0; pass < 2; pass++) { /* the columns' largest exponents, then the codes */
        cl_args a = {d->cl, kv, 0, CL_SUCCESS};
        v_source_args(&a, r);
        rule_args(&a, r);
        mxa_cl_arg(&a, sizeof v8, &v8);
        mxa_cl_arg(&a, sizeof ve, &ve);
        mxa_cl_arg(&a, sizeof vx, &vx);
        mxa_cl_arg(&a, sizeof pass, &pass);
        const size_t global[3] = {dim, (size_t)r->s.nk_pad / 32, kv_heads};
        if ((st = mxa_cl_launch(d, &a, 3, global, NULL, r->events, &r->nevents, "mxa_prep_v_i8"))) goto out;
    }
    /* scores in log2 units for ex2, unless the exact exp() is asked for */
    const cl_float scale = exact_exp ? desc->scale : desc->scale * 1.4426950408889634f;
    cl_args a = {d->cl, k, 0, CL_SUCCESS};
    mxa_cl_arg(&a, sizeof q8, &q8);
    mxa_cl_arg(&a, sizeof qe, &qe);
    mxa_cl_arg(&a, sizeof k8, &k8);
    mxa_cl_arg(&a, sizeof ke, &ke);
    mxa_cl_arg(&a, sizeof v8, &v8);
    mxa_cl_arg(&a, sizeof ve, &ve);
    mxa_cl_arg(&a, sizeof vx, &vx);
    attention_out_args(&a, r, scale);
    rule_args(&a, r);
    const size_t global[2] = {128u * (size_t)(r->s.nq_pad / 64), (size_t)r->s.b * r->s.h}, local[2] = {128, 1};
    st = mxa_cl_launch(d, &a, 2, global, local, r->events, &r->nevents, "mxa_attention_mma");
out:
    if (kqk) d->cl->ReleaseKernel(kqk);
    if (kv) d->cl->ReleaseKernel(kv);
    if (k) d->cl->ReleaseKernel(k);
    return st;
}

/* Why the tensor-core variant cannot run this call (NULL if it can). */
static const char *mma_unsuitable(const cl_impl *d, const mxa_attention_call *call)
{
    if (!d->desc.supported[CL_VARIANT_MMA_PTX]) return "not supported by the device";
    if (call->desc.quantize != MXA_QUANT_ALL) return "it needs Q, K, V and P all quantized";
    if (call->desc.pv_format == MXA_PV_MXFP8) return "its int8 P V takes MXFP4 codes only (an MXFP8 P V runs on cl-tiled)";
    if (call->desc.allow_non_finite) return "non-finite propagation needs the fp32 path";
    if (call->bc != 32 && call->bc != 64 && call->bc != 128) return "it supports bc 32, 64 and 128";
    if (!mxa_cl_mma_stages(d, (int)call->q.d, call->bc)) return "this bc and D do not fit the local memory";
    return NULL;
}

/* A host side array uploaded (without waiting: the call's host memory outlives the work) into
 * `slot`, or a buffer of the device; absent: a placeholder the kernel never reads. */
static mxa_status side_in(run *r, const mxa_side_array *a, size_t esize, int slot, side *out)
{
    cl_impl *d = r->d;
    const cl_ulong plane = (cl_ulong)a->nq * (cl_ulong)a->nk;
    memset(out, 0, sizeof *out);
    out->mem = r->q;
    if (!a->host && !a->buffer) return MXA_OK;
    out->bs = a->b == 1 ? 0 : (cl_ulong)a->h * plane;
    out->hs = a->h == 1 ? 0 : plane;
    if (a->buffer) {
        const cl_buffer *b = a->buffer;
        out->mem = b->mem;
        out->off = (b->base + a->offset) / esize;
        return MXA_OK;
    }
    const size_t bytes = (size_t)(a->b * a->h) * (size_t)plane * esize;
    mxa_status st = mxa_cl_scratch(d, slot, bytes, &out->mem);
    if (st) return st;
    const cl_event *wait = NULL;
    const cl_uint nwait = mxa_cl_take_wait(d, &wait);
    cl_int err = d->cl->EnqueueWriteBuffer(d->target, out->mem, CL_FALSE, 0, bytes, a->host, nwait, wait, NULL);
    return err == CL_SUCCESS ? MXA_OK : mxa_cl_fail(err, "clEnqueueWriteBuffer (bias or mask)");
}

/* The extras on the device: bias, mask, key lengths (one fill per batch: the host array may
 * be gone once the call returns), and the attention program's -D options for them. */
static mxa_status extras_in(run *r)
{
    cl_impl *d = r->d;
    const mxa_attention_call *call = r->call;
    mxa_status st;
    if ((st = side_in(r, &call->bias, sizeof(float), SCRATCH_BIAS, &r->bias)) ||
        (st = side_in(r, &call->mask, 1, SCRATCH_MASK, &r->mask)))
        return st;
    r->klen = r->q;
    if (call->key_lengths) {
        if ((st = mxa_cl_scratch(d, SCRATCH_KLEN, (size_t)r->s.b * sizeof(cl_int), &r->klen))) return st;
        for (cl_int b = 0; b < r->s.b; b++) {
            const cl_event *wait = NULL;
            const cl_uint nwait = mxa_cl_take_wait(d, &wait);
            cl_int err = d->cl->EnqueueFillBuffer(d->target, r->klen, &call->key_lengths[b], sizeof(cl_int),
                                                  (size_t)b * sizeof(cl_int), sizeof(cl_int), nwait, wait, NULL);
            if (err != CL_SUCCESS) return mxa_cl_fail(err, "clEnqueueFillBuffer (key lengths)");
        }
        r->has_klen = 1;
    }
    const int out = call->o_dtype == MXA_F16 ? 1 : call->o_dtype == MXA_BF16 ? 2 : 0;
    snprintf(r->extra_options, sizeof r->extra_options, "%s%s%s", out == 1 ? " -DMXA_OUT=1" : out == 2 ? " -DMXA_OUT=2" : "",
             call->bias.host || call->bias.buffer ? " -DMXA_BIAS" : "", call->mask.host || call->mask.buffer ? " -DMXA_MASK" : "");
    return MXA_OK;
}

/* A prepared K/V (call->kv) decoded into the K and V scratch slots as float32 [B*Hkv][Nk][D],
 * the layout mxa_cl_array_in gives the float32 inputs. */
static mxa_status kv_in(run *r)
{
    cl_impl *d = r->d;
    const mxa_kv_arrays *kv = &r->call->kv;
    const cl_buffer *src = kv->buffer;
    const size_t heads = (size_t)r->s.b * r->s.hkv, bytes = heads * r->s.nk * r->s.d * sizeof(float);
    const cl_int n32 = (cl_int)kv->nk32;
    cl_program prog = NULL;
    cl_kernel k = NULL;
    mxa_status st;
    if ((st = mxa_cl_scratch(d, SCRATCH_K, bytes, &r->k)) || (st = mxa_cl_scratch(d, SCRATCH_V, bytes, &r->v)) ||
        (st = mxa_cl_program(d, CL_FAMILY_PREP, "-cl-std=CL1.2", &prog)) || (st = mxa_cl_kernel(d, prog, "mxa_decode_kv", &k)))
        goto out;
    r->k_off = r->v_off = 0;
    for (cl_int transpose = 0; transpose < 2 && !st; transpose++) {
        const cl_ulong codes = src->base + kv->offset[2 * transpose], scales = src->base + kv->offset[2 * transpose + 1];
        const cl_mem dst = transpose ? r->v : r->k;
        cl_args a = {d->cl, k, 0, CL_SUCCESS};
        mxa_cl_arg(&a, sizeof src->mem, &src->mem);
        mxa_cl_arg(&a, sizeof codes, &codes);
        mxa_cl_arg(&a, sizeof src->mem, &src->mem);
        mxa_cl_arg(&a, sizeof scales, &scales);
        mxa_cl_arg(&a, sizeof r->s.nk, &r->s.nk);
        mxa_cl_arg(&a, sizeof r->s.d, &r->s.d);
        mxa_cl_arg(&a, sizeof n32, &n32);
        mxa_cl_arg(&a, sizeof transpose, &transpose);
        mxa_cl_arg(&a, sizeof dst, &dst);
        const size_t global[3] = {(size_t)r->s.d, (size_t)r->s.nk, heads};
        st = mxa_cl_launch(d, &a, 3, global, NULL, r->events, &r->nevents, "mxa_decode_kv");
    }
out:
    if (k) d->cl->ReleaseKernel(k);
    return st;
}

/* Enqueues the whole call on d->target: inputs, extras, kernels, and the reads of host
 * outputs (without waiting). The kernels' events are left in r->events; *variant is the
 * variant that ran. On failure the caller finishes the queue (queued uploads read host memory). */
static mxa_status enqueue_call(cl_impl *d, const mxa_attention_call *call, run *r, cl_variant *variant)
{
    memset(r, 0, sizeof *r);
    r->d = d;
    r->call = call;
    const int64_t rows = call->q.b * call->q.h * call->q.n;
    if (call->q.n > INT32_MAX / 2 || call->k.n > INT32_MAX / 2 || call->q.b * call->q.h > INT32_MAX)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "opencl attention: shape too large for one launch");
    if (call->desc.format != MXA_FORMAT_MXFP4)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "opencl: only the MXFP4 format is implemented");
    r->s = (shape){(cl_int)call->q.b, (cl_int)call->q.h, (cl_int)call->k.h, (cl_int)call->q.n,
                   (cl_int)call->k.n, (cl_int)call->q.d, 0, 0};
    r->rule = mxa_cl_rule_args(call->desc.rule);
    r->rotate[0] = call->desc.hadamard != 0;
    r->rotate[1] = call->desc.hadamard != 0 && !call->kv.buffer;
    r->in16[0] = mxa_input_code(call->q.dtype);
    r->in16[1] = mxa_input_code(call->k.dtype); /* float32 for K and V decoded from a prepared K/V */
    r->in16[2] = mxa_input_code(call->v.dtype);
    mxa_status st;
    if ((st = mxa_cl_array_in(d, &call->q, SCRATCH_Q, &r->q, &r->q_off))) return st;
    if (call->kv.buffer) st = kv_in(r);
    else if (!(st = mxa_cl_array_in(d, &call->k, SCRATCH_K, &r->k, &r->k_off)))
        st = mxa_cl_array_in(d, &call->v, SCRATCH_V, &r->v, &r->v_off);
    if (st || (st = extras_in(r))) return st;
    if (call->o.buffer) {
        const cl_buffer *b = call->o.buffer;
        r->o = b->mem;
        r->o_off = (b->base + call->o.offset) / (call->o_dtype == MXA_F32 ? sizeof(float) : sizeof(cl_ushort));
    } else if ((st = mxa_cl_scratch(d, SCRATCH_O, (size_t)rows * call->q.d * sizeof(float), &r->o))) {
        return st;
    }
    r->lse = r->q; /* never written without has_lse */
    if (call->lse_buffer) {
        const cl_buffer *b = call->lse_buffer;
        r->lse = b->mem;
        r->lse_off = (b->base + call->lse_offset) / sizeof(float);
        r->has_lse = 1;
    } else if (call->lse) {
        if ((st = mxa_cl_scratch(d, SCRATCH_LSE, (size_t)rows * sizeof(float), &r->lse))) return st;
        r->has_lse = 1;
    }

    cl_variant v = d->desc.variant;
    const int decoded = r->nevents; /* the decode's events, kept if the variant falls back */
    if (v == CL_VARIANT_MMA_PTX) {
        const char *why = mma_unsuitable(d, call);
        if (why) {
            MXA_LOG_D("opencl: %s not used for this call: %s", mxa_cl_variant_names[v], why);
            v = CL_VARIANT_TILED;
        } else if ((st = run_mma(r)) != MXA_OK && st != MXA_ERR_OUT_OF_MEMORY) {
            /* a driver that rejects the inline PTX: fall back for good, loudly */
            MXA_LOG_W("opencl: %s failed (%s); using %s from now on", mxa_cl_variant_names[v],
                      mxa_last_error_message(), mxa_cl_variant_names[CL_VARIANT_TILED]);
            d->desc.supported[CL_VARIANT_MMA_PTX] = 0;
            d->desc.variant = v = CL_VARIANT_TILED;
            for (int i = decoded; i < r->nevents; i++) d->cl->ReleaseEvent(r->events[i]);
            r->nevents = decoded;
            st = MXA_OK;
        }
    }
    if (st) return st;
    if (v == CL_VARIANT_TILED && (st = run_tiled(r))) return st;
    *variant = v;
    cl_int err = CL_SUCCESS;
    if (call->o.host)
        err = d->cl->EnqueueReadBuffer(d->target, r->o, CL_FALSE, 0, (size_t)rows * call->q.d * sizeof(float),
                                       call->o.host, 0, NULL, NULL);
    if (err == CL_SUCCESS && call->lse)
        err = d->cl->EnqueueReadBuffer(d->target, r->lse, CL_FALSE, 0, (size_t)rows * sizeof(float), call->lse, 0,
                                       NULL, NULL);
    return err == CL_SUCCESS ? MXA_OK : mxa_cl_fail(err, "clEnqueueReadBuffer (output)");
}

static void release_events(cl_impl *d, cl_event *events, int *count)
{
    for (int i = 0; i < *count; i++) d->cl->ReleaseEvent(events[i]);
    *count = 0;
}

mxa_status mxa_cl_attention_submit(void *impl, const mxa_attention_call *call, mxa_pending *pending)
{
    cl_impl *d = impl;
    mxa_cl_sync(d); /* one queue, shared scratch: the previous call completes first */
    d->target = d->queue;
    run r;
    cl_variant v = CL_VARIANT_TILED;
    mxa_status st = enqueue_call(d, call, &r, &v);
    if (st == MXA_OK && d->cl->Flush(d->queue) != CL_SUCCESS) st = mxa_cl_fail(CL_OUT_OF_RESOURCES, "clFlush");
    if (st) {
        d->cl->Finish(d->queue); /* host inputs must outlive queued uploads, also on failure */
        release_events(d, r.events, &r.nevents);
        return st;
    }
    cl_inflight *f = &d->inflight;
    f->pending = pending;
    memcpy(f->events, r.events, sizeof r.events);
    f->nevents = r.nevents;
    f->variant = mxa_cl_variant_names[v];
    return MXA_OK;
}

void mxa_cl_attention_wait(void *impl, mxa_pending *pending)
{
    cl_impl *d = impl;
    cl_inflight *f = &d->inflight;
    if (pending->done || f->pending != pending) return;
    cl_int err = d->cl->Finish(d->queue);
    if (err == CL_SUCCESS && f->nevents) err = d->cl->WaitForEvents((cl_uint)f->nevents, f->events);
    if (err != CL_SUCCESS) {
        pending->status = mxa_cl_fail(err, "opencl attention (running)");
        snprintf(pending->message, sizeof pending->message, "%s", mxa_last_error_message());
        release_events(d, f->events, &f->nevents);
    } else {
        pending->status = MXA_OK;
        snprintf(pending->info.variant, sizeof pending->info.variant, "%s", f->variant);
        pending->info.kernel_seconds = mxa_cl_events_seconds(d, f->events, f->nevents);
        f->nevents = 0;
    }
    pending->done = 1;
    f->pending = NULL;
}

mxa_status mxa_cl_attention(void *impl, const mxa_attention_call *call, mxa_attention_info *info)
{
    mxa_pending p;
    memset(&p, 0, sizeof p);
    p.info.kernel_seconds = -1.0;
    mxa_status st = mxa_cl_attention_submit(impl, call, &p);
    if (st) return st;
    mxa_cl_attention_wait(impl, &p);
    if (p.status) return mxa_fail(p.status, "%s", p.message);
    snprintf(info->variant, sizeof info->variant, "%s", p.info.variant);
    info->kernel_seconds = p.info.kernel_seconds;
    return MXA_OK;
}

mxa_status mxa_cl_attention_enqueue(cl_impl *d, const mxa_attention_call *call, cl_event *done)
{
    run r;
    cl_variant v = CL_VARIANT_TILED;
    mxa_status st = enqueue_call(d, call, &r, &v);
    if (st == MXA_OK && r.nevents == 0) st = mxa_fail(MXA_ERR_INTERNAL, "opencl attention: no command was enqueued");
    if (st) {
        release_events(d, r.events, &r.nevents);
        return st;
    }
    *done = r.events[--r.nevents]; /* the attention kernel: the last command (in order) */
    release_events(d, r.events, &r.nevents);
    return MXA_OK;
}
