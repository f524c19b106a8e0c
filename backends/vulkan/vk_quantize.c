/*
 * mxa_quantize (and mxa_quantize_mxfp8) on a Vulkan device: one invocation per 32-element
 * block (shaders/vulkan/quantize.comp), bit-exact with runtime/mxfp4.c (runtime/mxfp8.c).
 */
#include <stdlib.h>

#include "vk_common.h"
#include "../../runtime/status.h"

/* The rule as the shaders take it: kind (0 OCP, 1 ceiling) and t = q * 2^21 (exact). */
void vk_rule_params(mxa_rule rule, uint32_t *kind, uint32_t *t);
void vk_rule_params(mxa_rule rule, uint32_t *kind, uint32_t *t)
{
    *kind = rule.kind == MXA_RULE_CEIL ? 1u : 0u;
    *t = rule.kind == MXA_RULE_CEIL ? (uint32_t)(rule.q * 2097152.0f) : 0u;
}

/* MXFP4 under `rule` (16 code bytes per block), or MXFP8 when fp8 (32 code bytes per block). */
static mxa_status quantize_rows(vk_device *dev, const mxa_array *x, mxa_rule rule, int fp8, uint8_t *codes, uint8_t *scales)
{
    const uint64_t rows = (uint64_t)(x->b * x->h * x->n), cols = (uint64_t)x->d;
    const uint64_t nblocks = (cols + 31) / 32, total = rows * nblocks, code_bytes = fp8 ? 32 : 16;
    if (total > UINT32_MAX / 8 || rows * cols > UINT32_MAX)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "vulkan quantize: %llu elements is above this kernel's 32-bit indexing",
                        (unsigned long long)(rows * cols));
    mxa_status st;
    vk_buffer *xb, *cb, *sb;
    uint32_t x_offset = 0;
    uint32_t *words = NULL;
    if (x->buffer) {
        xb = (vk_buffer *)x->buffer;
        x_offset = (uint32_t)(x->offset / 4);
    } else {
        if ((st = vk_scratch(dev, 0, rows * cols * 4, &xb))) return st;
        if ((st = vk_buffer_write(dev, xb, 0, x->host, rows * cols * 4))) return st;
    }
    if ((st = vk_scratch(dev, 1, total * code_bytes, &cb)) || (st = vk_scratch(dev, 2, total * 4, &sb))) return st;
    struct {
        uint32_t rows, cols, nblocks, x_offset, kind, t;
    } pc = {(uint32_t)rows, (uint32_t)cols, (uint32_t)nblocks, x_offset, 0, 0};
    vk_rule_params(rule, &pc.kind, &pc.t);
    uint32_t gx, gy;
    vk_grid_1d(total, 64, &gx, &gy);
    const vk_buffer *binds[3] = {xb, cb, sb};
    const int32_t spec[VK_SPEC_COUNT] = {fp8};
    vk_batch batch;
    if ((st = vk_batch_begin(dev, 0, &batch)) ||
        (st = vk_batch_dispatch(&batch, VK_K_QUANTIZE, spec, 0, binds, 3, &pc, sizeof pc, gx, gy, 1)) ||
        (st = vk_batch_submit(&batch, NULL)))
        return st;
    /* codes: 4 (8) little-endian words per block are exactly the 16 (32) code bytes */
    if ((st = vk_buffer_read(dev, cb, 0, codes, total * code_bytes))) return st;
    words = malloc(total * 4);
    if (!words) return mxa_fail(MXA_ERR_OUT_OF_MEMORY, "vulkan quantize: out of memory");
    if (!(st = vk_buffer_read(dev, sb, 0, words, total * 4)))
        for (uint64_t i = 0; i < total; i++) scales[i] = (uint8_t)words[i];
    free(words);
    return st;
}

mxa_status vk_quantize(vk_device *dev, const mxa_array *x, mxa_rule rule, uint8_t *codes, uint8_t *scales)
{
    return quantize_rows(dev, x, rule, 0, codes, scales);
}

mxa_status vk_quantize_mxfp8(vk_device *dev, const mxa_array *x, uint8_t *codes, uint8_t *scales)
{
    return quantize_rows(dev, x, mxa_rule_ocp(), 1, codes, scales);
}
