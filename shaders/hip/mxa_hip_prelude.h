/*
 * The few device facilities the kernels use, under three compilers:
 *  - hiprtc on the user's machine (__HIPCC_RTC__): the HIP device API is built in;
 *  - a bare clang (-x hip -nogpulib -nogpuinc, the CI compile check): no HIP
 *    headers exist, so map onto clang's AMDGPU builtins directly;
 *  - host emulation (MXA_HIP_EMULATE, tests/hip): the emulator defines them.
 * Kernels use only the MXA_* names below, never threadIdx or expf directly.
 */
#ifndef MXA_HIP_PRELUDE_H
#define MXA_HIP_PRELUDE_H

typedef unsigned char mxa_u8;
typedef signed char mxa_i8;
typedef unsigned int mxa_u32;
typedef long long mxa_i64;
typedef unsigned long long mxa_u64;

#if defined(MXA_HIP_EMULATE)
/* Everything comes from the emulator header included before this file. */
#else

#if !defined(__HIPCC_RTC__) && !defined(__HIP__)
#error "compile as HIP (hiprtc, or clang -x hip)"
#endif

#if !defined(__HIPCC_RTC__)
/* Bare clang without HIP headers (the compile check). */
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define MXA_TID() ((int)__builtin_amdgcn_workitem_id_x())
#define MXA_BID_X() ((long long)__builtin_amdgcn_workgroup_id_x())
#define MXA_BID_Y() ((int)__builtin_amdgcn_workgroup_id_y())
#define MXA_BID_Z() ((int)__builtin_amdgcn_workgroup_id_z())
#define MXA_SYNC()                                                                                 \
    do {                                                                                           \
        __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");                                     \
        __builtin_amdgcn_s_barrier();                                                              \
        __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");                                     \
    } while (0)
/* llvm.exp/log/ldexp are lowered by the AMDGPU backend itself (no device libraries). */
#define MXA_EXPF(x) __builtin_expf(x)
#define MXA_LOGF(x) __builtin_logf(x)
#define MXA_LDEXPF(x, e) __builtin_ldexpf((x), (e))
#else
#define MXA_TID() ((int)threadIdx.x)
#define MXA_BID_X() ((long long)blockIdx.x)
#define MXA_BID_Y() ((int)blockIdx.y)
#define MXA_BID_Z() ((int)blockIdx.z)
#define MXA_SYNC() __syncthreads()
#define MXA_EXPF(x) expf(x)
#define MXA_LOGF(x) logf(x)
#define MXA_LDEXPF(x, e) ldexpf((x), (e))
#endif

#define MXA_KERNEL extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(1, 256)))
#define MXA_DEV static __device__ inline
#define MXA_SHARED __shared__
#define MXA_INF __builtin_inff()
#define MXA_NAN __builtin_nanf("")

#endif /* MXA_HIP_EMULATE */

MXA_DEV mxa_u32 mxa_bits(float x) { return __builtin_bit_cast(mxa_u32, x); }

#endif
