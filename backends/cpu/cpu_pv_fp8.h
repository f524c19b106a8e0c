/*
 * The MXFP8 P V of the CPU backend (desc.pv_format MXA_PV_MXFP8): P~ and V are
 * quantized to MXFP8 per 32 keys and decoded to fp32, so the fp32 P V kernel
 * multiplies E4M3 values, whose products are exact in fp32.
 */
#ifndef MXA_CPU_PV_FP8_H
#define MXA_CPU_PV_FP8_H

/* x [nblk*32][16] quantized to MXFP8 and decoded in place, blocks along the
 * first axis, lanes independent; sum [16] (may be NULL) receives each lane's
 * sum of the decoded values in order. */
void cpu_fp8_fake_quantize_lanes(float *x, int nblk, float *sum);

/* P~ [blocks*32][16] (zero past the tile's keys) to the decoded P^ in place; with PNQ
 * the row sum becomes alpha * l_old + rowsum(P^) (the softmax added rowsum(P~)). */
void cpu_fp8_quantize_p(float *p, int blocks, int pnq, const float *l_old, const float *alpha, float *l);

#endif
