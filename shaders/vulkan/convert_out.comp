#version 450
// A float32 result rounded once to float16 or bfloat16 (round to nearest even, exactly as
// runtime/tensor.c's mxa_f32_to_f16 / mxa_f32_to_bf16), two values per 32-bit word, so no
// 16-bit storage feature is needed.
layout(local_size_x = 64) in;

layout(constant_id = 0) const int BF16 = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };

layout(push_constant) uniform P {
    uint pairs, y_offset; // y_offset in words
} pc;

uint to_bf16(float f)
{
    uint u = floatBitsToUint(f);
    if (isnan(f)) return (u >> 16) | 0x40u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

uint to_f16(float f)
{
    uint u = floatBitsToUint(f);
    uint sign = (u >> 16) & 0x8000u;
    uint au = u & 0x7fffffffu;
    if (au > 0x7f800000u) return sign | 0x7e00u;          // NaN
    if (au >= 0x477ff000u) return sign | 0x7c00u;         // >= 65520: rounds to Inf
    if (au < 0x38800000u) {                               // below 2^-14: units of 2^-24
        // the value in units of 2^-24 is m * 2^(e - 150 + 24); shift the 24-bit significand
        uint e = au >> 23;
        if (e < 102u) return sign;                        // below 2^-25: rounds to 0
        uint m = (au & 0x7fffffu) | 0x800000u;
        uint shift = 126u - e;                            // 14..24 dropped bits
        uint q = m >> shift, rem = m & ((1u << shift) - 1u), half_ = 1u << (shift - 1u);
        if (rem > half_ || (rem == half_ && (q & 1u) != 0u)) q++;
        return sign | q;
    }
    uint r = au + 0x0fffu + ((au >> 13) & 1u);
    return sign | ((((r >> 23) - 112u) << 10) | ((r >> 13) & 0x3ffu));
}

void main()
{
    uint i = gl_WorkGroupID.y * gl_NumWorkGroups.x * 64u + gl_GlobalInvocationID.x;
    if (i >= pc.pairs) return;
    float a = x[2u * i], b = x[2u * i + 1u];
    y[pc.y_offset + i] = BF16 != 0 ? (to_bf16(a) | to_bf16(b) << 16) : (to_f16(a) | to_f16(b) << 16);
}
