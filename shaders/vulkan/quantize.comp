#version 450
// mxa_quantize: one invocation per 32-element block of a row. Codes are written as
// 4 uints per block (element 2k in the low nibble of byte k, little-endian), scales
// as one uint per block (the host narrows them to bytes). FP8 (spec 0, mxa_quantize_mxfp8):
// MXFP8 E4M3, 8 uints per block (element k in byte k, sign in bit 7).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;
#include "mxfp4.glsl"

layout(constant_id = 0) const int FP8 = 0;
const uint WORDS = FP8 != 0 ? 8u : 4u; // code words per block

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer C { uint codes[]; };
layout(std430, binding = 2) writeonly buffer S { uint scales[]; };

layout(push_constant) uniform P {
    uint rows, cols, nblocks, x_offset, kind, t;
} pc;

void main()
{
    uint idx = gl_WorkGroupID.y * gl_NumWorkGroups.x * 64u + gl_GlobalInvocationID.x;
    if (idx >= pc.rows * pc.nblocks) return;
    uint row = idx / pc.nblocks, blk = idx % pc.nblocks;
    uint base = pc.x_offset + row * pc.cols + blk * 32u;
    uint n = min(32u, pc.cols - blk * 32u);
    uint bits[32];
    uint maxbits = 0u;
    bool finite = true;
    for (uint i = 0u; i < 32u; i++) {
        uint b = floatBitsToUint(x[base + min(i, n - 1u)]); // clamped: never loads out of bounds
        bits[i] = i < n ? b : 0u;
        if (mx_nonfinite(bits[i])) finite = false;
        maxbits = max(maxbits, bits[i] & 0x7fffffffu);
    }
    if (!finite) {
        for (uint w = 0u; w < WORDS; w++) codes[idx * WORDS + w] = 0u;
        scales[idx] = 255u;
        return;
    }
    int e = mx_exponent(maxbits, FP8 != 0 ? 2u : pc.kind, pc.t);
    if (FP8 != 0) {
        for (uint w = 0u; w < 8u; w++) {
            uint word = 0u;
            for (uint j = 0u; j < 4u; j++) {
                uint b = bits[w * 4u + j];
                word |= (mx_code8(b & 0x7fffffffu, e) | ((b >> 24) & 0x80u)) << (8u * j);
            }
            codes[idx * 8u + w] = word;
        }
        scales[idx] = uint(e + 127);
        return;
    }
    for (uint w = 0u; w < 4u; w++) {
        uint word = 0u;
        for (uint j = 0u; j < 8u; j++) {
            uint b = bits[w * 8u + j];
            uint c = mx_code(b & 0x7fffffffu, e) | ((b >> 28) & 8u);
            word |= c << (4u * j);
        }
        codes[idx * 4u + w] = word;
    }
    scales[idx] = uint(e + 127);
}
