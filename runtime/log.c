/* Logging: one callback and one level for the process, read atomically. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "log.h"

static _Atomic(mxa_log_fn) log_fn;
static _Atomic(void *) log_user;
static atomic_int log_level = -1; /* -1: not read from MXA_LOG yet */

/* The level MXA_LOG names; *bad is set when it names none. */
static int level_from_env(int *bad)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    const char *s = mxa_env_string("MXA_LOG");
    *bad = 0;
    if (!s) return MXA_LOG_WARN;
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) return i;
    *bad = 1;
    return MXA_LOG_WARN;
}

mxa_status mxa_log_set_callback(mxa_log_fn fn, void *user)
{
    atomic_store(&log_user, user);
    atomic_store(&log_fn, fn);
    return MXA_OK;
}

mxa_status mxa_log_set_level(mxa_log_level level)
{
    if ((int)level < MXA_LOG_ERROR || level > MXA_LOG_DEBUG)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "log level %d is not one of 0..3", (int)level);
    atomic_store(&log_level, (int)level);
    return MXA_OK;
}

int mxa_log_enabled(mxa_log_level level)
{
    int current = atomic_load(&log_level);
    if (current < 0) {
        int bad;
        current = level_from_env(&bad);
        atomic_store(&log_level, current);
        /* after the store: the warning itself asks for the level */
        if (bad) mxa_env_warn_once("MXA_LOG", "MXA_LOG=%.64s is not one of error|warn|info|debug; using warn", getenv("MXA_LOG"));
    }
    return (int)level <= current;
}

void mxa_log(mxa_log_level level, const char *fmt, ...)
{
    if (!mxa_log_enabled(level)) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    mxa_log_fn fn = atomic_load(&log_fn);
    if (fn) {
        fn(level, line, atomic_load(&log_user));
        return;
    }
    static const char *tags[] = {"error", "warn", "info", "debug"};
    fprintf(stderr, "mxa %s: %s\n", tags[level], line);
}
