#version 450
// Pre-quantized K or V (runtime/kv.c: mxa_quantize's layout, 16 code bytes and one scale
// byte per block of 32) decoded to float32 for the prep kernels, one invocation per block.
//   TRANSPOSE = 0: K rows [rows][blocks * 32] as they are;
//   TRANSPOSE = 1: V^T rows [heads * D][blocks * 32 tokens] back to V [heads][n][D], the
//                  tokens past n (the padding to 32) dropped.
// The decode is runtime/mxfp4.c's mxa_decode: E2M1 value * 2^(scale - 127), NaN for 0xFF.
layout(local_size_x = 64) in;

layout(constant_id = 0) const int TRANSPOSE = 0;

layout(std430, binding = 0) readonly buffer C { uint codes[]; };  // 4 words per block
layout(std430, binding = 1) readonly buffer S { uint scales[]; }; // bytes, 4 per word
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform P {
    uint rows, blocks, n, d; // n, d: TRANSPOSE only (tokens kept, head dimension)
} pc;

const float E2M1[8] = float[8](0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0);

void main()
{
    const uint idx = gl_WorkGroupID.y * gl_NumWorkGroups.x * 64u + gl_GlobalInvocationID.x;
    if (idx >= pc.rows * pc.blocks) return;
    const uint row = idx / pc.blocks, blk = idx % pc.blocks;
    const uint sbyte = (scales[idx >> 2] >> ((idx & 3u) * 8u)) & 0xFFu;
    const uint head = row / max(pc.d, 1u), c = row % max(pc.d, 1u);
    for (uint w = 0u; w < 4u; w++) {
        const uint word = codes[idx * 4u + w];
        for (uint i = 0u; i < 8u; i++) {
            const uint code = (word >> (4u * i)) & 0xFu;
            const float m = E2M1[code & 7u];
            float x = sbyte == 0xFFu ? uintBitsToFloat(0x7fc00000u) : ldexp(m, int(sbyte) - 127);
            if ((code & 8u) != 0u) x = -x;
            const uint col = blk * 32u + w * 8u + i;
            if (TRANSPOSE == 0) {
                y[row * pc.blocks * 32u + col] = x;
            } else if (col < pc.n) {
                y[(head * pc.n + col) * pc.d + c] = x;
            }
        }
    }
}
