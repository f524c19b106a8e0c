// The prep kernels' input (binding 0): float32, float16 or bfloat16 elements (IN_TYPE), read
// as their exact float32 values, so a 16-bit tensor prepares to the same bits as the float32
// tensor of its values. x_offset and element indices count elements of the input's own size.
// The 16-bit forms widen exactly on any device (widen16x2).
layout(constant_id = 2) const int IN_TYPE = 0; // 0 float32, 1 float16, 2 bfloat16
layout(std430, binding = 0) readonly buffer XW { uint xw[]; };
layout(std430, binding = 0) readonly buffer XW2 { uvec2 xw2[]; }; // the same buffer: four 16-bit elements
layout(std430, binding = 0) readonly buffer XW4 { uvec4 xw4[]; }; // the same buffer: four float32 elements

// A float16 subnormal or zero (exponent field 0): m 2^-24, normal in float32, so no device's
// denormal handling enters.
float f16_small(uint h)
{
    const float s = float(h & 0x3ffu) * 5.9604644775390625e-8;
    return (h & 0x8000u) != 0u ? -s : s;
}

// The two 16-bit elements of word w (the low one first) as their float32 values: float16 by the
// hardware conversion (exact for every normal value), its subnormals by f16_small; bfloat16 by
// moving its bits into the top of a float32.
vec2 widen16x2(uint w)
{
    if (IN_TYPE == 2) return vec2(uintBitsToFloat(w << 16), uintBitsToFloat(w & 0xffff0000u));
    vec2 v = unpackHalf2x16(w);
    if ((w & 0x7c00u) == 0u) v.x = f16_small(w);
    if ((w & 0x7c000000u) == 0u) v.y = f16_small(w >> 16);
    return v;
}

// element i
float load_x(uint i)
{
    if (IN_TYPE == 0) return uintBitsToFloat(xw[i]);
    const vec2 v = widen16x2(xw[i >> 1]);
    return (i & 1u) != 0u ? v.y : v.x;
}

// elements i .. i + 3, for i and the binding's element offset multiples of 4
vec4 load_x4(uint i)
{
    if (IN_TYPE == 0) return uintBitsToFloat(xw4[i >> 2]);
    const uvec2 w = xw2[i >> 2];
    return vec4(widen16x2(w.x), widen16x2(w.y));
}
