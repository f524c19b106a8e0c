#version 450
// Reports where VK_KHR_cooperative_matrix puts each element of an int8 16x32 A matrix (what
// P^ becomes in attn_coopmat_khr.comp's PV_INT8 path), for vk_coopmat_layout.c. As that
// kernel does, each lane writes its elements, here the lane's index into one matrix and the
// element's index into another; both are stored row-major (16 x 32 bytes, 4 per word):
// out[0..127] the lanes, out[128..255] the element indices, out[256] the element count.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
layout(local_size_x = 32) in;

layout(std430, binding = 0) writeonly buffer O { uint outw[]; };

void main()
{
    const uint lane = gl_LocalInvocationID.x;
    coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> who, which;
    for (int i = 0; i < who.length(); i++) {
        who[i] = int8_t(lane);
        which[i] = int8_t(i);
    }
    coopMatStore(who, outw, 0u, 8u, gl_CooperativeMatrixLayoutRowMajor); // 8 words per row
    coopMatStore(which, outw, 128u, 8u, gl_CooperativeMatrixLayoutRowMajor);
    if (lane == 0u) outw[256] = uint(who.length());
}
