/*
 * mxa_rule_parse: q=<x> is range-checked on the numeral itself, not on its
 * float or double rounding (issue 15: q=8.0000001 and q=5.9999999 round to
 * 8.0f and 6.0f and were accepted).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mxa/mxa.h"

static void accepts(const char *text, float q)
{
    mxa_rule r = {MXA_RULE_OCP, 0.0f};
    if (mxa_rule_parse(text, &r) != MXA_OK) fail_msg("'%s' refused: %s", text, mxa_last_error_message());
    if (r.kind != MXA_RULE_CEIL || r.q != q) fail_msg("'%s' parsed as kind %d q %.9g, expected q %.9g", text, (int)r.kind, (double)r.q, (double)q);
}

static void refuses(const char *text)
{
    mxa_rule r = {MXA_RULE_OCP, 0.0f};
    if (mxa_rule_parse(text, &r) != MXA_ERR_INVALID_ARGUMENT) fail_msg("'%s' accepted (q %.9g)", text, (double)r.q);
}

static void test_just_outside(void **state)
{
    (void)state;
    /* round to 8.0f / 6.0f in float, and (the long ones) to 8.0 / 6.0 in double */
    const char *bad[] = {"q=8.0000001", "q=5.9999999", "q=8.00000000000000000001", "q=5.99999999999999999999",
                         "q=8.000000000000000000000000000000000000000001", "q=80000000000000000001e-19",
                         "q=0.59999999999999999999e1", "q=8.0e0000001", "q=+8.0000001", "q=800000000000000000000001e-23",
                         "q=-6", "q=-8", "q=5.999999999999999999999999999999999999999999999999e0",
                         "q=0x8.00000000000000001p0", "q=0x1.00000000000000000000001p3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) refuses(bad[i]);
}

static void test_inside_and_edges(void **state)
{
    (void)state;
    accepts("q=6", 6.0f);
    accepts("q=8", 8.0f);
    accepts("q=8.0", 8.0f);
    accepts("q=8.000000000000000000000000", 8.0f);
    accepts("q=6.000", 6.0f);
    accepts("q=+6", 6.0f);
    accepts("q=0.8e1", 8.0f);
    accepts("q=80e-1", 8.0f);
    accepts("q=0.0000006e7", 6.0f);
    accepts("q=600000000000000000000000e-23", 6.0f);
    accepts("q=0x8p0", 8.0f);
    accepts("q=0x1.8p2", 6.0f);
    accepts("q=6.5", 6.5f);
    accepts("q=7.25", 7.25f);
    /* just inside: the numeral is in [6, 8] even though it rounds to an end */
    accepts("q=7.99999999999999999999", 8.0f);
    accepts("q=6.00000000000000000001", 6.0f);
    accepts("q=7.9999999", 8.0f);
    accepts("q=6.0000001", 6.0000000f);
}

static void test_not_numbers(void **state)
{
    (void)state;
    const char *bad[] = {"q=", "q=.", "q=e1", "q=8e", "q=8e+", "q=8.0.0", "q=nan", "q=inf", "q=infinity",
                         "q=9", "q=5.99", "q=7x", "q=8 ", "q=1e400", "q=0x", "UOS", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) refuses(bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_just_outside),
        cmocka_unit_test(test_inside_and_edges),
        cmocka_unit_test(test_not_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
