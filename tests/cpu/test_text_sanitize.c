/* mxa_text_sanitize: driver strings made printable, valid UTF-8 kept (issue 15, defect 12). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "runtime/text.h"

static void test_cases(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
        int replaced;
    } cases[] = {
        {"NVIDIA H200", "NVIDIA H200", 0},
        {"", "", 0},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0}, /* 2, 3, 4 bytes */
        {"a\tb\nc\rd", "a?b?c?d", 3},
        {"\x1b[31mred\x1b[0m", "?[31mred?[0m", 2},
        {"del\x7f", "del?", 1},
        {"\x80\xbf", "??", 2},                 /* stray continuation bytes */
        {"end\xc3", "end?", 1},                /* truncated at the end (snprintf cut it) */
        {"\xe2\x82x", "??x", 2},               /* truncated in the middle */
        {"\xc0\xaf\xe0\x80\xaf", "?????", 5},  /* overlong '/' (2 and 3 bytes) */
        {"\xed\xa0\x80", "???", 3},            /* a UTF-16 surrogate */
        {"\xf4\x90\x80\x80\xf5\x80", "??????", 6}, /* past U+10FFFF */
        {"\xc2\x85\xc2\xa0", "??\xc2\xa0", 2}, /* C1 control NEL; NBSP kept */
        {"\xff\xfe", "??", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s", cases[i].in);
        const int n = mxa_text_sanitize(buf);
        if (strcmp(buf, cases[i].out) != 0 || n != cases[i].replaced) fail_msg("case %zu: '%s', %d replaced", i, buf, n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cases)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
