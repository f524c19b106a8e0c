#version 450
// Peak rate of packed int8 dot products (SPIR-V OpSDot on 4 x int8 in a uint, then an
// integer add: the pair a single IDP4A / v_dot4_i32_i8 / DP4A instruction implements), for
// tests/gpu/vk_dot_rate.c. Each invocation runs CHAINS independent chains of
// a = dot(a, b) + a (each step needs the previous one, so nothing can be hoisted or folded;
// the chains are independent of each other, so CHAINS of them are in flight at once),
// iters x 8 steps each. ACCSAT = 1 uses OpSDotAccSat (the saturating accumulate) instead.
// Dot products per invocation: iters * 8 * CHAINS; one dot product = 8 integer ops.
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_spirv_intrinsics : require

spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int packed_format);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4453)
int sdot4x8_accsat(uint a, uint b, int acc, spirv_literal int packed_format);

layout(local_size_x_id = 3, local_size_x = 256) in;
layout(constant_id = 0) const int CHAINS = 16;
layout(constant_id = 1) const int ACCSAT = 0;

layout(std430, binding = 0) writeonly buffer R { int r[]; };
layout(push_constant) uniform P { uint iters, seed; } pc;

void main()
{
    const uint gid = gl_GlobalInvocationID.x;
    int a[CHAINS];
    uint b[CHAINS];
    [[unroll]] for (int c = 0; c < CHAINS; c++) {
        a[c] = int((gid * 2654435761u) ^ (pc.seed + uint(c) * 40503u));
        b[c] = pc.seed * uint(2 * c + 1) + 0x01030507u * uint(c + 1);
    }
    for (uint i = 0u; i < pc.iters; i++) {
        [[unroll]] for (int k = 0; k < 8; k++) {
            [[unroll]] for (int c = 0; c < CHAINS; c++) {
                if (ACCSAT != 0) a[c] = sdot4x8_accsat(uint(a[c]), b[c], a[c], 0);
                else a[c] = sdot4x8(uint(a[c]), b[c], 0) + a[c];
            }
        }
    }
    int s = 0;
    [[unroll]] for (int c = 0; c < CHAINS; c++) s ^= a[c] * (2 * c + 1);
    r[gid] = s;
}
