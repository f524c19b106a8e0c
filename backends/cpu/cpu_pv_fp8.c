/* MXFP8 P and V on the CPU, lane by lane through the runtime's format core. */
#include "cpu_pv_fp8.h"

#include <stdint.h>

#include "../../runtime/mxfp8.h"
#include "cpu_kernels.h"

#define L CPU_LANES

void cpu_fp8_fake_quantize_lanes(float *x, int nblk, float *sum)
{
    if (sum)
        for (int l = 0; l < L; l++) sum[l] = 0.0f;
    for (int b = 0; b < nblk; b++) {
        float *blk = x + (size_t)b * MXA_BLOCK * L;
        for (int l = 0; l < L; l++) {
            float col[MXA_BLOCK];
            uint8_t codes[MXA_BLOCK], scale;
            for (int i = 0; i < MXA_BLOCK; i++) col[i] = blk[i * L + l];
            mxa_mxfp8_quantize_block(col, MXA_BLOCK, codes, &scale);
            for (int i = 0; i < MXA_BLOCK; i++) {
                const float v = mxa_mxfp8_decode(codes[i], scale);
                blk[i * L + l] = v;
                if (sum) sum[l] += v;
            }
        }
    }
}

void cpu_fp8_quantize_p(float *p, int blocks, int pnq, const float *l_old, const float *alpha, float *l)
{
    float sum[L];
    cpu_fp8_fake_quantize_lanes(p, blocks, sum);
    if (pnq)
        for (int r = 0; r < L; r++) l[r] = alpha[r] * l_old[r] + sum[r];
}
