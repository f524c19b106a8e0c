/*
 * Attention on a Vulkan device: prepare Q/K (rotate + quantize along D) and V (quantize
 * along tokens) into scratch buffers in the form the chosen kernel reads, then run it.
 * The kernel and its shapes come from vk_select.c (a pure function of the capability
 * record); this file maps the plan onto prep kernels, buffers and specialization constants:
 *   coopmat-khr-i8 / -f16        attn_coopmat_khr.comp (register softmax, quad layout)
 *   coopmat-khr-i8-smem / -f16-smem  attn_coopmat_khr_smem.comp (any layout)
 *   intdot                       attn_intdot.comp (packed int8 dot products)
 *   scalar                       attn_scalar.comp (one invocation per query row)
 * Everything is recorded into one command buffer: mxa's own (submitted once, waited for now
 * or, for mxa_attention_async, later) or the application's (mxa_vulkan_attention_record).
 * The prepared arrays live in one workspace buffer, each at an aligned offset.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "vk_common.h"
#include "../../runtime/env.h"
#include "../../runtime/hadamard.h"
#include "../../runtime/log.h"
#include "../../runtime/status.h"

void vk_rule_params(mxa_rule rule, uint32_t *kind, uint32_t *t);

/* scratch slots: the host inputs of a synchronous call, and its workspace */
enum { S_QIN, S_KIN, S_VIN, S_BIAS, S_MASK, S_WS };

/* the arrays of a workspace */
enum { W_QP, W_KP, W_VP, W_QS, W_KS, W_VS, W_VMAX, W_LSE, W_O32, W_KEYLEN, W_K32, W_V32, W_COUNT };

void vk_select_opts_from_env(vk_select_opts *o)
{
    o->kernel = mxa_env_kernel();
    o->shape = mxa_env_coopmat_shape();
    o->disable_coopmat = mxa_env_flag("MXA_DISABLE_COOPMAT");
    o->disable_int_dot = mxa_env_flag("MXA_DISABLE_INT_DOT");
    o->no_pipe = !mxa_env_bool("MXA_VULKAN_PIPE", 1);
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
        sc.pv_mxfp8 = call->desc.pv_format == MXA_PV_MXFP8;
        sc.causal = call->desc.causal != 0;
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

/* How a plan runs: its attention kernel and the form of its inputs. */
typedef struct plan_kernels {
    vk_kernel attn, prep_qk, prep_v;
    int qk_esize, v_esize; /* bytes per prepared Q/K and V element */
    int qk_i8;             /* Q/K scales per 32-block (else per row) */
    int v_transposed;      /* V^T [heads, D, n_pad] */
    int v_block_scales;    /* intdot: V scales per (column, 32-token block); i8pv: factors */
    int v_aligned;         /* i8pv: V codes on each column's unit, the column maxima and tile flags bound */
} plan_kernels;

static plan_kernels kernels_of(vk_variant_id id)
{
    switch (id) {
    case VK_V_KHR_I8: return (plan_kernels){VK_K_ATTN_COOPMAT_KHR_I8, VK_K_PREP_QK_I8, VK_K_PREP_V_F16, 1, 2, 1, 1, 0, 0};
    case VK_V_KHR_F16: return (plan_kernels){VK_K_ATTN_COOPMAT_KHR, VK_K_PREP_QK_F16, VK_K_PREP_V_F16, 2, 2, 0, 1, 0, 0};
    case VK_V_KHR_I8_SMEM: return (plan_kernels){VK_K_ATTN_COOPMAT_KHR_SMEM_I8, VK_K_PREP_QK_I8, VK_K_PREP_V_F16, 1, 2, 1, 1, 0, 0};
    case VK_V_KHR_F16_SMEM: return (plan_kernels){VK_K_ATTN_COOPMAT_KHR_SMEM, VK_K_PREP_QK_F16, VK_K_PREP_V_F16, 2, 2, 0, 1, 0, 0};
    case VK_V_INTDOT: return (plan_kernels){VK_K_ATTN_INTDOT, VK_K_PREP_QK_I8, VK_K_PREP_V_I8, 1, 1, 1, 1, 1, 0};
    case VK_V_KHR_I8PV: return (plan_kernels){VK_K_ATTN_COOPMAT_KHR_I8PV, VK_K_PREP_QK_I8, VK_K_PREP_V_I8A, 1, 1, 1, 1, 1, 1};
    default: return (plan_kernels){VK_K_ATTN_SCALAR, VK_K_PREP_QK_F32, VK_K_PREP_V_F32, 4, 4, 0, 0, 0, 0};
    }
}

/* A call's plan, kernels and workspace layout (each array at an aligned offset). */
typedef struct call_layout {
    vk_plan plan;
    plan_kernels kern;
    uint64_t b, h, hkv, nq, nk, d, nq_pad, nk_pad;
    VkDeviceSize off[W_COUNT], size[W_COUNT], total;
} call_layout;

static mxa_status layout_call(const vk_device *dev, const mxa_attention_call *call, call_layout *L)
{
    vk_plan_call(dev->probe, call, &L->plan);
    L->kern = kernels_of(L->plan.id);
    const int scalar = L->plan.id == VK_V_SCALAR;
    L->b = (uint64_t)call->q.b, L->h = (uint64_t)call->q.h, L->hkv = (uint64_t)call->k.h;
    L->nq = (uint64_t)call->q.n, L->nk = (uint64_t)call->k.n, L->d = (uint64_t)call->q.d;
    L->nq_pad = scalar ? L->nq : round_up(L->nq, L->plan.rows_per_group);
    L->nk_pad = round_up(L->nk, (uint64_t)call->bc);
    const uint64_t b = L->b, h = L->h, hkv = L->hkv, d = L->d, rows = b * h * L->nq;
    if ((b * h * L->nq_pad + b * hkv * L->nk_pad) * d >= (1ull << 31))
        return mxa_fail(MXA_ERR_UNSUPPORTED, "vulkan attention: the problem exceeds the kernels' 32-bit indexing");
    const uint64_t nb = L->kern.qk_i8 ? d / 32 : 1; /* Q/K scales per row */
    const uint64_t vs_count = L->kern.v_block_scales ? b * hkv * d * (L->nk_pad / 32) : b * hkv * d;
    const int o32 = !call->o.buffer || call->o_dtype != MXA_F32;
    const VkDeviceSize sizes[W_COUNT] = {
        [W_QP] = b * h * L->nq_pad * d * (uint64_t)L->kern.qk_esize,
        [W_KP] = b * hkv * L->nk_pad * d * (uint64_t)L->kern.qk_esize,
        [W_VP] = b * hkv * L->nk_pad * d * (uint64_t)L->kern.v_esize,
        [W_QS] = b * h * L->nq_pad * nb * 4,
        [W_KS] = b * hkv * L->nk_pad * nb * 4,
        [W_VS] = vs_count * 4,
        [W_VMAX] = b * hkv * (d + (L->kern.v_aligned ? L->nk_pad / 64 : 0)) * 4, /* + i8pv's tile flags */
        [W_LSE] = call->lse_buffer ? 0 : rows * 4,
        [W_O32] = o32 ? rows * d * 4 : 0,
        [W_KEYLEN] = call->key_lengths ? b * 4 : 0,
        [W_K32] = call->kv.buffer ? b * hkv * L->nk * d * 4 : 0, /* pre-quantized K/V, decoded */
        [W_V32] = call->kv.buffer ? b * hkv * L->nk * d * 4 : 0,
    };
    const VkDeviceSize align = dev->storage_align > 16 ? dev->storage_align : 16;
    L->total = 0;
    for (int i = 0; i < W_COUNT; i++) {
        L->off[i] = L->total;
        L->size[i] = sizes[i];
        L->total += round_up(sizes[i] ? sizes[i] : 16, align);
    }
    return MXA_OK;
}

/* Where the attention reads and writes: device buffers and byte offsets inside them. */
typedef struct call_buffers {
    const vk_buffer *in[5]; /* q, k, v, bias, mask (the last two may be NULL) */
    size_t in_off[5];
    const vk_buffer *o, *lse; /* NULL: the workspace's */
    size_t o_off, lse_off;
} call_buffers;

enum { IN_Q, IN_K, IN_V, IN_BIAS, IN_MASK };

/* Records prep + attention (+ the 16-bit conversion) of a call into a batch. */
static mxa_status record(vk_batch *batch, const mxa_attention_call *call, const call_layout *L, const vk_buffer *ws,
                         const call_buffers *cb)
{
    vk_device *dev = batch->dev;
    const mxa_attention_desc *desc = &call->desc;
    const plan_kernels kern = L->kern;
    const uint64_t b = L->b, h = L->h, hkv = L->hkv, nq = L->nq, nk = L->nk, d = L->d;
    const uint64_t nq_pad = L->nq_pad, nk_pad = L->nk_pad;
    vk_buffer w[W_COUNT];
    for (int i = 0; i < W_COUNT; i++) w[i] = vk_buffer_view(ws, L->off[i], L->size[i] ? L->size[i] : 16);
    const vk_buffer *ob = cb->o && call->o_dtype == MXA_F32 ? cb->o : &w[W_O32];
    const vk_buffer *lb = cb->lse ? cb->lse : &w[W_LSE];
    const uint32_t ooff = ob == cb->o ? vk_elem_offset(dev, ob, cb->o_off) : 0;
    const uint32_t loff = cb->lse ? vk_elem_offset(dev, lb, cb->lse_off) : 0;
    const uint32_t extras = (call->bias.host || call->bias.buffer ? 1u : 0u) | (call->mask.host || call->mask.buffer ? 2u : 0u) |
                            (call->key_lengths ? 4u : 0u);
    const vk_buffer *bias = cb->in[IN_BIAS] ? cb->in[IN_BIAS] : &w[W_QP];
    const vk_buffer *mask = cb->in[IN_MASK] ? cb->in[IN_MASK] : &w[W_QP];
    const vk_buffer *keylen = call->key_lengths ? &w[W_KEYLEN] : &w[W_QP];
    const uint64_t plane = nq * nk;
    const uint32_t bias_off = cb->in[IN_BIAS] ? vk_elem_offset(dev, bias, cb->in_off[IN_BIAS]) : 0;
    const uint32_t mask_off = cb->in[IN_MASK] ? (uint32_t)(mask->base % dev->storage_align + cb->in_off[IN_MASK]) : 0;
    if ((uint64_t)bias_off + (uint64_t)call->bias.b * (uint64_t)call->bias.h * plane > UINT32_MAX ||
        (uint64_t)mask_off + (uint64_t)call->mask.b * (uint64_t)call->mask.h * plane > UINT32_MAX)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "vulkan attention: the bias or mask exceeds the kernels' 32-bit indexing");

    mxa_status st;
    uint32_t gx, gy;
    call_buffers in = *cb;
    if (call->kv.buffer) { /* decode the prepared K (rotated) and V into the workspace first */
        const vk_buffer *kvb = (const vk_buffer *)call->kv.buffer;
        const uint64_t kblocks = d / 32, vblocks = (uint64_t)call->kv.nk32 / 32, krows = b * hkv * nk, vrows = b * hkv * d;
        vk_buffer parts[4];
        const uint64_t sizes[4] = {krows * kblocks * 16, round_up(krows * kblocks, 4), vrows * vblocks * 16,
                                   round_up(vrows * vblocks, 4)};
        for (int i = 0; i < 4; i++) parts[i] = vk_buffer_view(kvb, call->kv.offset[i], sizes[i]);
        struct {
            uint32_t rows, blocks, n, d;
        } pk_ = {(uint32_t)krows, (uint32_t)kblocks, 0, 0}, pv_ = {(uint32_t)vrows, (uint32_t)vblocks, (uint32_t)nk, (uint32_t)d};
        const int32_t plain[VK_SPEC_COUNT] = {0}, transposed[VK_SPEC_COUNT] = {1};
        const vk_buffer *bk_[3] = {&parts[0], &parts[1], &w[W_K32]}, *bv_[3] = {&parts[2], &parts[3], &w[W_V32]};
        vk_grid_1d(krows * kblocks, 64, &gx, &gy);
        if ((st = vk_batch_dispatch(batch, VK_K_DEQUANT_KV, plain, 0, bk_, 3, &pk_, sizeof pk_, gx, gy, 1))) return st;
        vk_grid_1d(vrows * vblocks, 64, &gx, &gy);
        if ((st = vk_batch_dispatch(batch, VK_K_DEQUANT_KV, transposed, 0, bv_, 3, &pv_, sizeof pv_, gx, gy, 1))) return st;
        in.in[IN_K] = &w[W_K32], in.in_off[IN_K] = 0;
        in.in[IN_V] = &w[W_V32], in.in_off[IN_V] = 0;
        cb = &in;
    }
    /* q, k, v: float32, or a 16-bit device buffer (prep_input.glsl); K and V decoded above are float32 */
    const mxa_dtype in_dtype[3] = {call->q.dtype, call->k.dtype, call->v.dtype};
    const size_t in_size[3] = {mxa_dtype_size(in_dtype[0]), mxa_dtype_size(in_dtype[1]), mxa_dtype_size(in_dtype[2])};
    uint32_t kind, t;
    vk_rule_params(desc->rule, &kind, &t);
    const uint32_t pv_kind = desc->pv_format == MXA_PV_MXFP8 ? 2u : kind; /* P and V: kind 2 is MXFP8 (mxfp4.glsl) */
    const uint32_t qk = (desc->quantize & MXA_QUANT_QK) != 0, qv = (desc->quantize & MXA_QUANT_V) != 0;
    const uint32_t qpq = (desc->quantize & MXA_QUANT_P) != 0, pnq = desc->placement == MXA_PLACEMENT_PNQ;
    struct {
        uint32_t rows_pad, n, n_pad, x_offset, hadamard, quant, kind, t;
        float norm;
    } pq = {(uint32_t)(b * h * nq_pad), (uint32_t)nq, (uint32_t)nq_pad, vk_elem_offset_of(dev, cb->in[IN_Q], cb->in_off[IN_Q], in_size[IN_Q]),
            desc->hadamard != 0, qk, kind, t, mxa_hadamard_norm((int)d)},
      pk = {(uint32_t)(b * hkv * nk_pad), (uint32_t)nk, (uint32_t)nk_pad, vk_elem_offset_of(dev, cb->in[IN_K], cb->in_off[IN_K], in_size[IN_K]),
            desc->hadamard != 0 && !call->kv.buffer, qk, kind, t, mxa_hadamard_norm((int)d)};
    struct {
        uint32_t heads, n, n_pad, x_offset, quant, kind, t, pass, transpose, hkv;
    } pv = {(uint32_t)(b * hkv), (uint32_t)nk, (uint32_t)nk_pad, vk_elem_offset_of(dev, cb->in[IN_V], cb->in_off[IN_V], in_size[IN_V]),
            qv, pv_kind, t, 1, (uint32_t)kern.v_transposed, (uint32_t)hkv};
    int32_t spec_d[VK_SPEC_COUNT] = {(int32_t)d};
    if (call->key_lengths && (st = vk_batch_update(batch, &w[W_KEYLEN], call->key_lengths, b * 4))) return st;
    /* the prep kernels write the padding rows/tokens as zeros themselves; the V column
     * maxima start at 0 ("no block") */
    if ((st = vk_batch_fill(batch, &w[W_VMAX], L->size[W_VMAX]))) return st;
    const vk_buffer *bq[3] = {cb->in[IN_Q], &w[W_QP], &w[W_QS]}, *bk[3] = {cb->in[IN_K], &w[W_KP], &w[W_KS]};
    const vk_buffer *bv[5] = {cb->in[IN_V], &w[W_VP], &w[W_VS], &w[W_VMAX], keylen};
    /* The preparations run in two rounds without barriers inside them (one pipeline drain and
     * fill per round): K's with V's first pass, whose barrier orders them before what reads
     * them, then Q's with V's second pass, which needs the first. Q's in the second round
     * balances the two (a V pass reads as much as a Q or K prep). */
    batch->overlap = 1;
    if ((st = vk_prep_qk_dispatch(batch, kern.prep_qk, VK_PREP_QK_AUTO, b * hkv * nk_pad, d, in_dtype[IN_K], bk, &pk, sizeof pk))) return st;
    spec_d[13] = (int32_t)(extras & 4u); /* prep_v: the key lengths only */
    spec_d[VK_SPEC_IN_TYPE] = mxa_input_code(in_dtype[IN_V]);
    if (kern.prep_v == VK_K_PREP_V_F16 || kern.prep_v == VK_K_PREP_V_I8A) { /* pass 0: each V column's largest block exponent */
        pv.pass = 0;
        if ((st = vk_prep_v_dispatch(batch, kern.prep_v, b * hkv, nk_pad, d, spec_d, bv, &pv, sizeof pv))) return st;
        pv.pass = 1;
    }
    batch->overlap = 1;
    if ((st = vk_prep_qk_dispatch(batch, kern.prep_qk, VK_PREP_QK_AUTO, b * h * nq_pad, d, in_dtype[IN_Q], bq, &pq, sizeof pq))) return st;
    if ((st = vk_prep_v_dispatch(batch, kern.prep_v, b * hkv, nk_pad, d, spec_d, bv, &pv, sizeof pv))) return st;
    const int32_t mode = (int32_t)(qpq | pnq << 1 | kind << 2 | (desc->pv_format == MXA_PV_MXFP8 ? 8u : 0u));
    const uint32_t bias_sb = call->bias.b == 1 ? 0u : (uint32_t)((uint64_t)call->bias.h * plane);
    const uint32_t bias_sh = call->bias.h == 1 ? 0u : (uint32_t)plane;
    const uint32_t mask_sb = call->mask.b == 1 ? 0u : (uint32_t)((uint64_t)call->mask.h * plane);
    const uint32_t mask_sh = call->mask.h == 1 ? 0u : (uint32_t)plane;
    const vk_plan *plan = &L->plan;
    if (plan->id != VK_V_SCALAR) {
        struct {
            uint32_t h, hkv, nq, nk, nq_pad, nk_pad, o_offset, causal, quant_p, pnq, kind, t;
            float scale;
            uint32_t lse_offset, bias_offset, bias_sb, bias_sh, mask_offset, mask_sb, mask_sh;
        } pa = {(uint32_t)h, (uint32_t)hkv, (uint32_t)nq, (uint32_t)nk, (uint32_t)nq_pad, (uint32_t)nk_pad, ooff,
                (uint32_t)desc->causal, qpq, pnq, kind, t, desc->scale, loff, bias_off, bias_sb, bias_sh, mask_off,
                mask_sb, mask_sh};
        int32_t spec[VK_SPEC_COUNT] = {(int32_t)d, call->bc, (int32_t)plan->subgroups, (int32_t)plan->local_size};
        if (plan->id == VK_V_INTDOT) {
            spec[4] = mode;
            spec[5] = (int32_t)plan->rows_per_group;
            for (int i = 0; i < 4; i++) spec[6 + i] = (int32_t)plan->tune[i];
        } else { /* attn_coopmat_khr*.comp */
            /* constant 5: query rows per subgroup, in either kernel; 9: the register kernel's PIPE, the smem kernel's PK */
            const int reg_kernel = plan->id == VK_V_KHR_I8 || plan->id == VK_V_KHR_F16 || plan->id == VK_V_KHR_I8PV;
            const int32_t rest[9] = {mode, (int32_t)(plan->rows_per_group / plan->subgroups), (int32_t)plan->s_shape.n, (int32_t)plan->s_shape.k,
                                     (int32_t)plan->pv_shape.n, (int32_t)(reg_kernel ? plan->tune[0] : plan->pv_shape.k), (int32_t)plan->s_map,
                                     (int32_t)plan->o_map, (int32_t)plan->a_map};
            memcpy(spec + 4, rest, sizeof rest);
        }
        spec[13] = (int32_t)(extras | (desc->causal ? 8u : 0u)); /* bit 3: tile skipping (extras.glsl) */
        const vk_buffer *ba[12] = {&w[W_QP], &w[W_KP], &w[W_VP], &w[W_QS], &w[W_KS], &w[W_VS],
                                   ob, lb, bias, mask, keylen, &w[W_VMAX]};
        st = vk_batch_dispatch(batch, kern.attn, spec, plan->subgroup_size, ba, 12, &pa, sizeof pa,
                               (uint32_t)(nq_pad / plan->rows_per_group), (uint32_t)h, (uint32_t)b);
    } else {
        struct {
            uint32_t h, hkv, nq, nk, nk_pad, o_offset, causal, quant_p, pnq, kind, t, rows;
            float scale;
            uint32_t lse_offset, bias_offset, bias_sb, bias_sh, mask_offset, mask_sb, mask_sh;
        } pa = {(uint32_t)h, (uint32_t)hkv, (uint32_t)nq, (uint32_t)nk, (uint32_t)nk_pad, ooff, (uint32_t)desc->causal,
                qpq, pnq, pv_kind, t, (uint32_t)(b * h * nq), desc->scale, loff, bias_off, bias_sb, bias_sh, mask_off,
                mask_sb, mask_sh};
        int32_t spec[VK_SPEC_COUNT] = {(int32_t)d, call->bc};
        spec[13] = (int32_t)extras;
        const vk_buffer *ba[11] = {&w[W_QP], &w[W_KP], &w[W_VP], ob, lb, &w[W_QP], &w[W_QP], &w[W_QP], bias, mask, keylen};
        vk_grid_1d(b * h * nq, 1, &gx, &gy); /* one workgroup per query row */
        st = vk_batch_dispatch(batch, VK_K_ATTN_SCALAR, spec, 0, ba, 11, &pa, sizeof pa, gx, gy, 1);
    }
    if (st || !cb->o || call->o_dtype == MXA_F32) return st;
    /* a 16-bit output: rounded once from the fp32 result */
    if (cb->o_off % 4 || (cb->o->base % dev->storage_align) % 4)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "vulkan attention: a 16-bit output needs a 4-byte aligned offset");
    const uint64_t pairs = b * h * nq * d / 2;
    struct {
        uint32_t pairs, y_offset;
    } pc = {(uint32_t)pairs, vk_elem_offset(dev, cb->o, cb->o_off)};
    const int32_t spec_c[VK_SPEC_COUNT] = {call->o_dtype == MXA_BF16};
    const vk_buffer *bc[2] = {&w[W_O32], cb->o};
    vk_grid_1d(pairs, 64, &gx, &gy);
    return vk_batch_dispatch(batch, VK_K_CONVERT_OUT, spec_c, 0, bc, 2, &pc, sizeof pc, gx, gy, 1);
}

mxa_status vk_attention_workspace(const vk_device *dev, const mxa_attention_call *call, size_t *bytes)
{
    call_layout L;
    mxa_status st = layout_call(dev, call, &L);
    if (!st) *bytes = (size_t)L.total;
    return st;
}

/* An input as a device buffer: the caller's own, or host data uploaded to a scratch slot. */
static mxa_status upload(vk_device *dev, const void *host, void *buffer, size_t offset, size_t bytes, int slot,
                         const vk_buffer **buf, size_t *off)
{
    *off = offset;
    if (buffer || !host) {
        *buf = (const vk_buffer *)buffer;
        return MXA_OK;
    }
    vk_buffer *s;
    mxa_status st = vk_scratch(dev, slot, bytes, &s);
    *buf = s;
    *off = 0;
    return st ? st : vk_buffer_write(dev, s, 0, host, bytes);
}

static size_t array_bytes(const mxa_array *a) { return (size_t)(a->b * a->h * a->n * a->d) * 4; }
static size_t side_bytes(const mxa_side_array *a, size_t esize) { return (size_t)(a->b * a->h * a->nq * a->nk) * esize; }

mxa_status vk_attention_submit(vk_device *dev, const mxa_attention_call *call, mxa_pending *pending)
{
    vk_complete_inflight(dev);
    call_layout L;
    call_buffers cb = {0};
    mxa_status st = layout_call(dev, call, &L);
    if (st) return st;
    snprintf(pending->info.variant, sizeof pending->info.variant, "%s", L.plan.variant);
    if ((st = upload(dev, call->q.host, call->q.buffer, call->q.offset, array_bytes(&call->q), S_QIN, &cb.in[IN_Q], &cb.in_off[IN_Q])) ||
        (st = upload(dev, call->k.host, call->k.buffer, call->k.offset, array_bytes(&call->k), S_KIN, &cb.in[IN_K], &cb.in_off[IN_K])) ||
        (st = upload(dev, call->v.host, call->v.buffer, call->v.offset, array_bytes(&call->v), S_VIN, &cb.in[IN_V], &cb.in_off[IN_V])) ||
        (st = upload(dev, call->bias.host, call->bias.buffer, call->bias.offset, side_bytes(&call->bias, 4), S_BIAS,
                     &cb.in[IN_BIAS], &cb.in_off[IN_BIAS])) ||
        (st = upload(dev, call->mask.host, call->mask.buffer, call->mask.offset, side_bytes(&call->mask, 1),
                     S_MASK, &cb.in[IN_MASK], &cb.in_off[IN_MASK])))
        return st;
    cb.o = (const vk_buffer *)call->o.buffer;
    cb.o_off = call->o.offset;
    cb.lse = (const vk_buffer *)call->lse_buffer;
    cb.lse_off = call->lse_offset;
    vk_buffer *ws;
    if ((st = vk_scratch(dev, S_WS, L.total, &ws))) return st;
    vk_batch batch;
    const double t0 = now_seconds();
    if ((st = vk_batch_begin(dev, 1, &batch)) || (st = record(&batch, call, &L, ws, &cb))) return st;
    const double t_recorded = now_seconds();
    if ((st = vk_batch_submit_nowait(&batch))) return st;
    struct vk_inflight *f = &dev->inflight;
    memset(f, 0, sizeof *f);
    f->t_recorded = t_recorded;
    f->t_submitted = now_seconds();
    f->pending = pending;
    f->timed = batch.timed;
    f->t0 = t0;
    if (call->o.host) {
        f->o_host = call->o.host;
        f->o_src = vk_buffer_view(ws, L.off[W_O32], L.size[W_O32]);
        f->o_bytes = L.size[W_O32];
    }
    if (call->lse) {
        f->lse_host = call->lse;
        f->lse_src = vk_buffer_view(ws, L.off[W_LSE], L.size[W_LSE]);
        f->lse_bytes = L.size[W_LSE];
    }
    return MXA_OK;
}

void vk_complete_inflight(vk_device *dev)
{
    struct vk_inflight f = dev->inflight;
    if (!f.pending) return;
    memset(&dev->inflight, 0, sizeof dev->inflight); /* the reads below must not wait for it again */
    double seconds = -1.0;
    mxa_status st = vk_batch_finish(dev, f.timed, &seconds);
    /* where a call's time goes beyond the device's: the submit-to-fence time less the device
     * time is the launch and the wake-up (docs/speed-log.md, 2026-12-07) */
    MXA_LOG_D("vulkan call: recorded in %.3f ms, submitted in %.3f ms, fence and timestamps read %.3f ms after the "
              "submission; device time %.3f ms",
              1e3 * (f.t_recorded - f.t0), 1e3 * (f.t_submitted - f.t_recorded), 1e3 * (now_seconds() - f.t_submitted),
              seconds >= 0.0 ? 1e3 * seconds : -1.0);
    if (!st && f.o_host) st = vk_buffer_read(dev, &f.o_src, 0, f.o_host, f.o_bytes);
    if (!st && f.lse_host) st = vk_buffer_read(dev, &f.lse_src, 0, f.lse_host, f.lse_bytes);
    f.pending->info.kernel_seconds = seconds >= 0.0 ? seconds : now_seconds() - f.t0;
    f.pending->status = st;
    if (st) snprintf(f.pending->message, sizeof f.pending->message, "%s", mxa_last_error_message());
    f.pending->done = 1;
}

mxa_status vk_attention(vk_device *dev, const mxa_attention_call *call, mxa_attention_info *info)
{
    mxa_pending pending;
    memset(&pending, 0, sizeof pending);
    mxa_status st = vk_attention_submit(dev, call, &pending);
    if (st) return st;
    vk_complete_inflight(dev);
    if (pending.status) return mxa_fail(pending.status, "%s", pending.message);
    snprintf(info->variant, sizeof info->variant, "%s", pending.info.variant);
    info->kernel_seconds = pending.info.kernel_seconds;
    return MXA_OK;
}

mxa_status vk_attention_record(vk_device *dev, VkCommandBuffer cmd, const mxa_attention_call *call, const vk_buffer *ws,
                               size_t ws_bytes)
{
    call_layout L;
    mxa_status st = layout_call(dev, call, &L);
    if (st) return st;
    if (!ws || ws_bytes < L.total)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT,
                        "vulkan record: the workspace has %zu bytes, this call needs %llu (mxa_vulkan_workspace_size; "
                        "pass a larger one or call mxa_vulkan_workspace_reserve)",
                        ws ? ws_bytes : (size_t)0, (unsigned long long)L.total);
    call_buffers cb = {.in = {(const vk_buffer *)call->q.buffer, (const vk_buffer *)call->k.buffer,
                              (const vk_buffer *)call->v.buffer, (const vk_buffer *)call->bias.buffer,
                              (const vk_buffer *)call->mask.buffer},
                       .in_off = {call->q.offset, call->k.offset, call->v.offset, call->bias.offset, call->mask.offset},
                       .o = (const vk_buffer *)call->o.buffer,
                       .o_off = call->o.offset,
                       .lse = (const vk_buffer *)call->lse_buffer,
                       .lse_off = call->lse_offset};
    vk_batch batch;
    if ((st = vk_batch_borrow(dev, cmd, &batch))) return st;
    return record(&batch, call, &L, ws, &cb);
}
