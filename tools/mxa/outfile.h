/*
 * Output files of the CLI, written completely or not at all.
 *
 * Where an output path writes (outfile_resolve):
 *  - a regular file or a new name: a temporary file "<target>.tmp.<pid>" is
 *    written beside the target and renamed onto it when complete;
 *  - a symbolic link is followed: its final target is replaced, the link stays;
 *  - a character device (/dev/null) is written in place (no temporary file);
 *  - a directory, FIFO, socket, block device or dangling link is refused.
 *
 * Temporary files: a fatal signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE,
 * SIGXCPU) removes the pending ones before the process dies; SIGXFSZ is
 * ignored so that a file-size limit fails the write with EFBIG instead of
 * killing the process. What only SIGKILL or a crash can leave behind is
 * removed by the next run that writes the same target: a "<target>.tmp.<pid>"
 * whose process no longer exists is stale.
 */
#ifndef MXA_TOOLS_OUTFILE_H
#define MXA_TOOLS_OUTFILE_H

#include <stddef.h>
#include <sys/types.h>

/** Installs the signal handlers described above, once per process and only
 *  over default dispositions (a signal the caller ignores or handles stays so).
 *  The first output does it; call it earlier, before loading libraries that
 *  install handlers of their own (LLVM's restore the previous ones and re-raise). */
void outfile_install_handlers(void);

/* Where an output path writes; nothing is created to find out. */
typedef struct outfile_target {
    char *path;  /* absolute, symbolic links resolved (malloc'd) */
    int exists;
    int direct;  /* a character device: written in place */
    dev_t dev;   /* of the existing target */
    ino_t ino;
} outfile_target;

/** Resolves `path`; on failure `err` says why (e.g. "is a FIFO ...") and `t` is empty. Returns 0 or -1. */
int outfile_resolve(const char *path, outfile_target *t, char *err, size_t err_size);

/** Frees what outfile_resolve filled. Safe on an empty target. */
void outfile_target_free(outfile_target *t);

/* A file being written. */
typedef struct outfile {
    char *path;  /* the resolved target */
    char *temp;  /* the temporary file; NULL when written in place or when empty */
    int fd;      /* -1 when closed */
} outfile;

/** Opens `path` for writing (a new temporary file, or the device itself). Returns 0 or -1 with `err`. */
int outfile_open(const char *path, outfile *f, char *err, size_t err_size);

/** Writes all of `data`; returns 0 or -1 with `err` ("cannot write: File too large"). */
int outfile_write(outfile *f, const void *data, size_t size, char *err, size_t err_size);

/** Flushes to disk and closes; the file stays pending until outfile_commit. Returns 0 or -1. */
int outfile_close(outfile *f, char *err, size_t err_size);

/** Renames a closed file into place. On failure removes it. Empties `f` either way. Returns 0 or -1. */
int outfile_commit(outfile *f, char *err, size_t err_size);

/** Removes the temporary file (if any) and empties `f`. Safe on an empty or discarded `f`. */
void outfile_discard(outfile *f);

/** open, write, close and commit: `path` holds `data` completely or is untouched. Returns 0 or -1. */
int outfile_write_whole(const char *path, const void *data, size_t size, char *err, size_t err_size);

#endif
