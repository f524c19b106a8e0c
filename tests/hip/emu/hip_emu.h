/*
 * Host emulation of the HIP execution model, just enough to run the kernels
 * of shaders/hip on the CPU: one std::thread per work-item, workgroups one
 * after another (so a function-scope `static` is the workgroup's LDS), a
 * barrier for __syncthreads, and the MFMA instructions as wave-collective
 * functions implementing the operand layouts documented in mxa_hip_mfma.h.
 * This checks the kernels' arithmetic and indexing; it cannot check that the
 * hardware's layouts are what that header says (no AMD GPU here).
 */
#ifndef MXA_HIP_EMU_H
#define MXA_HIP_EMU_H

#include <cmath>
#include <cstring>
#include <functional>

#define MXA_HIP_EMULATE 1

struct mxa_emu_ctx {
    int tid;
    long long bx;
    int by, bz;
};
extern thread_local mxa_emu_ctx mxa_emu;
void mxa_emu_sync();
/* Runs body() on every work-item of every workgroup. */
void mxa_emu_run(unsigned gx, unsigned gy, unsigned gz, unsigned threads, const std::function<void()> &body);

#define MXA_TID() (mxa_emu.tid)
#define MXA_BID_X() (mxa_emu.bx)
#define MXA_BID_Y() (mxa_emu.by)
#define MXA_BID_Z() (mxa_emu.bz)
#define MXA_SYNC() mxa_emu_sync()
#define MXA_EXPF(x) expf(x)
#define MXA_LOGF(x) logf(x)
#define MXA_LDEXPF(x, e) ldexpf((x), (e))
#define MXA_KERNEL static
#define MXA_DEV static inline
#define MXA_SHARED static
#define MXA_INF __builtin_inff()
#define MXA_NAN __builtin_nanf("")

#include "mxa_hip_prelude.h"

template <typename T, int N> struct mxa_vec {
    T v[N];
    T &operator[](int i) { return v[i]; }
    const T &operator[](int i) const { return v[i]; }
};
typedef mxa_vec<int, 16> mxa_v16i;
typedef mxa_vec<float, 16> mxa_v16f;
typedef mxa_vec<int, 8> mxa_v8i;

static inline int mxa_emu_row(int i, int lane)
{
    return 8 * (i >> 2) + 4 * (lane >> 5) + (i & 3);
}

#if defined(MXA_MFMA_K16) && MXA_MFMA_K16
typedef mxa_i64 mxa_i8op;
#define MXA_I8_K 16
#else
typedef int mxa_i8op;
#define MXA_I8_K 8
#endif

/* int8 MFMA 32x32xK: every lane passes its operands; each lane gets its 16 results. */
static inline mxa_v16i mxa_mfma_i8(mxa_i8op a, mxa_i8op b, mxa_v16i c)
{
    static mxa_i8op sa[64], sb[64];
    const int lane = MXA_TID();
    sa[lane] = a;
    sb[lane] = b;
    mxa_emu_sync();
    mxa_v16i r = c;
    for (int i = 0; i < 16; i++) {
        const int row = mxa_emu_row(i, lane), col = lane & 31;
        for (int h = 0; h < 2; h++) /* the two K-slices: lanes 0-31 and 32-63 */
            for (int n = 0; n < MXA_I8_K / 2; n++)
                r[i] += (int)(signed char)(sa[row + 32 * h] >> (8 * n)) * (int)(signed char)(sb[col + 32 * h] >> (8 * n));
    }
    mxa_emu_sync();
    return r;
}

/* Scaled MXFP4 MFMA 32x32x64: lane l holds one MX block (row/column l % 32,
 * K-slice l / 32) and its E8M0 scale; products are exact per block. */
static inline mxa_v16f mxa_mfma_fp4(mxa_v8i a, mxa_v8i b, mxa_v16f c, int scale_a, int scale_b)
{
    static mxa_v8i sa[64], sb[64];
    static int ka[64], kb[64];
    const int lane = MXA_TID();
    sa[lane] = a, sb[lane] = b, ka[lane] = scale_a & 255, kb[lane] = scale_b & 255;
    mxa_emu_sync();
    mxa_v16f r = c;
    static const int twice[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    for (int i = 0; i < 16; i++) {
        const int row = mxa_emu_row(i, lane), col = lane & 31;
        float total = 0.0f;
        for (int h = 0; h < 2; h++) {
            const int la = row + 32 * h, lb = col + 32 * h;
            int sum = 0;
            for (int e = 0; e < 32; e++) {
                const int ca = ((unsigned)sa[la][e / 8] >> (4 * (e % 8))) & 15;
                const int cb = ((unsigned)sb[lb][e / 8] >> (4 * (e % 8))) & 15;
                sum += twice[ca] * twice[cb];
            }
            total += (ka[la] == 255 || kb[lb] == 255) ? NAN : ldexpf((float)sum, ka[la] + kb[lb] - 256);
        }
        r[i] += total;
    }
    mxa_emu_sync();
    return r;
}

#endif
