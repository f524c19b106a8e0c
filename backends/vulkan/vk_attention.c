/*
 * Attention on a Vulkan device: prepare Q/K (rotate + quantize along D) and V
 * (quantize along tokens) into scratch buffers, then run one attention kernel:
 *   coopmat-nv-i8        S = Q K^T from NV cooperative matrix int8 16x16x32 -> int32
 *                        on 2 x the E2M1 values (exact, no fp16 range limit), P V as in
 *                        coopmat-nv-f16 (attn_coopmat_nv_reg.comp built with S_INT8);
 *                        on devices with that shape, for 64 <= D <= 128
 *   coopmat-nv-f16       NV cooperative matrix fp16 16x16x16 -> fp32 on the exact
 *                        MXFP4 values, rows/columns rescaled by a power of two so
 *                        every value is exact in fp16 (within the bound stated in
 *                        prep_qk.comp); online softmax in registers
 *                        (attn_coopmat_nv_reg.comp), on devices whose fragments pass
 *                        the layout check (vk_coopmat_layout.c)
 *   coopmat-nv-f16-smem  the same products, softmax through shared memory: any
 *                        fragment layout (attn_coopmat_nv.comp)
 *   scalar               one invocation per query row; runs anywhere (attn_scalar.comp)
 * Everything is recorded into one command buffer and submitted once.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "vk_common.h"
#include "../../runtime/env.h"
#include "../../runtime/hadamard.h"
#include "../../runtime/status.h"

#define SMEM_WARPS 4 /* attn_coopmat_nv.comp: 6 KiB of shared memory per subgroup */
#define REG_SHARED (36u * 1024u + 256u) /* its K and V^T tiles at D = 128 */

void vk_rule_params(mxa_rule rule, uint32_t *kind, uint32_t *t);

/* Subgroups of attn_coopmat_nv_reg.comp: at D > 64, 128 query rows share each K/V tile
 * load; at D <= 64 the smaller tiles leave registers for two 64-row workgroups per SM
 * (H200, N = 16384 D = 64: 155.6 against 116.2 TFLOP/s with 8 subgroups). */
static uint32_t reg_warps(int64_t d) { return d <= 64 ? 4u : 8u; }

enum { S_QIN, S_KIN, S_VIN, S_QP, S_KP, S_VP, S_QS, S_KS, S_VS, S_O, S_LSE, S_VMAX };

/* Whether the coopmat kernel can run on the device at all; why not in `why`. */
static int coopmat_device_ok(const vk_probe_data *p, const char **why)
{
    if (!vk_kernel_available(VK_K_ATTN_COOPMAT_NV) && !vk_kernel_available(VK_K_ATTN_COOPMAT_NV_REG)) *why = "the installed glslang could not compile the NV coopmat shader";
    else if (!(p->flags & MXA_VK_F_COOPMAT_NV)) *why = "no VK_NV_cooperative_matrix";
    else if (!(p->flags & MXA_VK_F_NV_F16_161616)) *why = "no fp16 16x16x16 cooperative matrix shape";
    else if (!(p->flags & MXA_VK_F_STORAGE16) || !(p->flags & MXA_VK_F_FP16)) *why = "no fp16 arithmetic/storage";
    else if (!(p->flags & MXA_VK_F_SUBGROUP_SHUFFLE) || !(p->flags & MXA_VK_F_SUBGROUP_ARITH)) *why = "no subgroup shuffle/vote";
    else if (p->subgroup_size != 32) *why = "the kernel maps 16 rows x 2 key blocks onto a subgroup of exactly 32";
    else if (p->max_shared < 6u * 1024u * SMEM_WARPS) *why = "too little shared memory";
    else return 1;
    return 0;
}

const char *vk_choose_variant(const vk_probe_data *probe, const mxa_attention_call *call, char *reason,
                              size_t reason_size)
{
    const char *forced = mxa_env_kernel();
    const char *why = "";
    int coop = coopmat_device_ok(probe, &why);
    if (coop && mxa_env_flag("MXA_DISABLE_COOPMAT")) {
        coop = 0;
        why = "MXA_DISABLE_COOPMAT=1";
    }
    if (coop && call) {
        if (call->desc.quantize != MXA_QUANT_ALL) coop = 0, why = "the recipe leaves some tensor unquantized (fp16 would round it)";
        else if (call->bc != 64) coop = 0, why = "the coopmat kernel is built for bc = 64";
        else if (call->q.d > 128) coop = 0, why = "the coopmat kernel holds at most D = 128 in registers";
    }
    const int smem = coop && vk_kernel_available(VK_K_ATTN_COOPMAT_NV);
    /* every invocation copies whole 16-byte pieces of each K/V tile */
    const int regs = coop && vk_kernel_available(VK_K_ATTN_COOPMAT_NV_REG) && (probe->flags & MXA_VK_F_FRAGMENT_MAP) &&
                     probe->max_shared >= REG_SHARED && (!call || (64 * call->q.d / 8) % (reg_warps(call->q.d) * 32) == 0);
    const char *no_regs = !coop ? why : probe->layout_note[0] ? probe->layout_note : "no layout check ran";
    /* the int8 build copies whole 16-byte pieces of K (64 keys x D bytes) and one K scale
     * per key and block per invocation */
    const char *no_i8 = !regs ? no_regs
                        : !vk_kernel_available(VK_K_ATTN_COOPMAT_NV_I8) ? "the installed glslang could not compile the int8 kernel"
                        : !(probe->flags & MXA_VK_F_NV_I8_161632) ? "no int8 16x16x32 cooperative matrix shape"
                        : !(probe->flags & MXA_VK_F_INT8) ? "no int8 arithmetic"
                        : call && (call->q.d < 64 || (64 * call->q.d / 16) % (reg_warps(call->q.d) * 32) != 0) ? "the int8 kernel needs 64 <= D <= 128"
                                                                                                  : NULL;
    if (forced && strcmp(forced, "scalar") == 0) {
        snprintf(reason, reason_size, "MXA_KERNEL=scalar");
        return "scalar";
    }
    const char *forced_no = !forced ? NULL
                            : strcmp(forced, "coopmat-nv-i8") == 0  ? no_i8
                            : strcmp(forced, "coopmat-nv-f16") == 0 ? (regs ? NULL : no_regs)
                            : strcmp(forced, "coopmat-nv-f16-smem") == 0 ? (smem ? NULL : why)
                                                                        : NULL;
    if (forced_no) {
        snprintf(reason, reason_size, "MXA_KERNEL=%s is not possible here (%s): scalar", forced, forced_no);
        return "scalar";
    }
    const int forced_f16 = forced && strncmp(forced, "coopmat-nv-f16", 14) == 0; /* either fp16 kernel */
    if (!no_i8 && !forced_f16) {
        snprintf(reason, reason_size,
                 "NV cooperative matrix int8 16x16x32 for Q K^T and fp16 16x16x16 for P V on exact MXFP4 values, softmax in "
                 "registers (%s)",
                 probe->layout_note);
        return "coopmat-nv-i8";
    }
    if (regs && !(forced && strcmp(forced, "coopmat-nv-f16-smem") == 0)) {
        snprintf(reason, reason_size, "NV cooperative matrix fp16 16x16x16 on exact MXFP4 values, softmax in registers (%s)",
                 probe->layout_note);
        return "coopmat-nv-f16";
    }
    if (smem) {
        snprintf(reason, reason_size, "NV cooperative matrix fp16 16x16x16 on exact MXFP4 values, softmax through shared memory%s%s",
                 forced ? " (MXA_KERNEL)" : ": ", forced ? "" : no_regs);
        return "coopmat-nv-f16-smem";
    }
    snprintf(reason, reason_size, "scalar: %s", why);
    return "scalar";
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

mxa_status vk_attention(vk_device *dev, const mxa_attention_call *call, mxa_attention_info *info)
{
    char reason[MXA_REASON_LEN];
    const char *variant = vk_choose_variant(dev->probe, call, reason, sizeof reason);
    const int i8 = strcmp(variant, "coopmat-nv-i8") == 0, regs = i8 || strcmp(variant, "coopmat-nv-f16") == 0;
    const int coop = regs || strcmp(variant, "coopmat-nv-f16-smem") == 0;
    const mxa_attention_desc *desc = &call->desc;
    const uint64_t b = (uint64_t)call->q.b, h = (uint64_t)call->q.h, hkv = (uint64_t)call->k.h;
    const uint64_t nq = (uint64_t)call->q.n, nk = (uint64_t)call->k.n, d = (uint64_t)call->q.d;
    const uint64_t warps = regs ? reg_warps(call->q.d) : SMEM_WARPS;
    const uint64_t nq_pad = coop ? round_up(nq, warps * 16) : nq, nk_pad = round_up(nk, (uint64_t)call->bc);
    const uint64_t esize = coop ? 2 : 4, qk_esize = i8 ? 1 : esize, nb = i8 ? d / 32 : 1; /* nb: Q/K scales per row */
    if ((b * h * nq_pad + b * hkv * nk_pad) * d >= (1ull << 31))
        return mxa_fail(MXA_ERR_UNSUPPORTED, "vulkan attention: the problem exceeds the kernels' 32-bit indexing");
    snprintf(info->variant, sizeof info->variant, "%s", variant);

    mxa_status st;
    vk_buffer *qin, *kin, *vin, *qp, *kp, *vp, *qs, *ks, *vs, *ob, *lb, *vmax;
    uint32_t qoff, koff, voff, ooff = 0;
    if ((st = input_buffer(dev, &call->q, S_QIN, &qin, &qoff)) || (st = input_buffer(dev, &call->k, S_KIN, &kin, &koff)) ||
        (st = input_buffer(dev, &call->v, S_VIN, &vin, &voff)))
        return st;
    if ((st = vk_scratch(dev, S_QP, b * h * nq_pad * d * qk_esize, &qp)) ||
        (st = vk_scratch(dev, S_KP, b * hkv * nk_pad * d * qk_esize, &kp)) ||
        (st = vk_scratch(dev, S_VP, b * hkv * nk_pad * d * esize, &vp)) ||
        (st = vk_scratch(dev, S_QS, b * h * nq_pad * nb * 4, &qs)) || (st = vk_scratch(dev, S_KS, b * hkv * nk_pad * nb * 4, &ks)) ||
        (st = vk_scratch(dev, S_VS, b * hkv * d * 4, &vs)) || (st = vk_scratch(dev, S_VMAX, b * hkv * d * 4, &vmax)) || (st = vk_scratch(dev, S_LSE, b * h * nq * 4, &lb)))
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
    } pv = {(uint32_t)(b * hkv), (uint32_t)nk, (uint32_t)nk_pad, voff, qv, kind, t, 1, (uint32_t)regs};
    const int32_t spec_d[VK_SPEC_COUNT] = {(int32_t)d};
    uint32_t gx, gy;
    vk_batch batch;
    const double t0 = now_seconds();
    if ((st = vk_batch_begin(dev, 1, &batch))) return st;
    /* the prep kernels write the padding rows/tokens as zeros themselves; the V column
     * maxima start at 0 ("no block") */
    if ((st = vk_batch_fill(&batch, vmax, b * hkv * d * 4))) return st;
    vk_buffer *bq[3] = {qin, qp, qs}, *bk[3] = {kin, kp, ks}, *bv[4] = {vin, vp, vs, vmax};
    const vk_kernel kqk = i8 ? VK_K_PREP_QK_I8 : coop ? VK_K_PREP_QK_F16 : VK_K_PREP_QK_F32;
    const vk_kernel kv = coop ? VK_K_PREP_V_F16 : VK_K_PREP_V_F32;
    const uint32_t qk_rows = 64 / (uint32_t)(d / 32); /* prep_qk: an invocation per block of 32 */
    vk_grid_1d(b * h * nq_pad, qk_rows, &gx, &gy);
    if ((st = vk_batch_dispatch(&batch, kqk, spec_d, 64, bq, 3, &pq, sizeof pq, gx, gy, 1))) return st;
    vk_grid_1d(b * hkv * nk_pad, qk_rows, &gx, &gy);
    if ((st = vk_batch_dispatch(&batch, kqk, spec_d, 64, bk, 3, &pk, sizeof pk, gx, gy, 1))) return st;
    vk_grid_1d(b * hkv * (nk_pad / 32) * d, 64, &gx, &gy); /* prep_v: an invocation per column and block of 32 tokens */
    if (coop) { /* pass 0: each V column's largest block exponent */
        pv.pass = 0;
        if ((st = vk_batch_dispatch(&batch, kv, spec_d, 64, bv, 4, &pv, sizeof pv, gx, gy, 1))) return st;
        pv.pass = 1;
    }
    if ((st = vk_batch_dispatch(&batch, kv, spec_d, 64, bv, 4, &pv, sizeof pv, gx, gy, 1))) return st;
    if (coop) {
        struct {
            uint32_t h, hkv, nq, nk, nq_pad, nk_pad, o_offset, causal, quant_p, pnq, kind, t;
            float scale;
        } pa = {(uint32_t)h, (uint32_t)hkv, (uint32_t)nq, (uint32_t)nk, (uint32_t)nq_pad, (uint32_t)nk_pad, ooff,
                desc->causal != 0, qpq, pnq, kind, t, desc->scale};
        const int32_t spec[VK_SPEC_COUNT] = {(int32_t)d, call->bc, (int32_t)warps, (int32_t)warps * 32,
                                             (int32_t)dev->probe->c_map, (int32_t)dev->probe->a_from_c,
                                             (int32_t)(qpq | pnq << 1 | kind << 2)}; /* MODE */
        vk_buffer *ba[8] = {qp, kp, vp, qs, ks, vs, ob, lb};
        const vk_kernel ka = i8 ? VK_K_ATTN_COOPMAT_NV_I8 : regs ? VK_K_ATTN_COOPMAT_NV_REG : VK_K_ATTN_COOPMAT_NV;
        st = vk_batch_dispatch(&batch, ka, spec, (uint32_t)warps * 32, ba,
                               8, &pa, sizeof pa, (uint32_t)(nq_pad / (warps * 16)), (uint32_t)h, (uint32_t)b);
    } else {
        struct {
            uint32_t h, hkv, nq, nk, nk_pad, o_offset, causal, quant_p, pnq, kind, t, rows;
            float scale;
        } pa = {(uint32_t)h, (uint32_t)hkv, (uint32_t)nq, (uint32_t)nk, (uint32_t)nk_pad, ooff, desc->causal != 0,
                qpq, pnq, kind, t, (uint32_t)(b * h * nq), desc->scale};
        const int32_t spec[VK_SPEC_COUNT] = {(int32_t)d, call->bc};
        vk_buffer *ba[5] = {qp, kp, vp, ob, lb};
        vk_grid_1d(b * h * nq, 1, &gx, &gy); /* one workgroup per query row */
        st = vk_batch_dispatch(&batch, VK_K_ATTN_SCALAR, spec, 64, ba, 5, &pa, sizeof pa, gx, gy, 1);
    }
    double seconds = -1.0;
    if (st || (st = vk_batch_submit(&batch, &seconds))) return st;
    info->kernel_seconds = seconds >= 0.0 ? seconds : now_seconds() - t0;
    if (!call->o.buffer && (st = vk_buffer_read(dev, ob, 0, call->o.host, b * h * nq * d * 4))) return st;
    if (call->lse) st = vk_buffer_read(dev, lb, 0, call->lse, b * h * nq * 4);
    return st;
}
