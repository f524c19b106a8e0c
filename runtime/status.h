/* Status and the thread-local error message (internal). */
#ifndef MXA_RUNTIME_STATUS_H
#define MXA_RUNTIME_STATUS_H

#include "mxa/mxa.h"

#if defined(__GNUC__)
#define MXA_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MXA_PRINTF(a, b)
#endif

/* Records `fmt` as the calling thread's last error message and returns `status`,
 * so a failure path reads: return mxa_fail(MXA_ERR_..., "what was wrong: %d", x); */
mxa_status mxa_fail(mxa_status status, const char *fmt, ...) MXA_PRINTF(2, 3);

/* Clears the calling thread's last error message. */
void mxa_clear_error(void);

#endif
