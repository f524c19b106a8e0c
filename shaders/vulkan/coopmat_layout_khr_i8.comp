#version 450
// Reports where VK_KHR_cooperative_matrix puts each element of an int8 16x32 A matrix (what
// P^ becomes in attn_coopmat_khr.comp's PV_INT8 path), for vk_coopmat_layout.c. Two loads
// from shared memory, one holding each element's column and one its row (int8 cannot hold
// row * 32 + column): lane L writes element i's column to out[L * 16 + i] and its row to
// out[512 + L * 16 + i]; out[1024] is the element count (only the first 16 are written).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
layout(local_size_x = 32) in;

layout(std430, binding = 0) writeonly buffer O { float outv[]; };

shared int8_t col8[512];
shared int8_t row8[512];

void main()
{
    const uint lane = gl_LocalInvocationID.x;
    for (uint i = lane; i < 512u; i += 32u) {
        col8[i] = int8_t(i % 32u);
        row8[i] = int8_t(i / 32u);
    }
    barrier();
    coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> c, r;
    coopMatLoad(c, col8, 0u, 32u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(r, row8, 0u, 32u, gl_CooperativeMatrixLayoutRowMajor);
    for (int i = 0; i < min(c.length(), 16); i++) {
        outv[lane * 16u + uint(i)] = float(c[i]);
        outv[512u + lane * 16u + uint(i)] = float(r[i]);
    }
    if (lane == 0u) outv[1024] = float(c.length());
}
