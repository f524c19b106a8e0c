/*
 * The fragment map behind the register-softmax kernel. VK_KHR_cooperative_matrix lets a
 * shader index a matrix's elements but leaves open which (row, column) each index holds.
 * attn_coopmat_khr.comp needs the quad structure of tensor-core fragments: lane L
 * (g = L / 4, t = L % 4) holds rows g and g + 8 and columns 2t, 2t + 1 (and 2t + 8, 2t + 9
 * in a 16-column matrix), in an order the driver picks (NVIDIA's fp16 and fp32 orders
 * differ). coopmat_layout_khr.comp reports the real map once per device and accumulator
 * width; the orders become specialization constants, and any other layout keeps the
 * device on the shared-memory kernel. The kernel's raw output is cached on disk (keyed
 * like the pipeline cache), so only the first probe on a machine pays for opening the
 * device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_common.h"
#include "../../runtime/cache.h"
#include "../../runtime/log.h"
#include "../../runtime/status.h"
#include "../../runtime/text.h"

#define LAYOUT_CACHE "vulkan-fragment-map"



/* Element code: bit 0 column + 1, bit 1 row + 8, bit 2 column + 8 (from row g, column 2t). */
static int code_value(int lane, int code)
{
    return (lane / 4 + 8 * ((code >> 1) & 1)) * 16 + 2 * (lane % 4) + (code & 1) + 8 * (code >> 2);
}

/* The codes of the `count` elements (8, or 4 for a 16x8 matrix) of one matrix type, or 0
 * (why in `note`). */
static int element_codes(const float *v, int count, const char *what, int codes[8], char *note, size_t note_size)
{
    const int col_bits = count == 8 ? 9 : 1;
    int seen = 0;
    for (int i = 0; i < count; i++) {
        const int val = (int)v[i], row = val / 16, col = val % 16;
        if (v[i] != (float)val || (row != 0 && row != 8) || (col & ~col_bits)) {
            mxa_text_format(note, note_size, "%s element %d of lane 0 is (%d, %d): not a quad fragment", what, i, row, col);
            return 0;
        }
        codes[i] = (col & 1) | (row == 8) << 1 | (col >= 8) << 2;
        seen |= 1 << codes[i];
    }
    if (seen != (1 << count) - 1) {
        mxa_text_format(note, note_size, "%s elements of lane 0 repeat a position", what);
        return 0;
    }
    for (int lane = 1; lane < 32; lane++)
        for (int i = 0; i < count; i++) {
            const int want = code_value(lane, codes[i]);
            if (v[lane * 8 + i] != (float)want) {
                mxa_text_format(note, note_size, "%s element %d of lane %d is (%d, %d), not (%d, %d)", what, i, lane,
                         (int)v[lane * 8 + i] / 16, (int)v[lane * 8 + i] % 16, want / 16, want % 16);
                return 0;
            }
        }
    return 1;
}

static uint32_t pack_codes(const int *codes, int count, char *text)
{
    uint32_t map = 0;
    for (int i = 0; i < count; i++) {
        map |= (uint32_t)codes[i] << (3 * i);
        text[i] = (char)('0' + codes[i]);
    }
    text[count] = 0;
    return map;
}

int vk_khr_fragment_map_decode(const float *v, int n, vk_caps *caps)
{
    char *note = caps->layout_note;
    const size_t note_size = sizeof caps->layout_note;
    const int count = n / 2, slot = n == 16 ? 0 : 1;
    int a[8], c[8];
    caps->quad_ok[slot] = 0;
    if (v[512] != 8.0f || v[513] != (float)count) {
        mxa_text_format(note, note_size, "KHR fragments hold %g (fp16 16x16) and %g (fp32 16x%d) elements per lane, not 8 and %d",
                 (double)v[512], (double)v[513], n, count);
        return 0;
    }
    char what[24];
    snprintf(what, sizeof what, "KHR fp32 16x%d", n);
    if (!element_codes(v, 8, "KHR fp16 16x16", a, note, note_size) || !element_codes(v + 256, count, what, c, note, note_size))
        return 0;
    char ta[9], tc[9];
    caps->a_map = pack_codes(a, 8, ta);
    caps->c_map[slot] = pack_codes(c, count, tc);
    caps->quad_ok[slot] = 1;
    const size_t len = strnlen(note, note_size);
    mxa_text_format(note + len, note_size - len, "%sKHR quad: fp16 %s, fp32 16x%d %s", len ? "; " : "", ta, n, tc);
    return 1;
}

/* Whether the record lists a subgroup-scope configuration with an fp32 16 x n result and
 * one with an fp16 16x16 A matrix: the two matrix types the check loads. */
static int khr_layout_types(const vk_caps *caps, int n)
{
    int acc = 0, a = 0;
    for (uint32_t i = 0; i < caps->n_khr; i++) {
        const vk_coopmat_shape *s = &caps->khr[i];
        if (s->scope != VK_SCOPE_SUBGROUP_VALUE || s->m != 16) continue;
        if ((int)s->n == n && s->r == VK_CT_F32) acc = 1;
        if (s->a == VK_CT_F16 && s->k == 16) a = 1;
    }
    return acc && a;
}

int vk_khr_fragment_map(vk_probe_data *probe)
{
    return vk_khr_fragment_map_on(probe, NULL);
}

int vk_khr_fragment_map_on(vk_probe_data *probe, vk_device *on)
{
    vk_caps *caps = &probe->caps;
    caps->layout_note[0] = 0;
    caps->quad_ok[0] = caps->quad_ok[1] = 0;
    if (!vk_kernel_available(VK_K_COOPMAT_LAYOUT_KHR) || !vk_kernel_available(VK_K_ATTN_COOPMAT_KHR_I8)) {
        snprintf(caps->layout_note, sizeof caps->layout_note, "this build has no KHR layout check or register kernel");
        return 0;
    }
    const uint32_t sg = vk_caps_subgroup_32(caps);
    if (sg == UINT32_MAX) {
        snprintf(caps->layout_note, sizeof caps->layout_note, "subgroup size %u..%u: the quad layout needs 32",
                 caps->subgroup_min, caps->subgroup_max);
        return 0;
    }
    int found = 0;
    vk_device *dev = on;
    char key[256];
    vk_cache_key(probe, key, sizeof key);
    for (int n = 16; n >= 8; n -= 8) {
        if (!khr_layout_types(caps, n)) continue;
        char name[48];
        snprintf(name, sizeof name, "%s-khr%d", LAYOUT_CACHE, n);
        float values[VK_LAYOUT_VALUES];
        void *cached = NULL;
        size_t cached_size = 0;
        int have = 0;
        if (mxa_cache_load(name, key, &cached, &cached_size) == MXA_OK) {
            have = cached_size == sizeof values;
            if (have) memcpy(values, cached, sizeof values);
            free(cached);
        }
        mxa_clear_error();
        if (!have) {
            vk_buffer *out = NULL;
            vk_batch batch;
            const int32_t spec[VK_SPEC_COUNT] = {n};
            mxa_status st = dev ? MXA_OK : vk_device_open(probe, &dev);
            if (!st) st = vk_scratch(dev, 0, sizeof values, &out);
            if (!st) st = vk_batch_begin(dev, 0, &batch);
            const vk_buffer *binds[1] = {out};
            if (!st) st = vk_batch_dispatch(&batch, VK_K_COOPMAT_LAYOUT_KHR, spec, sg, binds, 1, NULL, 0, 1, 1, 1);
            if (!st) st = vk_batch_submit(&batch, NULL);
            if (!st) st = vk_buffer_read(dev, out, 0, values, sizeof values);
            if (st) {
                const size_t len = strnlen(caps->layout_note, sizeof caps->layout_note);
                mxa_text_format(caps->layout_note + len, sizeof caps->layout_note - len, "%sthe KHR 16x%d layout check failed: %s",
                         len ? "; " : "", n, mxa_last_error_message());
                mxa_clear_error();
                continue;
            }
            (void)mxa_cache_store(name, key, values, sizeof values);
            mxa_clear_error();
        }
        found |= vk_khr_fragment_map_decode(values, n, caps);
    }
    if (dev != on) vk_device_close(dev);
    if (!caps->layout_note[0]) snprintf(caps->layout_note, sizeof caps->layout_note, "no KHR fp16/fp32 16-row configuration");
    return found;
}
