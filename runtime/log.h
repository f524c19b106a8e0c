/* Logging (internal): routed to the callback set by mxa_log_set_callback. */
#ifndef MXA_RUNTIME_LOG_H
#define MXA_RUNTIME_LOG_H

#include "mxa/mxa.h"
#include "status.h"

/* Logs one line at `level` if the current level lets it through. */
void mxa_log(mxa_log_level level, const char *fmt, ...) MXA_PRINTF(2, 3);

/* Whether a line at `level` would be logged (to skip work that only feeds the log). */
int mxa_log_enabled(mxa_log_level level);

#define MXA_LOG_E(...) mxa_log(MXA_LOG_ERROR, __VA_ARGS__)
#define MXA_LOG_W(...) mxa_log(MXA_LOG_WARN, __VA_ARGS__)
#define MXA_LOG_I(...) mxa_log(MXA_LOG_INFO, __VA_ARGS__)
#define MXA_LOG_D(...) mxa_log(MXA_LOG_DEBUG, __VA_ARGS__)

#endif
