#version 450
// Reports where VK_KHR_cooperative_matrix puts each element of a subgroup's fragments,
// for vk_coopmat_layout.c: an fp16 16x16 A matrix (what P becomes in attn_coopmat_khr.comp)
// and an fp32 16 x N accumulator (N = 16 or 8, the S and O tiles), each loaded from
// shared memory holding row * 16 + column. Lane L writes its A elements to
// out[L * 8 + i] and its accumulator elements to out[256 + L * 8 + i]; out[512] and
// out[513] are the two element counts (only the first 8 are written).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(constant_id = 0) const int N = 16;

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
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
    coopmat<float, gl_ScopeSubgroup, 16, N, gl_MatrixUseAccumulator> c;
    coopMatLoad(a, sh, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(c, sf, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    for (int i = 0; i < min(a.length(), 8); i++) outv[lane * 8u + uint(i)] = float(a[i]);
    for (int i = 0; i < min(c.length(), 8); i++) outv[256u + lane * 8u + uint(i)] = c[i];
    if (lane == 0u) {
        outv[512] = float(a.length());
        outv[513] = float(c.length());
    }
}
