/* Text from drivers made safe to print: `mxa probe` printed raw bytes of a
 * garbage device name (terminal escapes included). */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "text.h"

void mxa_text_format(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, size, fmt, ap);
    va_end(ap);
}

/* Length of the valid, printable UTF-8 sequence at s (1..4), or 0. */
static int valid_sequence(const unsigned char *s)
{
    const unsigned c = s[0];
    if (c >= 0x20 && c < 0x7f) return 1;
    int n;
    unsigned cp, min;
    if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07, min = 0x10000;
    else return 0; /* controls, DEL, stray continuation bytes, 0xc0/0xc1, 0xf5.. */
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0; /* also stops at the terminating NUL */
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f)) return 0;
    return n;
}

int mxa_text_sanitize(char *s)
{
    int replaced = 0;
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        const int n = valid_sequence(p);
        if (n) {
            p += n;
        } else {
            *p++ = '?';
            replaced++;
        }
    }
    return replaced;
}

void mxa_device_info_sanitize(mxa_device_info *info)
{
    mxa_text_sanitize(info->name);
    mxa_text_sanitize(info->vendor);
    mxa_text_sanitize(info->driver);
    mxa_text_sanitize(info->capabilities);
}
