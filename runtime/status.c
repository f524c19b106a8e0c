/* Status names and the thread-local error message. */
#include <stdarg.h>
#include <stdio.h>

#include "status.h"

static _Thread_local char last_error[512];

const char *mxa_status_string(mxa_status status)
{
    switch (status) {
    case MXA_OK: return "MXA_OK";
    case MXA_ERR_INVALID_ARGUMENT: return "MXA_ERR_INVALID_ARGUMENT";
    case MXA_ERR_UNSUPPORTED: return "MXA_ERR_UNSUPPORTED";
    case MXA_ERR_NON_FINITE: return "MXA_ERR_NON_FINITE";
    case MXA_ERR_OUT_OF_MEMORY: return "MXA_ERR_OUT_OF_MEMORY";
    case MXA_ERR_NOT_FOUND: return "MXA_ERR_NOT_FOUND";
    case MXA_ERR_BACKEND: return "MXA_ERR_BACKEND";
    case MXA_ERR_IO: return "MXA_ERR_IO";
    case MXA_ERR_FORMAT: return "MXA_ERR_FORMAT";
    case MXA_ERR_INTERNAL: return "MXA_ERR_INTERNAL";
    }
    return "MXA_ERR_UNKNOWN";
}

const char *mxa_last_error_message(void)
{
    return last_error;
}

mxa_status mxa_fail(mxa_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void mxa_clear_error(void)
{
    last_error[0] = '\0';
}

const char *mxa_version_string(void)
{
#define MXA_STR2(x) #x
#define MXA_STR(x) MXA_STR2(x)
    return MXA_STR(MXA_VERSION_MAJOR) "." MXA_STR(MXA_VERSION_MINOR) "." MXA_STR(MXA_VERSION_PATCH);
}
