/* Child processes for the CLI's backend probes and conformance runs (isolate.h). */
#include "isolate.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

void isolate_only_backend(const char *backend)
{
    static const char *const gpu_backends[] = {"hip", "vulkan", "opencl"};
    char disable[256];
    const char *user = getenv("MXA_DISABLE");
    snprintf(disable, sizeof disable, "%s", user ? user : "");
    for (size_t i = 0; i < sizeof gpu_backends / sizeof gpu_backends[0]; i++)
        if (strcmp(gpu_backends[i], backend) != 0) {
            const size_t len = strlen(disable);
            snprintf(disable + len, sizeof disable - len, "%s%s", len ? "," : "", gpu_backends[i]);
        }
    setenv("MXA_DISABLE", disable, 1);
}

int isolate_write(int fd, const void *buf, size_t size)
{
    const char *p = buf;
    while (size) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

/* Reads fd to its end into a growing buffer. */
static int read_all(int fd, char **data, size_t *size)
{
    size_t cap = 0;
    *data = NULL;
    *size = 0;
    for (;;) {
        if (*size == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *p = realloc(*data, ncap);
            if (!p) return -1;
            *data = p;
            cap = ncap;
        }
        ssize_t n = read(fd, *data + *size, cap - *size);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) return 0;
        *size += (size_t)n;
    }
}

int isolate_run(int (*fn)(void *arg, int fd), void *arg, isolate_result *out)
{
    memset(out, 0, sizeof *out);
    int fds[2];
    fflush(stdout);
    fflush(stderr);
    if (pipe(fds) != 0) {
        out->code = errno;
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        out->code = errno;
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        int rc = fn(arg, fds[1]);
        fflush(stdout);
        fflush(stderr);
        close(fds[1]);
        _exit(rc & 0xff); /* no atexit handlers: drivers' destructors are the parent's business */
    }
    close(fds[1]);
    int rd = read_all(fds[0], &out->data, &out->size);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            status = 0;
            break;
        }
    if (WIFEXITED(status)) {
        out->exited = 1;
        out->code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        out->signal = WTERMSIG(status);
    }
    if (rd != 0) { /* out of memory reading the result: treat as no result */
        free(out->data);
        out->data = NULL;
        out->size = 0;
    }
    return 0;
}

const char *isolate_describe(const isolate_result *r, char *buf, size_t size)
{
    if (r->exited) {
        snprintf(buf, size, "exited with status %d", r->code);
        return buf;
    }
    const char *name = r->signal == SIGABRT   ? "SIGABRT; an LLVM option clash between two drivers?"
                       : r->signal == SIGSEGV ? "SIGSEGV"
                       : r->signal == SIGBUS  ? "SIGBUS"
                       : r->signal == SIGILL  ? "SIGILL"
                       : r->signal == SIGFPE  ? "SIGFPE"
                       : r->signal == SIGKILL ? "SIGKILL; out of memory?"
                                              : "a signal";
    snprintf(buf, size, "crashed: signal %d (%s)", r->signal, name);
    return buf;
}
