/*
 * The fragment map behind the register-softmax kernel. VK_NV_cooperative_matrix lets a
 * shader index a matrix's elements but leaves open which (row, column) each index holds.
 * attn_coopmat_nv_reg.comp needs the quad structure of the tensor-core fragments: lane
 * L (g = L / 4, t = L % 4) holds rows g and g + 8, columns 2t, 2t + 1, 2t + 8, 2t + 9 of
 * a 16x16 matrix, in an order the driver picks (NVIDIA's fp16 and fp32 orders differ).
 * coopmat_layout.comp reports the real map once per device; the orders become
 * specialization constants, and anything else keeps the device on the shared-memory
 * kernel. The kernel's raw output is cached on disk (keyed like the pipeline cache), so
 * only the first probe on a machine pays for opening the device.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_common.h"
#include "../../runtime/cache.h"
#include "../../runtime/log.h"
#include "../../runtime/status.h"

#define LAYOUT_CACHE "vulkan-fragment-map"

/* A note that may be cut at the buffer's end (it is for people, not parsed). */
static void note_set(char *note, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, size, fmt, ap);
    va_end(ap);
}


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
            note_set(note, note_size, "%s element %d of lane 0 is (%d, %d): not a quad fragment", what, i, row, col);
            return 0;
        }
        codes[i] = (col & 1) | (row == 8) << 1 | (col >= 8) << 2;
        seen |= 1 << codes[i];
    }
    if (seen != (1 << count) - 1) {
        note_set(note, note_size, "%s elements of lane 0 repeat a position", what);
        return 0;
    }
    for (int lane = 1; lane < 32; lane++)
        for (int i = 0; i < count; i++) {
            const int want = code_value(lane, codes[i]);
            if (v[lane * 8 + i] != (float)want) {
                note_set(note, note_size, "%s element %d of lane %d is (%d, %d), not (%d, %d)", what, i, lane,
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

int vk_fragment_map_decode(const float *v, vk_probe_data *probe)
{
    char *note = probe->layout_note;
    const size_t note_size = sizeof probe->layout_note;
    int a[8], c[8];
    if (v[512] != 8.0f || v[513] != 8.0f) {
        note_set(note, note_size, "fragments hold %g (fp16) and %g (fp32) elements per lane, not 8", (double)v[512],
                 (double)v[513]);
        return 0;
    }
    if (!element_codes(v, 8, "fp16", a, note, note_size) || !element_codes(v + 256, 8, "fp32", c, note, note_size)) return 0;
    probe->c_map = probe->a_from_c = 0;
    char ca[9] = {0}, cc[9] = {0};
    for (int i = 0; i < 8; i++) {
        probe->c_map |= (uint32_t)c[i] << (3 * i);
        for (int k = 0; k < 8; k++)
            if (c[k] == a[i]) probe->a_from_c |= (uint32_t)k << (3 * i);
        ca[i] = (char)('0' + a[i]);
        cc[i] = (char)('0' + c[i]);
    }
    note_set(note, note_size, "fragment map: fp16 order %s, fp32 order %s", ca, cc);
    return 1;
}

int vk_coopmat_fragment_map(vk_probe_data *probe)
{
    if (!vk_kernel_available(VK_K_COOPMAT_LAYOUT) || !vk_kernel_available(VK_K_ATTN_COOPMAT_NV_REG)) {
        snprintf(probe->layout_note, sizeof probe->layout_note,
                 "the installed glslang could not compile the layout check or the register kernel");
        return 0;
    }
    char key[256];
    vk_cache_key(probe, key, sizeof key);
    void *cached = NULL;
    size_t cached_size = 0;
    if (mxa_cache_load(LAYOUT_CACHE, key, &cached, &cached_size) == MXA_OK) {
        float v[VK_LAYOUT_VALUES];
        const int ok = cached_size == sizeof v;
        if (ok) memcpy(v, cached, sizeof v);
        free(cached);
        if (ok) {
            MXA_LOG_I("vulkan: fragment map of device %04x from the cache", probe->device_id);
            return vk_fragment_map_decode(v, probe);
        }
    }
    mxa_clear_error();
    vk_device *dev = NULL;
    vk_buffer *out = NULL;
    vk_batch batch;
    float values[VK_LAYOUT_VALUES];
    const int32_t spec[VK_SPEC_COUNT] = {0};
    mxa_status st = vk_device_open(probe, &dev);
    if (!st) st = vk_scratch(dev, 0, sizeof values, &out);
    if (!st) st = vk_batch_begin(dev, 0, &batch);
    if (!st) st = vk_batch_dispatch(&batch, VK_K_COOPMAT_LAYOUT, spec, 0, &out, 1, NULL, 0, 1, 1, 1);
    if (!st) st = vk_batch_submit(&batch, NULL);
    if (!st) st = vk_buffer_read(dev, out, 0, values, sizeof values);
    vk_device_close(dev);
    if (st) {
        snprintf(probe->layout_note, sizeof probe->layout_note, "the layout check failed to run: %s",
                 mxa_last_error_message());
        mxa_clear_error();
        return 0;
    }
    (void)mxa_cache_store(LAYOUT_CACHE, key, values, sizeof values); /* a failure is logged, not fatal */
    mxa_clear_error();
    return vk_fragment_map_decode(values, probe);
}

int vk_khr_fragment_map_decode(const float *v, int n, vk_caps *caps)
{
    char *note = caps->layout_note;
    const size_t note_size = sizeof caps->layout_note;
    const int count = n / 2, slot = n == 16 ? 0 : 1;
    int a[8], c[8];
    caps->quad_ok[slot] = 0;
    if (v[512] != 8.0f || v[513] != (float)count) {
        note_set(note, note_size, "KHR fragments hold %g (fp16 16x16) and %g (fp32 16x%d) elements per lane, not 8 and %d",
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
    note_set(note + len, note_size - len, "%sKHR quad: fp16 %s, fp32 16x%d %s", len ? "; " : "", ta, n, tc);
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
    vk_caps *caps = &probe->caps;
    caps->layout_note[0] = 0;
    caps->quad_ok[0] = caps->quad_ok[1] = 0;
    if (!vk_kernel_available(VK_K_COOPMAT_LAYOUT_KHR) || !vk_kernel_available(VK_K_ATTN_COOPMAT_KHR)) {
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
    vk_device *dev = NULL;
    for (int n = 16; n >= 8; n -= 8) {
        if (!khr_layout_types(caps, n)) continue;
        char key[256], name[48];
        vk_cache_key(probe, key, sizeof key);
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
            if (!st) st = vk_batch_dispatch(&batch, VK_K_COOPMAT_LAYOUT_KHR, spec, sg, &out, 1, NULL, 0, 1, 1, 1);
            if (!st) st = vk_batch_submit(&batch, NULL);
            if (!st) st = vk_buffer_read(dev, out, 0, values, sizeof values);
            if (st) {
                const size_t len = strnlen(caps->layout_note, sizeof caps->layout_note);
                note_set(caps->layout_note + len, sizeof caps->layout_note - len, "%sthe KHR 16x%d layout check failed: %s",
                         len ? "; " : "", n, mxa_last_error_message());
                mxa_clear_error();
                continue;
            }
            (void)mxa_cache_store(name, key, values, sizeof values);
            mxa_clear_error();
        }
        found |= vk_khr_fragment_map_decode(values, n, caps);
    }
    vk_device_close(dev);
    if (!caps->layout_note[0]) snprintf(caps->layout_note, sizeof caps->layout_note, "no KHR fp16/fp32 16-row configuration");
    return found;
}
