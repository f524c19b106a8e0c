/* Text from drivers made safe to print (internal). */
#ifndef MXA_RUNTIME_TEXT_H
#define MXA_RUNTIME_TEXT_H

#include "mxa/mxa.h"

/* Replaces, in place, every byte of `s` that is not part of printable, valid
 * UTF-8 with '?': control characters (C0, DEL, C1), stray or truncated
 * sequences, overlong forms, surrogates and code points past U+10FFFF.
 * Returns the number of bytes replaced. */
int mxa_text_sanitize(char *s);

/* mxa_text_sanitize on the strings a driver supplies: name, vendor, driver, capabilities. */
void mxa_device_info_sanitize(mxa_device_info *info);

#endif
