/*
 * The fragment-layout check behind the register-softmax kernel. VK_NV_cooperative_matrix
 * lets a shader index a matrix's elements but leaves open which (row, column) each
 * index holds; attn_coopmat_nv_reg.comp assumes the mma.sync layout (the one NVIDIA's
 * tensor-core instructions use). A 32-lane kernel reports the real map once per device
 * at probe time; any difference keeps the device on the shared-memory kernel.
 */
#include <stdio.h>

#include "vk_common.h"
#include "../../runtime/status.h"

#define LAYOUT_VALUES 514

/* The (row, column) that element i of lane `lane` holds in the mma.sync layout. */
static int expected_value(int lane, int i)
{
    const int row = lane / 4 + 8 * ((i >> 1) & 1), col = 2 * (lane % 4) + (i & 1) + 8 * (i >> 2);
    return row * 16 + col;
}

static int compare(const float *v, char *note, size_t note_size)
{
    if (v[512] != 8.0f || v[513] != 8.0f) {
        snprintf(note, note_size, "fragments hold %g (fp16) and %g (fp32) elements per lane, not 8", (double)v[512],
                 (double)v[513]);
        return 0;
    }
    for (int m = 0; m < 2; m++)
        for (int lane = 0; lane < 32; lane++)
            for (int i = 0; i < 8; i++) {
                const float got = v[m * 256 + lane * 8 + i];
                const int want = expected_value(lane, i);
                if (got != (float)want) {
                    snprintf(note, note_size, "%s element %d of lane %d is (%d, %d), not (%d, %d)", m ? "fp32" : "fp16", i,
                             lane, (int)got / 16, (int)got % 16, want / 16, want % 16);
                    return 0;
                }
            }
    snprintf(note, note_size, "fragments follow the mma.sync layout");
    return 1;
}

int vk_coopmat_mma_layout(const vk_probe_data *probe, char *note, size_t note_size)
{
    if (!vk_kernel_available(VK_K_COOPMAT_LAYOUT) || !vk_kernel_available(VK_K_ATTN_COOPMAT_NV_REG)) {
        snprintf(note, note_size, "the installed glslang could not compile the layout check or the register kernel");
        return 0;
    }
    vk_device *dev = NULL;
    vk_buffer *out = NULL;
    vk_batch batch;
    float values[LAYOUT_VALUES];
    const int32_t spec[4] = {0, 0, 0, 0};
    mxa_status st = vk_device_open(probe, &dev);
    if (!st) st = vk_scratch(dev, 0, sizeof values, &out);
    if (!st) st = vk_batch_begin(dev, 0, &batch);
    if (!st) st = vk_batch_dispatch(&batch, VK_K_COOPMAT_LAYOUT, spec, 32, &out, 1, NULL, 0, 1, 1, 1);
    if (!st) st = vk_batch_submit(&batch, NULL);
    if (!st) st = vk_buffer_read(dev, out, 0, values, sizeof values);
    vk_device_close(dev);
    if (st) {
        snprintf(note, note_size, "the layout check failed to run: %s", mxa_last_error_message());
        mxa_clear_error();
        return 0;
    }
    return compare(values, note, note_size);
}
