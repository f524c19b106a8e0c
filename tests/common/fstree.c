/* Fake directory trees for the tests of the pre-load checks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fstree.h"

static char root[256];

const char *fst_begin(void)
{
    snprintf(root, sizeof root, "/tmp/mxa-fstree-XXXXXX");
    return mkdtemp(root);
}

void fst_end(void)
{
    char cmd[320];
    if (!root[0]) return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    root[0] = '\0';
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
