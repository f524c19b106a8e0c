/* Temporary directory trees for tests (fstree.h). */
#define _XOPEN_SOURCE 700 /* nftw */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fstree.h"

static char root[256];

const char *fst_begin(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/mxa-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(root);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int fst_end(void)
{
    if (!root[0]) return 0;
    const int rc = nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS); /* links are removed, not followed */
    if (rc) fprintf(stderr, "could not remove %s\n", root);
    root[0] = '\0';
    return rc;
}

const char *fst_path(const char *rel)
{
    static char bufs[4][512];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", root, rel);
    return b;
}

int fst_mkdir(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s", fst_path(rel));
    for (char *s = p + strlen(root) + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0700) != 0 && errno != EEXIST) return -1;
            *s = '/';
        }
    return mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

int fst_write(const char *rel, const char *text)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", rel);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        if (fst_mkdir(dir)) return -1;
    }
    FILE *f = fopen(fst_path(rel), "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -1;
}
