/*
 * The cooperative-matrix fragment map (vk_coopmat_layout.c) decoded from synthetic
 * outputs of coopmat_layout_khr.comp: element orders become the specialization constants
 * of the register kernel (attn_coopmat_khr.comp), and anything but the quad structure is
 * refused, so such a device takes the shared-memory kernel.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "backends/vulkan/vk_common.h"

/* What the kernel would write for the given per-element codes (bit 0 column + 1, bit 1
 * row + 8, bit 2 column + 8) of the fp16 16x16 A matrix and the fp32 16 x n accumulator. */
static void synthesize(const int a[8], const int *c, int n, float *v)
{
    memset(v, 0, sizeof(float) * VK_LAYOUT_VALUES);
    for (int lane = 0; lane < 32; lane++) {
        const int g = lane / 4, t = lane % 4;
        for (int i = 0; i < 8; i++)
            v[lane * 8 + i] = (float)((g + 8 * ((a[i] >> 1) & 1)) * 16 + 2 * t + (a[i] & 1) + 8 * (a[i] >> 2));
        for (int i = 0; i < n / 2; i++)
            v[256 + lane * 8 + i] = (float)((g + 8 * ((c[i] >> 1) & 1)) * 16 + 2 * t + (c[i] & 1) + 8 * (c[i] >> 2));
    }
    v[512] = 8.0f;
    v[513] = (float)(n / 2);
}

static uint32_t pack(const int *x, int count)
{
    uint32_t p = 0;
    for (int i = 0; i < count; i++) p |= (uint32_t)x[i] << (3 * i);
    return p;
}

/* coopmat_layout_khr_i8.comp's output for int8 16x32 A codes (j, bit 2 row + 8, bit 3
 * column + 16) per element, the same for every lane: which lane and element each position is. */
static void synthesize_i8(const int codes[16], uint32_t *w)
{
    memset(w, 0, sizeof(uint32_t) * VK_LAYOUT_I8_WORDS);
    uint8_t *who = (uint8_t *)w, *which = who + 512;
    for (int lane = 0; lane < 32; lane++) {
        const int g = lane / 4, t = lane % 4;
        for (int i = 0; i < 16; i++) {
            const int r = g + 8 * ((codes[i] >> 2) & 1), c = 4 * t + (codes[i] & 3) + 16 * (codes[i] >> 3);
            who[r * 32 + c] = (uint8_t)lane;
            which[r * 32 + c] = (uint8_t)i;
        }
    }
    w[256] = 16;
}

/* NVIDIA's mma.m16n8k32 A order is codes 0..15; another order is kept as measured; anything
 * else is refused with a reason. */
static void test_i8_a_map(void **state)
{
    (void)state;
    uint32_t w[VK_LAYOUT_I8_WORDS];
    uint8_t *who = (uint8_t *)w, *which = who + 512;
    vk_caps c;
    memset(&c, 0, sizeof c);
    int codes[16];
    for (int i = 0; i < 16; i++) codes[i] = i;
    synthesize_i8(codes, w);
    assert_int_equal(vk_khr_fragment_map_decode_i8(w, &c), 1);
    assert_int_equal(c.a8_ok, 1);
    assert_int_equal(c.a8_map[0], 0x76543210u); /* the kernel's defaults */
    assert_int_equal(c.a8_map[1], 0xFEDCBA98u);
    for (int i = 0; i < 16; i++) codes[i] = 15 - i;
    synthesize_i8(codes, w);
    assert_int_equal(vk_khr_fragment_map_decode_i8(w, &c), 1);
    assert_int_equal(c.a8_map[0], 0x89ABCDEFu);
    assert_int_equal(c.a8_map[1], 0x01234567u);
    /* column 2 of row 0 held by lane 1 (a layout of pairs, like fp16's) */
    for (int i = 0; i < 16; i++) codes[i] = i;
    synthesize_i8(codes, w);
    who[2] = 1;
    c.layout_note[0] = 0;
    assert_int_equal(vk_khr_fragment_map_decode_i8(w, &c), 0);
    assert_int_equal(c.a8_ok, 0);
    assert_non_null(strstr(c.layout_note, "not a quad fragment"));
    /* one element at two positions */
    synthesize_i8(codes, w);
    which[1] = which[0];
    assert_int_equal(vk_khr_fragment_map_decode_i8(w, &c), 0);
    /* lanes that order their elements differently */
    synthesize_i8(codes, w);
    which[32] ^= 1, which[33] ^= 1; /* lane 4 (row 1): its elements 0 and 1 swapped */
    assert_int_equal(vk_khr_fragment_map_decode_i8(w, &c), 0);
    /* an element count other than 16 */
    synthesize_i8(codes, w);
    w[256] = 8;
    c.layout_note[0] = 0;
    assert_int_equal(vk_khr_fragment_map_decode_i8(w, &c), 0);
    assert_non_null(strstr(c.layout_note, "not 16"));
}

static void test_mma_order(void **state)
{
    (void)state;
    const int id[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    float v[VK_LAYOUT_VALUES];
    vk_caps c;
    memset(&c, 0, sizeof c);
    synthesize(id, id, 16, v);
    assert_int_equal(vk_khr_fragment_map_decode(v, 16, &c), 1);
    assert_int_equal(c.quad_ok[0], 1);
    assert_int_equal(c.c_map[0], 0xFAC688u); /* the shader's default: codes 0..7 in order */
    assert_int_equal(c.a_map, 0xFAC688u);
    synthesize(id, id, 8, v);
    assert_int_equal(vk_khr_fragment_map_decode(v, 8, &c), 1);
    assert_int_equal(c.quad_ok[1], 1);
    assert_int_equal(c.c_map[1], 0x688u); /* codes 0..3 */
}

static void test_different_orders(void **state)
{
    (void)state;
    /* fp16 walks the columns before the rows (NVIDIA's, measured on the H200); fp32 some other permutation */
    const int a[8] = {0, 1, 4, 5, 2, 3, 6, 7}, c16[8] = {2, 3, 0, 1, 6, 7, 4, 5}, c8[4] = {3, 2, 1, 0};
    float v[VK_LAYOUT_VALUES];
    vk_caps c;
    memset(&c, 0, sizeof c);
    synthesize(a, c16, 16, v);
    assert_int_equal(vk_khr_fragment_map_decode(v, 16, &c), 1);
    assert_int_equal(c.a_map, pack(a, 8));
    assert_int_equal(c.c_map[0], pack(c16, 8));
    synthesize(a, c8, 8, v);
    assert_int_equal(vk_khr_fragment_map_decode(v, 8, &c), 1);
    assert_int_equal(c.c_map[1], pack(c8, 4));
    assert_non_null(strstr(c.layout_note, "fp16 01452367"));
    assert_non_null(strstr(c.layout_note, "16x8 3210"));
}

static void test_refused(void **state)
{
    (void)state;
    const int id[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    float v[VK_LAYOUT_VALUES];
    vk_caps c;

    memset(&c, 0, sizeof c);
    synthesize(id, id, 16, v);
    v[512] = 16.0f; /* another fragment size */
    assert_int_equal(vk_khr_fragment_map_decode(v, 16, &c), 0);
    assert_int_equal(c.quad_ok[0], 0);
    assert_non_null(strstr(c.layout_note, "not 8"));

    synthesize(id, id, 16, v);
    v[256 + 3] = 1.0f * 16 + 0; /* lane 0 holding row 1: not a quad fragment */
    assert_int_equal(vk_khr_fragment_map_decode(v, 16, &c), 0);
    assert_non_null(strstr(c.layout_note, "16x16 element 3 of lane 0"));

    synthesize(id, id, 16, v);
    v[1] = v[0]; /* one position twice */
    assert_int_equal(vk_khr_fragment_map_decode(v, 16, &c), 0);
    assert_non_null(strstr(c.layout_note, "repeat"));

    synthesize(id, id, 8, v);
    v[256 + 17 * 8 + 2] += 1.0f; /* one lane out of step with lane 0 */
    assert_int_equal(vk_khr_fragment_map_decode(v, 8, &c), 0);
    assert_int_equal(c.quad_ok[1], 0);
    assert_non_null(strstr(c.layout_note, "lane 17"));

    /* a column-per-lane accumulator (AMD's RDNA3 WMMA: lane l holds column l % 16, rows
     * 2i + l / 16): refused at lane 0's second element */
    synthesize(id, id, 16, v);
    for (int lane = 0; lane < 32; lane++)
        for (int i = 0; i < 8; i++) v[256 + lane * 8 + i] = (float)((2 * i + lane / 16) * 16 + lane % 16);
    assert_int_equal(vk_khr_fragment_map_decode(v, 16, &c), 0);
    assert_non_null(strstr(c.layout_note, "not a quad fragment"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mma_order),
        cmocka_unit_test(test_different_orders),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_i8_a_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
