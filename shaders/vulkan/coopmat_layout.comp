#version 450
// Which (row, column) each element index of a 16x16 cooperative matrix holds in each
// lane: the Vulkan extension leaves it to the driver, and attn_coopmat_nv_reg.comp
// relies on the mma.sync layout. One subgroup loads matrices whose element (r, c) is
// r * 16 + c (exact in fp16) and writes, per lane L and index i, out[L * 8 + i] for the
// fp16 A matrix and out[256 + L * 8 + i] for the fp32 accumulator; out[512], out[513]
// are the two lengths (more than 8 elements per lane: only the first 8 are written).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;

layout(std430, binding = 0) writeonly buffer O { float outv[]; };

shared float16_t sh[256];
shared float sf[256];

void main()
{
    const uint lane = gl_LocalInvocationID.x;
    for (uint i = lane; i < 256u; i += 32u) {
        sh[i] = float16_t(float(i));
        sf[i] = float(i);
    }
    barrier();
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a;
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> c;
    coopMatLoadNV(a, sh, 0u, 16u, false);
    coopMatLoadNV(c, sf, 0u, 16u, false);
    for (int i = 0; i < min(a.length(), 8); i++) outv[lane * 8u + uint(i)] = float(a[i]);
    for (int i = 0; i < min(c.length(), 8); i++) outv[256u + lane * 8u + uint(i)] = c[i];
    if (lane == 0u) {
        outv[512] = float(a.length());
        outv[513] = float(c.length());
    }
}
