"""Not a test: attention_mma.cl made runnable on PoCL, to check kernel changes bit for bit without a GPU.
mma.sync, shfl and the warp vote become local-memory exchanges between barriers (the vote work-group
wide, so no barrier diverges; loops stay rolled, or PoCL takes minutes to compile).
Usage, in a scratch copy of the tree (git archive HEAD | tar -x -C /tmp/x):
  python3 tests/opencl/mma_emulate.py shaders/opencl/attention_mma.cl /tmp/e.cl && cp /tmp/e.cl shaders/opencl/attention_mma.cl
  sed -i 's/if (!dd->is_nvidia || dd->type != CL_DEVICE_TYPE_GPU)/if (0)/; s/else if (dd->cc_major < 8)/else if (0)/' backends/opencl/cl_probe.c
  build, then MXA_OPENCL_PREP_QK=local MXA_OPENCL_NO_ASYNC=1 tests/opencl/test_opencl_attention (the local-memory
  prep: PoCL cannot build the default prep's PTX shuffles; about ten minutes on 2 cores; dump o per case to compare runs).
"""
import re, sys
src = open(sys.argv[1]).read()
def drop(name):
    global src
    m = re.search(r'^[a-z][^\n]*\b' + name + r'\(.*?\n\}\n', src, re.S | re.M)
    if m: src = src[:m.start()] + src[m.end():]
    return bool(m)
for n in ['mma16832', 'mma16832_acc', 'shfl_xor', 'quad_max', 'quad_sum', 'warp_all', 'prmt', 'ex2_ftz']:
    drop(n)
emu = r'''
void mma_emu(int d[4], const uint a[4], uint2 b, __local uint *emu)
{
    const int lane = get_local_id(0) & 31, w = get_local_id(0) >> 5;
    __local uint *A = emu + w * 256, *B = A + 128;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < 4; i++) A[lane * 4 + i] = a[i];
    B[lane * 2] = b.x; B[lane * 2 + 1] = b.y;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int g = lane >> 2, t = lane & 3;
    for (int j = 0; j < 4; j++) {
        const int row = g + (j >= 2 ? 8 : 0), col = 2 * t + (j & 1);
        int sum = 0;
        for (int k = 0; k < 32; k++) {
            const int la = (row & 7) * 4 + ((k & 15) >> 2), ra = (row >= 8) + (k >= 16 ? 2 : 0);
            const int lb = col * 4 + ((k & 15) >> 2), rb = k >= 16;
            const int av = (int)(char)(A[la * 4 + ra] >> (8 * (k & 3)));
            const int bv = (int)(char)(B[lb * 2 + rb] >> (8 * (k & 3)));
            sum += av * bv;
        }
        d[j] += sum;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
void mma16832_e(float d[4], const uint a[4], uint2 b, __local uint *emu)
{
    int r[4] = {BIAS_BITS, BIAS_BITS, BIAS_BITS, BIAS_BITS};
    mma_emu(r, a, b, emu);
    for (int i = 0; i < 4; i++) d[i] = as_float(r[i]);
}
float shfl_e(float v, int mask, __local uint *emu)
{
    const int lane = get_local_id(0) & 31, w = get_local_id(0) >> 5;
    __local uint *X = emu + w * 256;
    barrier(CLK_LOCAL_MEM_FENCE);
    X[lane] = as_uint(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint r = X[lane ^ mask];
    barrier(CLK_LOCAL_MEM_FENCE);
    return as_float(r);
}
float quad_max_e(float v, __local uint *emu) { v = fmax(v, shfl_e(v, 1, emu)); return fmax(v, shfl_e(v, 2, emu)); }
float quad_sum_e(float v, __local uint *emu) { v += shfl_e(v, 1, emu); return v + shfl_e(v, 2, emu); }
/* work-group wide (so that no barrier is divergent) */
int warp_all_e(int v, __local uint *emu)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) emu[WG * 8] = 1u;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!v) emu[WG * 8] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int r = (int)emu[WG * 8];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
/* PTX ex2.approx.ftz.f32: results below 2^-126 flushed */
float ex2_ftz(float x) { const float r = native_exp2(x); return r < 0x1p-126f ? 0.0f : r; }
/* PTX prmt without sign replication: byte i of the result is byte (sel >> 4i) & 7 of {b, a} */
uint prmt(uint a, uint b, uint sel)
{
    const ulong x = (ulong)b << 32 | a;
    uint r = 0u;
    for (int i = 0; i < 4; i++) r |= (uint)((x >> (8 * ((sel >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
    return r;
}
#define mma16832(d, a, b) mma16832_e(d, a, b, emu)
#define mma16832_acc(d, a, b) mma_emu(d, a, b, emu)
#define shfl_xor(v, m) shfl_e(v, m, emu)
#define quad_max(v) quad_max_e(v, emu)
#define quad_sum(v) quad_sum_e(v, emu)
#define warp_all(v) warp_all_e(v, emu)
'''
i = src.index('/* one-scale score path')
src = src[:i] + emu + src[i:]
src = src.replace('__local uint *stages = (__local uint *)stage4;',
                  '__local uint *stages = (__local uint *)stage4;\n    __local uint emu[WG * 8 + 1];', 1)
open(sys.argv[2], 'w').write(src)
# PoCL: keep the barrier-laden loops rolled (compile time)
src = open(sys.argv[2]).read().replace('#pragma unroll', '#pragma nounroll')
open(sys.argv[2], 'w').write(src)
