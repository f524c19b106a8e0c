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

// 4 int8 per word, as the attention kernel's tiles (its loads read int8 matrices from words)
shared uint col8[128];
shared uint row8[128];

void main()
{
    const uint lane = gl_LocalInvocationID.x;
    for (uint w = lane; w < 128u; w += 32u) { // word w: elements 4w..4w+3 of the 16 x 32 row-major matrix
        const uint e = 4u * w, row = e / 32u, col = e % 32u;
        col8[w] = col | (col + 1u) << 8 | (col + 2u) << 16 | (col + 3u) << 24;
        row8[w] = row * 0x01010101u;
    }
    barrier();
    coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> c, r;
    coopMatLoad(c, col8, 0u, 8u, gl_CooperativeMatrixLayoutRowMajor); // stride: 8 words per row
    coopMatLoad(r, row8, 0u, 8u, gl_CooperativeMatrixLayoutRowMajor);
    for (int i = 0; i < min(c.length(), 16); i++) {
        outv[lane * 16u + uint(i)] = float(c[i]);
        outv[512u + lane * 16u + uint(i)] = float(r[i]);
    }
    if (lane == 0u) outv[1024] = float(c.length());
}
