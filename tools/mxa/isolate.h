/*
 * Running a piece of the CLI in a child process, so that a driver which
 * aborts or crashes while it loads (two LLVM copies registering the same
 * options, a broken ICD) takes down the child and not `mxa probe` or `mxa
 * conform`. The library never forks; only the CLI does, before it has
 * loaded any GPU runtime itself.
 */
#ifndef MXA_TOOLS_ISOLATE_H
#define MXA_TOOLS_ISOLATE_H

#include <stddef.h>

/* How the child ended, and the bytes it wrote to its result pipe. */
typedef struct isolate_result {
    int exited;   /* 1: it exited (code below); 0: a signal ended it */
    int code;     /* exit status when exited */
    int signal;   /* the signal that ended it, else 0 */
    char *data;   /* malloc'ed; what the child wrote to its fd (NULL if nothing) */
    size_t size;
} isolate_result;

/* Runs fn(arg, fd) in a forked child; its return value is the child's exit
 * status, and what it writes to fd comes back in out->data. stdout and
 * stderr are flushed before the fork and shared with the child. Returns 0
 * when the child ran (whatever it did), -1 when no child could be started
 * (fork or pipe failed; out->code holds errno). Free out->data with free(). */
int isolate_run(int (*fn)(void *arg, int fd), void *arg, isolate_result *out);

/* One line saying how a child that did not exit normally ended:
 * "crashed: signal 6 (SIGABRT; an LLVM option clash between two drivers?)". */
const char *isolate_describe(const isolate_result *r, char *buf, size_t size);

/* In a child: leaves only `backend` (and the CPU, which always loads) to the
 * runtimes this process creates, by adding every other GPU backend to
 * MXA_DISABLE (the user's own list is kept). */
void isolate_only_backend(const char *backend);

/* Writes all of buf to fd (retrying short writes); 0 or -1. */
int isolate_write(int fd, const void *buf, size_t size);

#endif
