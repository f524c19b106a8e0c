/*
 * Kernel selection: capability record + call -> plan (vk_select.h). Every variant states
 * what it needs as a predicate over the record; auto takes the first possible one in
 * order of speed, MXA_KERNEL the named one when possible (else scalar, saying why).
 * Shapes are picked from the configurations the driver enumerates, never by vendor; the
 * vendor and driver enter only through the denylist below, each entry with its source.
 */
#include <stdio.h>
#include <string.h>

#include "vk_common.h"
#include "../../runtime/text.h"

static const char *const variant_names[VK_V_COUNT] = {
    [VK_V_SCALAR] = "scalar",
    [VK_V_INTDOT] = "intdot",
    [VK_V_KHR_I8] = "coopmat-khr-i8",
    [VK_V_KHR_F16] = "coopmat-khr-f16",
    [VK_V_KHR_I8_SMEM] = "coopmat-khr-i8-smem",
    [VK_V_KHR_F16_SMEM] = "coopmat-khr-f16-smem",
    [VK_V_KHR_I8PV] = "coopmat-khr-i8pv",
};

/* auto's order: fastest first (H200 measurements in the README). coopmat-khr-i8pv is not in
 * it: on the H200 it ran 162.7 TFLOP/s against coopmat-khr-i8's 243.7 (N16384 D128, one run). */
static const vk_variant_id auto_order[] = {VK_V_KHR_I8, VK_V_KHR_F16, VK_V_KHR_I8_SMEM, VK_V_KHR_F16_SMEM, VK_V_INTDOT};

const char *vk_variant_name(vk_variant_id id) { return id < VK_V_COUNT ? variant_names[id] : "?"; }

/* Drivers whose cooperative-matrix path is known to compute wrong results for mxa's kernels. */
typedef struct deny_entry {
    uint32_t driver_id;      /* VkDriverId */
    uint32_t driver_version; /* exactly this driverVersion (VK_MAKE_VERSION of the Mesa release) */
    const char *reason;
} deny_entry;
static const deny_entry coopmat_denylist[] = {
    /* subgroups of a workgroup run different numbers of coopMatMulAdd in mxa's kernels
     * (causal tiles a subgroup skips) */
    {6 /* VK_DRIVER_ID_INTEL_OPEN_SOURCE_MESA */, (26u << 22) | (2u << 12) | 3u,
     "Mesa ANV 26.2.3 mis-dispatches workgroups with asymmetric coopMatMulAdd counts (llama.cpp PR #24406)"},
};

static const char *denied(const vk_caps *c)
{
    for (size_t i = 0; i < sizeof coopmat_denylist / sizeof coopmat_denylist[0]; i++)
        if (c->driver_id == coopmat_denylist[i].driver_id && c->driver_version == coopmat_denylist[i].driver_version)
            return coopmat_denylist[i].reason;
    return NULL;
}

uint32_t vk_caps_subgroup_32(const vk_caps *c)
{
    if (c->subgroup_size == 32) return 0;
    if ((c->flags & MXA_VK_F_SUBGROUP_CTRL) && c->required_subgroup_stages_compute && c->subgroup_min <= 32 &&
        c->subgroup_max >= 32)
        return 32;
    return UINT32_MAX;
}

const vk_coopmat_shape *vk_caps_find_shape(const vk_caps *c, uint32_t ab, uint32_t cr, uint32_t m, uint32_t n, uint32_t k)
{
    for (uint32_t i = 0; i < c->n_khr && i < VK_MAX_SHAPES; i++) {
        const vk_coopmat_shape *s = &c->khr[i];
        if (s->scope == VK_SCOPE_SUBGROUP_VALUE && s->a == ab && s->b == ab && s->c == cr && s->r == cr && s->m == m &&
            s->n == n && s->k == k && !s->saturating)
            return s;
    }
    return NULL;
}

/* MXA_COOPMAT_SHAPE "MxNxK": 1 and the numbers, or 0 */
static int parse_shape(const char *text, uint32_t *m, uint32_t *n, uint32_t *k)
{
    unsigned a, b, c;
    char end;
    if (!text || sscanf(text, "%ux%ux%u%c", &a, &b, &c, &end) != 3) return 0;
    *m = a, *n = b, *k = c;
    return 1;
}

static int shape_wanted(const vk_select_opts *o, const vk_coopmat_shape *s)
{
    uint32_t m, n, k;
    return !o->shape || (parse_shape(o->shape, &m, &n, &k) && s->m == m && s->n == n && s->k == k);
}

/* Subgroups of the register kernel: at D > 64, 128 query rows share each K/V tile load; at
 * D <= 64 the smaller tiles leave registers for two 64-row workgroups per SM (H200, N = 16384
 * D = 64: 155.6 against 116.2 TFLOP/s with 8 subgroups, measured on its NV predecessor). */
static uint32_t reg_warps(int64_t d) { return d <= 64 ? 4u : 8u; }

/* 16-row blocks per subgroup of the register kernel: two at D = 64 on int8 S without a causal
 * mask, so each K and V fragment read from shared memory serves 32 rows. H100, B1 H40 N4096
 * D64, 4 subgroups, TFLOP/s: 156.2 / 155.2 / 158.9 against 152.3 / 154.6 / 154.6 / 155.6 with
 * one (2 subgroups 124.8, 8 subgroups 136.2); causal 115.1 / 113.3 against 118.1 / 119.1, so
 * causal calls keep one (the diagonal's work is split more coarsely). At D = 128 the driver
 * spills two blocks' registers (186.4 against 261.3). int8 P V keeps one. */
static uint32_t reg_row_blocks(int64_t d, int i8, int pv8, int causal) { return i8 && !pv8 && !causal && d <= 64 ? 2u : 1u; }

/* Whether the register kernel computes the next tile's S inside this tile's softmax and P V
 * (its constant 9, PIPE): with fp16 P V at one row block. H100, B1 H40, coopmat-khr-i8,
 * TFLOP/s against the kernel without it in the same command: N16384 D128 288.5 / 289.4
 * against 261.7 / 266.1, causal 259.3 against 243.0, N75600 311.8 against 286.5. Two row
 * blocks (D = 64 without a causal mask) hold a second S too many: 152.9 against 162.0.
 * coopmat-khr-f16 takes it as well (same code; conformance passed, speed not measured).
 * MXA_VULKAN_PIPE=0 turns it off (to compare). */
static int reg_pipelined(int pv8, uint32_t rb, const vk_select_opts *o) { return !pv8 && rb == 1 && !o->no_pipe; }

/* Shared memory of attn_coopmat_khr.comp: the K tile (64 keys, rows padded by 16 bytes), the
 * V^T tile (D rows of 64 keys, fp16 or int8, + 16 bytes) and the K scales; with int8 P V also
 * each subgroup's 16 x 64-byte P^ tile (rows padded to 80 bytes) per row block. */
static uint32_t reg_shared(int64_t d, int i8, int pv8, uint32_t warps, uint32_t rb)
{
    const uint32_t kw = (uint32_t)(i8 ? d / 16 : d / 8), nb = (uint32_t)(i8 ? d / 32 : 1);
    return 64u * (kw + 1u) * 16u + (uint32_t)d * (pv8 ? 5u : 9u) * 16u + 64u * nb * 4u + (pv8 ? warps * rb * 16u * 80u : 0u);
}

/* attn_coopmat_khr_smem.comp: the workgroup's K tile or V^T tile (one buffer, rows padded
 * by 16 bytes), the tile's K scales, and per subgroup the S tile (fp32), P^ (fp16) and the
 * row state of its SM rows (its author's formula, checked against the compiled modules). */
static uint32_t smem_shared(int64_t d, int i8, uint32_t sk, uint32_t rows)
{
    const uint32_t kw = (uint32_t)(i8 ? d / 16 : d / 8), nb = i8 ? (uint32_t)(d / 32) : 1u;
    const uint32_t tile = 64u * (kw + 1u) > 9u * (uint32_t)d ? 64u * (kw + 1u) : 9u * (uint32_t)d;
    return 16u * tile + 256u * nb + 444u * rows + (i8 ? (sk == 8 ? 16u : 8u) : 0u);
}
#define SMEM_ROWS 64 /* query rows per workgroup: SM = 16 x 4 subgroups or 8 x 8 (its author's choice) */

typedef struct ctx {
    const vk_caps *c;
    const vk_select_call *call;
    const vk_select_opts *o;
    int64_t d;
} ctx;

#define WHY(...) (mxa_text_format(why, why_size, __VA_ARGS__), 0)

/* What every cooperative-matrix variant needs of the call and the switches. */
static int coop_common(const ctx *x, char *why, size_t why_size)
{
    const char *deny = denied(x->c);
    if (x->o->disable_coopmat) return WHY("MXA_DISABLE_COOPMAT=1");
    if (deny) return WHY("%s", deny);
    if (!(x->c->flags & MXA_VK_F_STORAGE16) || !(x->c->flags & MXA_VK_F_FP16)) return WHY("no fp16 arithmetic/storage");
    if (x->call && !x->call->quantize_all) return WHY("the recipe leaves some tensor unquantized (fp16 would round it)");
    if (x->call && x->call->bc != 64) return WHY("the cooperative-matrix kernels are built for bc = 64");
    if (x->d > 128) return WHY("the cooperative-matrix kernels hold at most D = 128 in registers");
    return 1;
}

/* coop_common, and what both KHR kernels need: their shaders in this build, the extension. */
static int khr_common(const ctx *x, int built, const char *kind, char *why, size_t why_size)
{
    if (!coop_common(x, why, why_size)) return 0;
    if (!built) return WHY("this build has no KHR %s kernels: %s", kind, x->o->khr_missing ? x->o->khr_missing : "not compiled");
    if (!(x->c->flags & MXA_VK_F_COOPMAT_KHR)) return WHY("no VK_KHR_cooperative_matrix");
    return 1;
}

/* The register-softmax KHR kernels: S 16 x SN x SK, P V fp16 16 x PN x 16 (MXFP4 or MXFP8
 * values), quad layout; pv8 (coopmat-khr-i8pv): S and P V both int8 16x16x32, MXFP4 only. */
static int plan_khr_reg(const ctx *x, int i8, int pv8, vk_plan *p, char *why, size_t why_size)
{
    const vk_caps *c = x->c;
    if (!khr_common(x, pv8 ? x->o->khr_i8pv_built : x->o->khr_built, "cooperative-matrix", why, why_size)) return 0;
    if (pv8 && x->call && x->call->pv_mxfp8) return WHY("int8 P V takes MXFP4 P and V only (MXFP8 codes exceed int8 products' range here)");
    if (!(c->flags & MXA_VK_F_SUBGROUP_SHUFFLE) || !(c->flags & MXA_VK_F_SUBGROUP_ARITH)) return WHY("no subgroup shuffle/vote");
    const uint32_t sg = vk_caps_subgroup_32(c);
    if (sg == UINT32_MAX) return WHY("the register softmax maps 16 rows onto 32 lanes; subgroup size %u", c->subgroup_size);
    if (i8 && !(c->flags & MXA_VK_F_INT8)) return WHY("no int8 arithmetic");
    if (!c->quad_ok[0] && !c->quad_ok[1])
        return WHY("fragment layout: %s", c->layout_note[0] ? c->layout_note : "not measured");
    const uint32_t warps = reg_warps(x->d), rb = reg_row_blocks(x->d, i8, pv8, x->call && x->call->causal);
    const uint32_t threads = warps * 32;
    const int64_t kw = i8 ? x->d / 16 : x->d / 8;
    if (i8 && x->d < 64) return WHY("the int8 register kernel needs 64 <= D <= 128");
    if ((64 * kw) % threads != 0 || (64 * x->d / (pv8 ? 16 : 8)) % threads != 0)
        return WHY("D = %lld does not split into whole 16-byte pieces per invocation", (long long)x->d);
    const uint32_t shared = reg_shared(x->d, i8, pv8, warps, rb);
    if (c->max_shared < shared) return WHY("needs %u bytes of shared memory, the device has %u", shared, c->max_shared);
    /* S: the largest K first (fewer MMAs per block), then N = 16 */
    static const uint32_t k_i8[] = {32, 16}, k_f16[] = {16, 8}, ns[] = {16, 8};
    const uint32_t *ks = i8 ? k_i8 : k_f16;
    const vk_coopmat_shape *s = NULL, *pv = NULL;
    int shapes_listed = 0;
    for (int ki = 0; ki < 2 && !s; ki++)
        for (int ni = 0; ni < 2 && !s; ni++) {
            const vk_coopmat_shape *t = vk_caps_find_shape(c, i8 ? VK_CT_S8 : VK_CT_F16, i8 ? VK_CT_S32 : VK_CT_F32, 16,
                                                           ns[ni], ks[ki]);
            if (!t || !shape_wanted(x->o, t)) continue;
            shapes_listed = 1;
            if (c->quad_ok[ns[ni] == 16 ? 0 : 1]) s = t;
        }
    if (!s)
        return WHY(shapes_listed ? "no %s configuration with the quad fragment layout (%s)"
                                 : "no subgroup %s 16xNxK configuration%s%s",
                   i8 ? "int8 -> int32" : "fp16 -> fp32", shapes_listed ? c->layout_note : x->o->shape ? " of shape " : "",
                   shapes_listed ? "" : x->o->shape ? x->o->shape : "");
    for (int ni = 0; ni < 2 && !pv; ni++) {
        const vk_coopmat_shape *t = vk_caps_find_shape(c, VK_CT_F16, VK_CT_F32, 16, ns[ni], 16);
        if (t && c->quad_ok[ns[ni] == 16 ? 0 : 1]) pv = t;
    }
    if (pv8) { /* P V on the S configuration: 16x16x32 (P^ reaches its A matrices through shared memory) */
        if (s->n != 16 || s->k != 32) return WHY("int8 P V needs the int8 16x16x32 configuration for both products");
        pv = s;
    }
    if (!pv) return WHY("no fp16 16xNx16 -> fp32 configuration with the quad layout for P V");
    p->s_shape = *s;
    p->pv_shape = *pv;
    p->subgroup_size = sg;
    p->subgroups = warps;
    p->local_size = threads;
    p->rows_per_group = warps * 16 * rb;
    p->shared_bytes = shared;
    p->tune[0] = (uint32_t)reg_pipelined(pv8, rb, x->o);
    p->s_map = c->c_map[s->n == 16 ? 0 : 1];
    p->o_map = c->c_map[pv->n == 16 ? 0 : 1];
    p->a_map = c->a_map;
    mxa_text_format(p->reason, sizeof p->reason,
             "KHR cooperative matrix %s %ux%ux%u for Q K^T and %s %ux%ux%u for P V on exact MXFP4 values, softmax in "
             "registers (quad fragment layout)%s",
             i8 ? "int8" : "fp16", s->m, s->n, s->k, pv8 ? "int8" : "fp16", pv->m, pv->n, pv->k,
             p->tune[0] ? ", the next tile's Q K^T inside this tile's softmax" : "");
    return 1;
}

/* The shared-memory-softmax KHR kernels: any subgroup size 8..64, any layout, M 16 or 8. */
static int plan_khr_smem(const ctx *x, int i8, vk_plan *p, char *why, size_t why_size)
{
    const vk_caps *c = x->c;
    if (!khr_common(x, x->o->khr_smem_built, "shared-memory", why, why_size)) return 0;
    if (x->call && x->call->pv_mxfp8) return WHY("no MXFP8 P V in the shared-memory kernels");
    if (!(c->flags & MXA_VK_F_SUBGROUP_ARITH)) return WHY("no subgroup vote");
    if (i8 && !(c->flags & MXA_VK_F_INT8)) return WHY("no int8 arithmetic");
    if (c->subgroup_size < 8 || c->subgroup_size > 64) return WHY("subgroup size %u is outside 8..64", c->subgroup_size);
    const vk_coopmat_shape *s = NULL, *pv = NULL;
    for (uint32_t i = 0; i < c->n_khr && i < VK_MAX_SHAPES && !s; i++) {
        const vk_coopmat_shape *t = &c->khr[i];
        const int types = i8 ? t->a == VK_CT_S8 && t->b == VK_CT_S8 && t->c == VK_CT_S32 && t->r == VK_CT_S32
                             : t->a == VK_CT_F16 && t->b == VK_CT_F16 && t->c == VK_CT_F32 && t->r == VK_CT_F32;
        if (t->scope != VK_SCOPE_SUBGROUP_VALUE || !types || t->saturating || (t->m != 16 && t->m != 8)) continue;
        if (32 % t->k != 0 || 64 % t->n != 0 || !shape_wanted(x->o, t)) continue;
        /* P V with the same M, K 16 or 8 */
        for (uint32_t j = 0; j < c->n_khr && j < VK_MAX_SHAPES; j++) {
            const vk_coopmat_shape *u = &c->khr[j];
            if (u->scope == VK_SCOPE_SUBGROUP_VALUE && u->a == VK_CT_F16 && u->b == VK_CT_F16 && u->c == VK_CT_F32 &&
                u->r == VK_CT_F32 && !u->saturating && u->m == t->m && (u->k == 16 || u->k == 8) && 64 % u->n == 0 &&
                x->d % u->n == 0 && (!pv || u->k > pv->k || (u->k == pv->k && u->n > pv->n)))
                pv = u;
        }
        if (pv) s = t;
    }
    if (!s) return WHY("no subgroup %s configuration with M = 16 or 8 and a matching fp16 P V one%s%s",
                       i8 ? "int8 -> int32" : "fp16 -> fp32", x->o->shape ? " of shape " : "", x->o->shape ? x->o->shape : "");
    const uint32_t sg = c->subgroup_size;
    /* SMEM_ROWS query rows per workgroup, half as many where the device's limits say so (fewer
     * would load each K/V tile for too few rows) */
    uint32_t warps = SMEM_ROWS / s->m;
    if (warps * sg > c->max_invocations || smem_shared(x->d, i8, s->k, warps * s->m) > c->max_shared) warps /= 2;
    if (warps * sg > c->max_invocations)
        return WHY("needs %u invocations per workgroup, the device allows %u", warps * sg, c->max_invocations);
    const uint32_t shared = smem_shared(x->d, i8, s->k, warps * s->m);
    if (c->max_shared < shared) return WHY("needs %u bytes of shared memory, the device has %u", shared, c->max_shared);
    p->s_shape = *s;
    p->pv_shape = *pv;
    /* pin the width the local size was computed for, where the driver lets us */
    p->subgroup_size = (c->flags & MXA_VK_F_SUBGROUP_CTRL) && c->required_subgroup_stages_compute ? sg : 0;
    p->subgroups = warps;
    p->local_size = warps * sg;
    p->rows_per_group = warps * s->m;
    p->shared_bytes = shared;
    mxa_text_format(p->reason, sizeof p->reason,
             "KHR cooperative matrix %s %ux%ux%u for Q K^T and fp16 %ux%ux%u for P V on exact MXFP4 values, softmax "
             "through shared memory%s%s",
             i8 ? "int8" : "fp16", s->m, s->n, s->k, pv->m, pv->n, pv->k, c->layout_note[0] ? " (" : "",
             c->layout_note[0] ? c->layout_note : "");
    if (c->layout_note[0]) strncat(p->reason, ")", sizeof p->reason - strlen(p->reason) - 1);
    return 1;
}

/* intdot (attn_intdot.comp): packed 4x8 integer dot products, any D, subgroups of 8 or more
 * (its row reductions span 8 lanes), in full subgroups. Its tiles: BR query rows per
 * workgroup (64; 32 above D = 128 so that 32 KiB of shared memory suffices), THREADS
 * invocations, OR rows x D / (THREADS OR / BR) columns of O per invocation, OCH columns per
 * chunk. */
static uint32_t intdot_shared(int64_t d, uint32_t br) { return br * (uint32_t)d + 72u * (uint32_t)d + 76u * br + 256u; }

static int plan_intdot(const ctx *x, vk_plan *p, char *why, size_t why_size)
{
    const vk_caps *c = x->c;
    if (x->o->disable_int_dot) return WHY("MXA_DISABLE_INT_DOT=1");
    if (!x->o->intdot_built) return WHY("this build has no intdot kernel");
    if (!(c->flags & MXA_VK_F_INT_DOT)) return WHY("no VK_KHR_shader_integer_dot_product");
    if (!(c->flags & MXA_VK_F_SUBGROUP_SHUFFLE)) return WHY("no subgroup shuffle");
    if (c->subgroup_size < 8) return WHY("subgroup size %u: the row reductions span 8 lanes", c->subgroup_size);
    if (x->call && !x->call->quantize_all) return WHY("the recipe leaves some tensor unquantized (int8 needs MXFP4 codes)");
    if (x->call && x->call->bc != 64) return WHY("the intdot kernel is built for bc = 64");
    if (x->call && x->call->pv_mxfp8) return WHY("no MXFP8 P V in the intdot kernel (int8 dot products of MXFP4 codes)");
    const uint32_t threads = 128, orows = 4, och = 8;
    uint32_t br = x->d > 128 ? 32 : 64;
    if (c->max_shared < intdot_shared(x->d, br)) br = 32;
    if (c->max_shared < intdot_shared(x->d, br))
        return WHY("needs %u bytes of shared memory, the device has %u", intdot_shared(x->d, br), c->max_shared);
    if (c->max_invocations < threads) return WHY("needs %u invocations per workgroup, the device allows %u", threads, c->max_invocations);
    if (threads % c->subgroup_size != 0 && c->subgroup_size < threads) return WHY("subgroup size %u does not divide %u", c->subgroup_size, threads);
    p->subgroup_size = (c->flags & MXA_VK_F_SUBGROUP_CTRL) && c->required_subgroup_stages_compute ? c->subgroup_size : 0;
    p->subgroups = 0;
    p->local_size = threads;
    p->rows_per_group = br;
    p->shared_bytes = intdot_shared(x->d, br);
    p->tune[0] = orows;
    p->tune[1] = och;
    mxa_text_format(p->reason, sizeof p->reason, "packed int8 dot products (%s) on exact MXFP4 codes for Q K^T and P V",
             c->int_dot_accel ? "accelerated" : "not accelerated on this device");
    return 1;
}

static int plan_variant(const ctx *x, vk_variant_id id, vk_plan *p, char *why, size_t why_size)
{
    memset(p, 0, sizeof *p);
    p->id = id;
    p->variant = variant_names[id];
    switch (id) {
    case VK_V_KHR_I8PV: return plan_khr_reg(x, 1, 1, p, why, why_size);
    case VK_V_KHR_I8: return plan_khr_reg(x, 1, 0, p, why, why_size);
    case VK_V_KHR_F16: return plan_khr_reg(x, 0, 0, p, why, why_size);
    case VK_V_KHR_I8_SMEM: return plan_khr_smem(x, 1, p, why, why_size);
    case VK_V_KHR_F16_SMEM: return plan_khr_smem(x, 0, p, why, why_size);
    case VK_V_INTDOT: return plan_intdot(x, p, why, why_size);
    default: return 0;
    }
}

static void plan_scalar(vk_plan *p, const char *fmt, const char *a, const char *b)
{
    memset(p, 0, sizeof *p);
    p->id = VK_V_SCALAR;
    p->variant = variant_names[VK_V_SCALAR];
    p->local_size = 64;
    p->rows_per_group = 1;
    mxa_text_format(p->reason, sizeof p->reason, fmt, a, b);
}

void vk_select(const vk_caps *caps, const vk_select_call *call, const vk_select_opts *opts, vk_plan *plan)
{
    const ctx x = {caps, call, opts, call ? call->d : 128};
    char why[192] = "";
    if (opts->kernel) {
        vk_variant_id id = VK_V_COUNT;
        for (int i = 0; i < VK_V_COUNT; i++)
            if (strcmp(opts->kernel, variant_names[i]) == 0) id = (vk_variant_id)i;
        if (id == VK_V_SCALAR) return plan_scalar(plan, "MXA_KERNEL=%s%s", "scalar", "");
        if (id != VK_V_COUNT) {
            if (plan_variant(&x, id, plan, why, sizeof why)) return;
            char forced[64];
            mxa_text_format(forced, sizeof forced, "MXA_KERNEL=%s", opts->kernel);
            return plan_scalar(plan, "%s is not possible here (%s): scalar", forced, why);
        }
        /* a name of another backend's kernel: auto (mxa_env_kernel already warned) */
    }
    /* why the register and shared-memory kernels are out, for the probe to say why a device
     * runs something slower */
    char out_why[2][160] = {"", ""};
    for (size_t i = 0; i < sizeof auto_order / sizeof auto_order[0]; i++) {
        const int slot = auto_order[i] == VK_V_KHR_I8 ? 0 : auto_order[i] == VK_V_KHR_I8_SMEM ? 1 : -1;
        if (plan_variant(&x, auto_order[i], plan, why, sizeof why)) {
            for (int k = 0; k < 2; k++)
                if (out_why[k][0]) {
                    const size_t len = strlen(plan->reason);
                    mxa_text_format(plan->reason + len, sizeof plan->reason - len, "; not %s: %s",
                             variant_names[k ? VK_V_KHR_I8_SMEM : VK_V_KHR_I8], out_why[k]);
                }
            return;
        }
        if (slot >= 0) mxa_text_format(out_why[slot], sizeof out_why[slot], "%s", why);
    }
    /* why here is intdot's: the last one tried */
    char rest[340];
    mxa_text_format(rest, sizeof rest, "not %s: %s; not %s: %s", variant_names[VK_V_KHR_I8], out_why[0],
             variant_names[VK_V_KHR_I8_SMEM], out_why[1]);
    plan_scalar(plan, "scalar: %s; not intdot: %s", rest, why);
}
