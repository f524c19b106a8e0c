// The prep kernels' input (binding 0): float32, float16 or bfloat16 elements (IN_TYPE), read
// as their exact float32 values, so a 16-bit tensor prepares to the same bits as the float32
// tensor of its values. x_offset and element indices count elements of the input's own size.
// The 16-bit forms widen by moving bits (a float16 subnormal through an exact product), so
// no device's denormal or conversion behaviour enters.
layout(constant_id = 2) const int IN_TYPE = 0; // 0 float32, 1 float16, 2 bfloat16
layout(std430, binding = 0) readonly buffer XW { uint xw[]; };
layout(std430, binding = 0) readonly buffer XW2 { uvec2 xw2[]; }; // the same buffer: four 16-bit elements
layout(std430, binding = 0) readonly buffer XW4 { uvec4 xw4[]; }; // the same buffer: four float32 elements

float widen16(uint h)
{
    if (IN_TYPE == 2) return uintBitsToFloat(h << 16);
    const uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0u) { // zero or subnormal: m 2^-24, normal in float32
        const float s = float(m) * 5.9604644775390625e-8;
        return sign != 0u ? -s : s;
    }
    return uintBitsToFloat(sign | (e == 31u ? 0x7f800000u : (e + 112u) << 23) | m << 13);
}

// element i
float load_x(uint i)
{
    if (IN_TYPE == 0) return uintBitsToFloat(xw[i]);
    const uint w = xw[i >> 1];
    return widen16((i & 1u) != 0u ? w >> 16 : w & 0xffffu);
}

// elements i .. i + 3, for i and the binding's element offset multiples of 4
vec4 load_x4(uint i)
{
    if (IN_TYPE == 0) return uintBitsToFloat(xw4[i >> 2]);
    const uvec2 w = xw2[i >> 2];
    return vec4(widen16(w.x & 0xffffu), widen16(w.x >> 16), widen16(w.y & 0xffffu), widen16(w.y >> 16));
}
