/* Text from drivers made safe to print (internal). */
#ifndef MXA_RUNTIME_TEXT_H
#define MXA_RUNTIME_TEXT_H

#include <stddef.h>

#include "mxa/mxa.h"
#include "status.h"

/* Replaces, in place, every byte of `s` that is not part of printable, valid
 * UTF-8 with '?': control characters (C0, DEL, C1), stray or truncated
 * sequences, overlong forms, surrogates and code points past U+10FFFF.
 * Returns the number of bytes replaced. */
int mxa_text_sanitize(char *s);

/* snprintf for text meant for people (reasons, notes): cut at the buffer's end if it must
 * be, which is why it is not snprintf itself (the compiler flags every possible cut). */
void mxa_text_format(char *out, size_t size, const char *fmt, ...) MXA_PRINTF(3, 4);

/* mxa_text_sanitize on the strings a driver supplies: name, vendor, driver, capabilities. */
void mxa_device_info_sanitize(mxa_device_info *info);

#endif
