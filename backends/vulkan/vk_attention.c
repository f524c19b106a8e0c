/*
 * Attention on a Vulkan device: prepare Q/K (rotate + quantize along D) and V (quantize
 * along tokens) into scratch buffers in the form the chosen kernel reads, then run it.
 * The kernel and its shapes come from vk_select.c (a pure function of the capability
 * record); this file maps the plan onto prep kernels, buffers and specialization constants:
 *   coopmat-khr-i8 / -f16        attn_coopmat_khr.comp (register softmax, quad layout)
 *   coopmat-khr-i8-smem / -f16-smem  attn_coopmat_khr_smem.comp (any layout)
 *   intdot                       attn_intdot.comp (packed int8 dot products)
 *   scalar                       attn_scalar.comp (one invocation per query row)
 * Everything is recorded into one command buffer and submitted once.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "vk_common.h"
#include "../../runtime/env.h"
#include "../../runtime/hadamard.h"
#include "../../runtime/status.h"

void vk_rule_params(mxa_rule rule, uint32_t *kind, uint32_t *t);

enum { S_QIN, S_KIN, S_VIN, S_QP, S_KP, S_VP, S_QS, S_KS, S_VS, S_O, S_LSE, S_VMAX };

void vk_select_opts_from_env(vk_select_opts *o)
{
    o->kernel = mxa_env_kernel();
    o->shape = mxa_env_coopmat_shape();
    o->disable_coopmat = mxa_env_flag("MXA_DISABLE_COOPMAT");
    o->disable_int_dot = mxa_env_flag("MXA_DISABLE_INT_DOT");
    vk_select_opts_built(o);
}

void vk_plan_call(const vk_probe_data *probe, const mxa_attention_call *call, vk_plan *plan)
{
    vk_select_opts opts;
    vk_select_opts_from_env(&opts);
    vk_select_call sc;
    if (call) {
        sc.d = call->q.d;
        sc.bc = call->bc;
        sc.quantize_all = call->desc.quantize == MXA_QUANT_ALL;
    }
    vk_select(&probe->caps, call ? &sc : NULL, &opts, plan);
}

const char *vk_choose_variant(const vk_probe_data *probe, const mxa_attention_call *call, char *reason,
                              size_t reason_size)
{
    vk_plan plan;
    vk_plan_call(probe, call, &plan);
    snprintf(reason, reason_size, "%s", plan.reason);
    return plan.variant;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t round_up(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }

/* An input as a device buffer: the caller's own, or the host data uploaded to a scratch slot. */
static mxa_status input_buffer(vk_device *dev, const mxa_array *a, int slot, vk_buffer **buf, uint32_t *offset)
{
    if (a->buffer) {
        *buf = (vk_buffer *)a->buffer;
        *offset = (uint32_t)(a->offset / 4);
        return MXA_OK;
    }
    const size_t bytes = (size_t)(a->b * a->h * a->n * a->d) * 4;
    mxa_status st = vk_scratch(dev, slot, bytes, buf);
    *offset = 0;
    return st ? st : vk_buffer_write(dev, *buf, 0, a->host, bytes);
}

/* How a plan runs: its attention kernel and the form of its inputs. */
typedef struct plan_kernels {
    vk_kernel attn, prep_qk, prep_v;
    int qk_esize, v_esize; /* bytes per prepared Q/K and V element */
    int qk_i8;             /* Q/K scales per 32-block (else per row) */
    int v_transposed;      /* V^T [heads, D, n_pad] */
    int v_block_scales;    /* intdot: V scales per (column, 32-token block) */
} plan_kernels;

static plan_kernels kernels_of(vk_variant_id id)
{
    switch (id) {
    case VK_V_KHR_I8: return (plan_kernels){VK_K_ATTN_COOPMAT_KHR_I8, VK_K_PREP_QK_I8, VK_K_PREP_V_F16, 1, 2, 1, 1, 0};
    case VK_V_KHR_F16: return (plan_kernels){VK_K_ATTN_COOPMAT_KHR, VK_K_PREP_QK_F16, VK_K_PREP_V_F16, 2, 2, 0, 1, 0};
    case VK_V_KHR_I8_SMEM: return (plan_kernels){VK_K_ATTN_COOPMAT_KHR_SMEM_I8, VK_K_PREP_QK_I8, VK_K_PREP_V_F16, 1, 2, 1, 1, 0};
    case VK_V_KHR_F16_SMEM: return (plan_kernels){VK_K_ATTN_COOPMAT_KHR_SMEM, VK_K_PREP_QK_F16, VK_K_PREP_V_F16, 2, 2, 0, 1, 0};
    case VK_V_INTDOT: return (plan_kernels){VK_K_ATTN_INTDOT, VK_K_PREP_QK_I8, VK_K_PREP_V_I8, 1, 1, 1, 1, 1};
    default: return (plan_kernels){VK_K_ATTN_SCALAR, VK_K_PREP_QK_F32, VK_K_PREP_V_F32, 4, 4, 0, 0, 0};
    }
}

mxa_status vk_attention(vk_device *dev, const mxa_attention_call *call, mxa_attention_info *info)
{
    vk_plan plan;
    vk_plan_call(dev->probe, call, &plan);
    const plan_kernels kern = kernels_of(plan.id);
    const int scalar = plan.id == VK_V_SCALAR;
    const mxa_attention_desc *desc = &call->desc;
    const uint64_t b = (uint64_t)call->q.b, h = (uint64_t)call->q.h, hkv = (uint64_t)call->k.h;
    const uint64_t nq = (uint64_t)call->q.n, nk = (uint64_t)call->k.n, d = (uint64_t)call->q.d;
    const uint64_t nq_pad = scalar ? nq : round_up(nq, plan.rows_per_group), nk_pad = round_up(nk, (uint64_t)call->bc);
    const uint64_t nb = kern.qk_i8 ? d / 32 : 1; /* Q/K scales per row */
    if ((b * h * nq_pad + b * hkv * nk_pad) * d >= (1ull << 31))
        return mxa_fail(MXA_ERR_UNSUPPORTED, "vulkan attention: the problem exceeds the kernels' 32-bit indexing");
    snprintf(info->variant, sizeof info->variant, "%s", plan.variant);

    mxa_status st;
    vk_buffer *qin, *kin, *vin, *qp, *kp, *vp, *qs, *ks, *vs, *ob, *lb, *vmax;
    uint32_t qoff, koff, voff, ooff = 0;
    if ((st = input_buffer(dev, &call->q, S_QIN, &qin, &qoff)) || (st = input_buffer(dev, &call->k, S_KIN, &kin, &koff)) ||
        (st = input_buffer(dev, &call->v, S_VIN, &vin, &voff)))
        return st;
    const uint64_t vs_count = kern.v_block_scales ? b * hkv * d * (nk_pad / 32) : b * hkv * d;
    if ((st = vk_scratch(dev, S_QP, b * h * nq_pad * d * (uint64_t)kern.qk_esize, &qp)) ||
        (st = vk_scratch(dev, S_KP, b * hkv * nk_pad * d * (uint64_t)kern.qk_esize, &kp)) ||
        (st = vk_scratch(dev, S_VP, b * hkv * nk_pad * d * (uint64_t)kern.v_esize, &vp)) ||
        (st = vk_scratch(dev, S_QS, b * h * nq_pad * nb * 4, &qs)) || (st = vk_scratch(dev, S_KS, b * hkv * nk_pad * nb * 4, &ks)) ||
        (st = vk_scratch(dev, S_VS, vs_count * 4, &vs)) || (st = vk_scratch(dev, S_VMAX, b * hkv * d * 4, &vmax)) ||
        (st = vk_scratch(dev, S_LSE, b * h * nq * 4, &lb)))
        return st;
    if (call->o.buffer) {
        ob = (vk_buffer *)call->o.buffer;
        ooff = (uint32_t)(call->o.offset / 4);
    } else if ((st = vk_scratch(dev, S_O, b * h * nq * d * 4, &ob))) {
        return st;
    }

    uint32_t kind, t;
    vk_rule_params(desc->rule, &kind, &t);
    const uint32_t qk = (desc->quantize & MXA_QUANT_QK) != 0, qv = (desc->quantize & MXA_QUANT_V) != 0;
    const uint32_t qpq = (desc->quantize & MXA_QUANT_P) != 0, pnq = desc->placement == MXA_PLACEMENT_PNQ;
    struct {
        uint32_t rows_pad, n, n_pad, x_offset, hadamard, quant, kind, t;
        float norm;
    } pq = {(uint32_t)(b * h * nq_pad), (uint32_t)nq, (uint32_t)nq_pad, qoff, desc->hadamard != 0, qk, kind, t,
            mxa_hadamard_norm((int)d)},
      pk = {(uint32_t)(b * hkv * nk_pad), (uint32_t)nk, (uint32_t)nk_pad, koff, desc->hadamard != 0, qk, kind, t,
            mxa_hadamard_norm((int)d)};
    struct {
        uint32_t heads, n, n_pad, x_offset, quant, kind, t, pass, transpose;
    } pv = {(uint32_t)(b * hkv), (uint32_t)nk, (uint32_t)nk_pad, voff, qv, kind, t, 1, (uint32_t)kern.v_transposed};
    const int32_t spec_d[VK_SPEC_COUNT] = {(int32_t)d};
    uint32_t gx, gy;
    vk_batch batch;
    const double t0 = now_seconds();
    if ((st = vk_batch_begin(dev, 1, &batch))) return st;
    /* the prep kernels write the padding rows/tokens as zeros themselves; the V column
     * maxima start at 0 ("no block") */
    if ((st = vk_batch_fill(&batch, vmax, b * hkv * d * 4))) return st;
    vk_buffer *bq[3] = {qin, qp, qs}, *bk[3] = {kin, kp, ks}, *bv[4] = {vin, vp, vs, vmax};
    const uint32_t qk_rows = 64 / (uint32_t)(d / 32); /* prep_qk: an invocation per block of 32 */
    vk_grid_1d(b * h * nq_pad, qk_rows, &gx, &gy);
    if ((st = vk_batch_dispatch(&batch, kern.prep_qk, spec_d, 0, bq, 3, &pq, sizeof pq, gx, gy, 1))) return st;
    vk_grid_1d(b * hkv * nk_pad, qk_rows, &gx, &gy);
    if ((st = vk_batch_dispatch(&batch, kern.prep_qk, spec_d, 0, bk, 3, &pk, sizeof pk, gx, gy, 1))) return st;
    vk_grid_1d(b * hkv * (nk_pad / 32) * d, 64, &gx, &gy); /* prep_v: an invocation per column and block of 32 tokens */
    if (kern.prep_v == VK_K_PREP_V_F16) { /* pass 0: each V column's largest block exponent */
        pv.pass = 0;
        if ((st = vk_batch_dispatch(&batch, kern.prep_v, spec_d, 0, bv, 4, &pv, sizeof pv, gx, gy, 1))) return st;
        pv.pass = 1;
    }
    if ((st = vk_batch_dispatch(&batch, kern.prep_v, spec_d, 0, bv, 4, &pv, sizeof pv, gx, gy, 1))) return st;
    const int32_t mode = (int32_t)(qpq | pnq << 1 | kind << 2);
    if (!scalar) {
        struct {
            uint32_t h, hkv, nq, nk, nq_pad, nk_pad, o_offset, causal, quant_p, pnq, kind, t;
            float scale;
        } pa = {(uint32_t)h, (uint32_t)hkv, (uint32_t)nq, (uint32_t)nk, (uint32_t)nq_pad, (uint32_t)nk_pad, ooff,
                desc->causal != 0, qpq, pnq, kind, t, desc->scale};
        int32_t spec[VK_SPEC_COUNT] = {(int32_t)d, call->bc, (int32_t)plan.subgroups, (int32_t)plan.local_size};
        if (plan.id == VK_V_INTDOT) {
            spec[4] = mode;
            spec[5] = (int32_t)plan.rows_per_group;
            for (int i = 0; i < 4; i++) spec[6 + i] = (int32_t)plan.tune[i];
        } else { /* attn_coopmat_khr*.comp */
            const int32_t rest[9] = {mode, (int32_t)plan.s_shape.m, (int32_t)plan.s_shape.n, (int32_t)plan.s_shape.k,
                                     (int32_t)plan.pv_shape.n, (int32_t)plan.pv_shape.k, (int32_t)plan.s_map,
                                     (int32_t)plan.o_map, (int32_t)plan.a_map};
            memcpy(spec + 4, rest, sizeof rest);
        }
        vk_buffer *ba[8] = {qp, kp, vp, qs, ks, vs, ob, lb};
        st = vk_batch_dispatch(&batch, kern.attn, spec, plan.subgroup_size, ba, 8, &pa, sizeof pa,
                               (uint32_t)(nq_pad / plan.rows_per_group), (uint32_t)h, (uint32_t)b);
    } else {
        struct {
            uint32_t h, hkv, nq, nk, nk_pad, o_offset, causal, quant_p, pnq, kind, t, rows;
            float scale;
        } pa = {(uint32_t)h, (uint32_t)hkv, (uint32_t)nq, (uint32_t)nk, (uint32_t)nk_pad, ooff, desc->causal != 0,
                qpq, pnq, kind, t, (uint32_t)(b * h * nq), desc->scale};
        const int32_t spec[VK_SPEC_COUNT] = {(int32_t)d, call->bc};
        vk_buffer *ba[5] = {qp, kp, vp, ob, lb};
        vk_grid_1d(b * h * nq, 1, &gx, &gy); /* one workgroup per query row */
        st = vk_batch_dispatch(&batch, VK_K_ATTN_SCALAR, spec, 0, ba, 5, &pa, sizeof pa, gx, gy, 1);
    }
    double seconds = -1.0;
    if (st || (st = vk_batch_submit(&batch, &seconds))) return st;
    info->kernel_seconds = seconds >= 0.0 ? seconds : now_seconds() - t0;
    if (!call->o.buffer && (st = vk_buffer_read(dev, ob, 0, call->o.host, b * h * nq * d * 4))) return st;
    if (call->lse) st = vk_buffer_read(dev, lb, 0, call->lse, b * h * nq * 4);
    return st;
}
