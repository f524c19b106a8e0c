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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_common.h"
#include "../../runtime/cache.h"
#include "../../runtime/log.h"
#include "../../runtime/status.h"

#define LAYOUT_CACHE "vulkan-fragment-map"


/* Element code: bit 0 column + 1, bit 1 row + 8, bit 2 column + 8 (from row g, column 2t). */
static int code_value(int lane, int code)
{
    return (lane / 4 + 8 * ((code >> 1) & 1)) * 16 + 2 * (lane % 4) + (code & 1) + 8 * (code >> 2);
}

/* The codes of the 8 elements of one matrix type, or 0 (why in `note`). */
static int element_codes(const float *v, const char *what, int codes[8], char *note, size_t note_size)
{
    int seen = 0;
    for (int i = 0; i < 8; i++) {
        const int val = (int)v[i], row = val / 16, col = val % 16;
        if (v[i] != (float)val || (row != 0 && row != 8) || (col & ~9)) {
            snprintf(note, note_size, "%s element %d of lane 0 is (%d, %d): not a quad fragment", what, i, row, col);
            return 0;
        }
        codes[i] = (col & 1) | (row == 8) << 1 | (col >= 8) << 2;
        seen |= 1 << codes[i];
    }
    if (seen != 0xff) {
        snprintf(note, note_size, "%s elements of lane 0 repeat a position", what);
        return 0;
    }
    for (int lane = 1; lane < 32; lane++)
        for (int i = 0; i < 8; i++) {
            const int want = code_value(lane, codes[i]);
            if (v[lane * 8 + i] != (float)want) {
                snprintf(note, note_size, "%s element %d of lane %d is (%d, %d), not (%d, %d)", what, i, lane,
                         (int)v[lane * 8 + i] / 16, (int)v[lane * 8 + i] % 16, want / 16, want % 16);
                return 0;
            }
        }
    return 1;
}

int vk_fragment_map_decode(const float *v, vk_probe_data *probe)
{
    char *note = probe->layout_note;
    const size_t note_size = sizeof probe->layout_note;
    int a[8], c[8];
    if (v[512] != 8.0f || v[513] != 8.0f) {
        snprintf(note, note_size, "fragments hold %g (fp16) and %g (fp32) elements per lane, not 8", (double)v[512],
                 (double)v[513]);
        return 0;
    }
    if (!element_codes(v, "fp16", a, note, note_size) || !element_codes(v + 256, "fp32", c, note, note_size)) return 0;
    probe->c_map = probe->a_from_c = 0;
    char ca[9] = {0}, cc[9] = {0};
    for (int i = 0; i < 8; i++) {
        probe->c_map |= (uint32_t)c[i] << (3 * i);
        for (int k = 0; k < 8; k++)
            if (c[k] == a[i]) probe->a_from_c |= (uint32_t)k << (3 * i);
        ca[i] = (char)('0' + a[i]);
        cc[i] = (char)('0' + c[i]);
    }
    snprintf(note, note_size, "fragment map: fp16 order %s, fp32 order %s", ca, cc);
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
    if (!st) st = vk_batch_dispatch(&batch, VK_K_COOPMAT_LAYOUT, spec, 32, &out, 1, NULL, 0, 1, 1, 1);
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
