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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
