/* Output files written completely or not at all (see outfile.h). */
/* realpath is XSI: */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

static int fail(char *err, size_t size, const char *what, int error)
{
    if (err && size) {
        if (error) snprintf(err, size, "%s: %s", what, strerror(error));
        else snprintf(err, size, "%s", what);
    }
    return -1;
}

/* ---------------------------------------------------- signal-time cleanup */

/* The pending temporary files, for the fatal-signal handler. Slots are
 * lock-free atomics: the handler may run in any thread at any moment. */
#define SLOTS 32
static _Atomic(char *) pending[SLOTS];
static atomic_flag handlers_installed = ATOMIC_FLAG_INIT;
static const int fatal_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGXCPU};

static void on_fatal_signal(int sig)
{
    const int saved = errno;
    for (int i = 0; i < SLOTS; i++) {
        char *temp = atomic_load(&pending[i]);
        if (temp) unlink(temp);
    }
    errno = saved;
    /* SA_RESETHAND restored the default action: the process dies of `sig` once this returns. */
    raise(sig);
}

void outfile_install_handlers(void)
{
    if (atomic_flag_test_and_set(&handlers_installed)) return;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND;
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        if (sigaction(fatal_signals[i], NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL)
            sigaction(fatal_signals[i], &sa, NULL);
    /* A file-size limit (ulimit -f) then fails write() with EFBIG: an error we report and clean up. */
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    if (sigaction(SIGXFSZ, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL)
        sigaction(SIGXFSZ, &sa, NULL);
}

/* With every slot taken the file is still written; only signal-time cleanup is lost. */
static void register_temp(char *temp)
{
    outfile_install_handlers();
    for (int i = 0; i < SLOTS; i++) {
        char *expected = NULL;
        if (atomic_compare_exchange_strong(&pending[i], &expected, temp)) return;
    }
}

static void unregister_temp(const char *temp)
{
    for (int i = 0; i < SLOTS; i++) {
        char *expected = (char *)temp;
        if (atomic_compare_exchange_strong(&pending[i], &expected, NULL)) return;
    }
}

/* ---------------------------------------------------------- resolution */

void outfile_target_free(outfile_target *t)
{
    if (!t) return;
    free(t->path);
    memset(t, 0, sizeof *t);
}

static char *join(const char *dir, const char *base)
{
    const size_t d = strlen(dir), b = strlen(base);
    char *p = malloc(d + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, d);
    p[d] = '/';
    memcpy(p + d + 1, base, b + 1);
    if (d == 1 && dir[0] == '/') memmove(p + 1, p + 2, b + 1); /* "/" + "x" is "/x" */
    return p;
}

/* A name that does not exist yet: its directory must, and is resolved. */
static int resolve_new(const char *path, outfile_target *t, char *err, size_t err_size)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base) return fail(err, err_size, "cannot create: the name ends with '/' (a directory)", 0);
    char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
    if (!dir) return fail(err, err_size, "out of memory", 0);
    char *real = realpath(*dir ? dir : "/", NULL);
    const int error = errno;
    free(dir);
    if (!real) return fail(err, err_size, "cannot create", error);
    t->path = join(real, base);
    free(real);
    return t->path ? 0 : fail(err, err_size, "out of memory", 0);
}

int outfile_resolve(const char *path, outfile_target *t, char *err, size_t err_size)
{
    struct stat ls, st;
    memset(t, 0, sizeof *t);
    if (!path || !*path) return fail(err, err_size, "no output path", 0);
    if (lstat(path, &ls) != 0) {
        if (errno != ENOENT) return fail(err, err_size, "cannot create", errno);
        return resolve_new(path, t, err, err_size);
    }
    /* Follow every link: the final target is written, the links stay links. */
    if (!(t->path = realpath(path, NULL))) {
        if (errno == ENOENT && S_ISLNK(ls.st_mode))
            return fail(err, err_size, "is a symbolic link to a missing file (mxa replaces only existing targets)", 0);
        return fail(err, err_size, "cannot resolve the path", errno);
    }
    int bad = -1;
    const char *what = NULL;
    if (stat(t->path, &st) != 0) bad = errno, what = "cannot stat";
    else if (S_ISDIR(st.st_mode)) what = "is a directory";
    else if (S_ISFIFO(st.st_mode)) what = "is a FIFO (named pipe); mxa writes regular files and character devices such as /dev/null";
    else if (S_ISSOCK(st.st_mode)) what = "is a socket; mxa writes regular files and character devices such as /dev/null";
    else if (S_ISBLK(st.st_mode)) what = "is a block device; mxa writes regular files and character devices such as /dev/null";
    else if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) what = "is not a regular file";
    if (what) {
        outfile_target_free(t);
        return fail(err, err_size, what, bad > 0 ? bad : 0);
    }
    t->exists = 1;
    t->direct = S_ISCHR(st.st_mode);
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    return 0;
}

/* ------------------------------------------------------------- writing */

/* "<target>.tmp.<pid>" files of this target whose process is gone: left by a
 * SIGKILL or a crash. A live pid (or one we may not signal) is left alone. */
static void remove_stale_temps(const char *target)
{
    const char *slash = strrchr(target, '/');
    char *dir = slash && slash != target ? strndup(target, (size_t)(slash - target)) : strdup("/");
    if (!dir) return;
    const char *base = slash ? slash + 1 : target;
    const size_t blen = strlen(base);
    DIR *d = opendir(dir);
    free(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        const char *name = e->d_name, *digits = name + blen + 5;
        if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0) continue;
        if (*digits < '1' || *digits > '9' || strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 9)
            continue;
        const long pid = strtol(digits, NULL, 10);
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

static int create_temp(outfile *f, char *err, size_t err_size)
{
    const size_t n = strlen(f->path) + 32;
    if (!(f->temp = malloc(n))) return fail(err, err_size, "out of memory", 0);
    snprintf(f->temp, n, "%s.tmp.%ld", f->path, (long)getpid());
    remove_stale_temps(f->path);
    register_temp(f->temp);
    /* O_EXCL: never write through a link planted at the name. A file of our
     * own pid is from an earlier process with that pid: stale. */
    for (int attempt = 0; attempt < 2; attempt++) {
        f->fd = open(f->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f->fd >= 0) return 0;
        if (errno != EEXIST || attempt) break;
        unlink(f->temp);
    }
    const int error = errno;
    unregister_temp(f->temp);
    free(f->temp); /* nothing was created: do not unlink someone else's file */
    f->temp = NULL;
    return fail(err, err_size, "cannot create", error);
}

int outfile_open(const char *path, outfile *f, char *err, size_t err_size)
{
    outfile_target t;
    memset(f, 0, sizeof *f);
    f->fd = -1;
    if (outfile_resolve(path, &t, err, err_size)) return -1;
    f->path = t.path;
    if (t.direct) {
        if ((f->fd = open(f->path, O_WRONLY | O_NOCTTY | O_CLOEXEC)) >= 0) return 0;
        fail(err, err_size, "cannot open", errno);
    } else if (create_temp(f, err, err_size) == 0) {
        return 0;
    }
    outfile_discard(f);
    return -1;
}

int outfile_write(outfile *f, const void *data, size_t size, char *err, size_t err_size)
{
    const unsigned char *p = data;
    while (size) {
        const ssize_t k = write(f->fd, p, size);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return fail(err, err_size, "cannot write", k < 0 ? errno : EIO);
        p += k;
        size -= (size_t)k;
    }
    return 0;
}

int outfile_close(outfile *f, char *err, size_t err_size)
{
    int error = 0;
    if (f->fd < 0) return 0;
    if (f->temp && fsync(f->fd) != 0) error = errno;
    if (close(f->fd) != 0 && !error) error = errno;
    f->fd = -1;
    return error ? fail(err, err_size, "cannot write", error) : 0;
}

int outfile_commit(outfile *f, char *err, size_t err_size)
{
    int rc = outfile_close(f, err, err_size);
    if (rc == 0 && f->temp) {
        if (rename(f->temp, f->path) != 0) {
            rc = fail(err, err_size, "cannot rename the finished file into place", errno);
        } else {
            unregister_temp(f->temp);
            free(f->temp);
            f->temp = NULL;
        }
    }
    outfile_discard(f);
    return rc;
}

void outfile_discard(outfile *f)
{
    if (!f || !f->path) return; /* empty: zeroed or already discarded */
    if (f->fd >= 0) close(f->fd);
    if (f->temp) {
        unlink(f->temp);
        unregister_temp(f->temp);
    }
    free(f->temp);
    free(f->path);
    f->temp = f->path = NULL;
    f->fd = -1;
}

int outfile_write_whole(const char *path, const void *data, size_t size, char *err, size_t err_size)
{
    outfile f;
    if (outfile_open(path, &f, err, err_size)) return -1;
    if (outfile_write(&f, data, size, err, err_size)) {
        outfile_discard(&f);
        return -1;
    }
    return outfile_commit(&f, err, err_size);
}
