/*
 * The portable kernels: plain C, any architecture. The exp is libm's expf,
 * the reference's own, so this path reproduces the reference bit for bit
 * (its fp32 recipe paths sum in a different order).
 */
#include <math.h>

#define CPU_FN(name) cpu_portable_##name
#define CPU_EXP(x) expf(x)
#include "cpu_lanes.h"

const cpu_kernels cpu_kernels_portable = {
    .name = "portable",
    .quantize = cpu_portable_quantize,
    .rotate = cpu_portable_rotate,
    .transpose = cpu_portable_transpose,
    .qk_int = cpu_portable_qk_int,
    .qk_f32 = cpu_portable_qk_f32,
    .softmax = cpu_portable_softmax,
    .pv_int = cpu_portable_pv_int,
    .pv_f32 = cpu_portable_pv_f32,
};
