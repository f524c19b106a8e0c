/*
 * The cooperative-matrix fragment map (vk_coopmat_layout.c) decoded from synthetic
 * outputs of coopmat_layout.comp: element orders become the specialization constants
 * of the register kernel, and anything but the quad structure is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "backends/vulkan/vk_common.h"

/* What the kernel would write for the given per-element codes (bit 0 column + 1,
 * bit 1 row + 8, bit 2 column + 8) of the fp16 and fp32 matrices. */
static void synthesize(const int a[8], const int c[8], float *v)
{
    for (int lane = 0; lane < 32; lane++)
        for (int i = 0; i < 8; i++) {
            const int g = lane / 4, t = lane % 4;
            v[lane * 8 + i] = (float)((g + 8 * ((a[i] >> 1) & 1)) * 16 + 2 * t + (a[i] & 1) + 8 * (a[i] >> 2));
            v[256 + lane * 8 + i] = (float)((g + 8 * ((c[i] >> 1) & 1)) * 16 + 2 * t + (c[i] & 1) + 8 * (c[i] >> 2));
        }
    v[512] = v[513] = 8.0f;
}

/* Decodes what the kernel would write for these orders (v keeps it for edits). */
static int decode(const int a[8], const int c[8], float *v, vk_probe_data *p)
{
    memset(p, 0, sizeof *p);
    synthesize(a, c, v);
    return vk_fragment_map_decode(v, p);
}

static uint32_t pack(const int x[8])
{
    uint32_t p = 0;
    for (int i = 0; i < 8; i++) p |= (uint32_t)x[i] << (3 * i);
    return p;
}

static void test_mma_order(void **state)
{
    (void)state;
    const int id[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    float v[VK_LAYOUT_VALUES];
    vk_probe_data p;
    assert_int_equal(decode(id, id, v, &p), 1);
    assert_int_equal(p.c_map, 0xFAC688u); /* the shader's default: codes 0..7 in order */
    assert_int_equal(p.a_from_c, 0xFAC688u);
}

static void test_different_orders(void **state)
{
    (void)state;
    /* fp16 walks the columns before the rows; fp32 some other permutation */
    const int a[8] = {0, 1, 4, 5, 2, 3, 6, 7}, c[8] = {2, 3, 0, 1, 6, 7, 4, 5};
    float v[VK_LAYOUT_VALUES];
    vk_probe_data p;
    assert_int_equal(decode(a, c, v, &p), 1);
    assert_int_equal(p.c_map, pack(c));
    /* A element i sits where accumulator element a_from_c[i] sits */
    int from[8];
    for (int i = 0; i < 8; i++) from[i] = (int)((p.a_from_c >> (3 * i)) & 7);
    for (int i = 0; i < 8; i++) assert_int_equal(c[from[i]], a[i]);
    assert_non_null(strstr(p.layout_note, "fp16 order 01452367"));
}

static void test_refused(void **state)
{
    (void)state;
    const int id[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    float v[VK_LAYOUT_VALUES];
    vk_probe_data p;

    memset(&p, 0, sizeof p);
    synthesize(id, id, v);
    v[512] = 16.0f; /* another fragment size */
    assert_int_equal(vk_fragment_map_decode(v, &p), 0);
    assert_non_null(strstr(p.layout_note, "not 8"));

    synthesize(id, id, v);
    v[256 + 3] = 1.0f * 16 + 0; /* lane 0 holding row 1: not a quad fragment */
    assert_int_equal(vk_fragment_map_decode(v, &p), 0);
    assert_non_null(strstr(p.layout_note, "fp32 element 3 of lane 0"));

    synthesize(id, id, v);
    v[1] = v[0]; /* one position twice */
    assert_int_equal(vk_fragment_map_decode(v, &p), 0);
    assert_non_null(strstr(p.layout_note, "repeat"));

    synthesize(id, id, v);
    v[17 * 8 + 5] += 1.0f; /* one lane out of step with lane 0 */
    assert_int_equal(vk_fragment_map_decode(v, &p), 0);
    assert_non_null(strstr(p.layout_note, "lane 17"));
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
