/* Cheap file-system checks made before a vendor library is loaded. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "sysprobe.h"
#include "text.h"

int mxa_is_file(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int mxa_is_dir(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int mxa_dir_has_file(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    const size_t ns = strlen(suffix);
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        const size_t n = strlen(e->d_name);
        char path[4096];
        if (n <= ns || strcmp(e->d_name + n - ns, suffix) != 0) continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        found = mxa_is_file(path); /* a dangling link or a directory registers nothing */
    }
    closedir(d);
    return found;
}

int mxa_path_list_has_file(const char *list, const char *sub, const char *suffix, int files_too)
{
    if (!list) return 0;
    for (const char *p = list; *p;) {
        const size_t n = strcspn(p, ":");
        char path[4096];
        if (n > 0 && snprintf(path, sizeof path, "%.*s%s%s", (int)n, p, sub ? "/" : "", sub ? sub : "") < (int)sizeof path &&
            ((files_too && mxa_is_file(path)) || mxa_dir_has_file(path, suffix)))
            return 1;
        p += n;
        if (*p == ':') p++;
    }
    return 0;
}

void *mxa_dlopen_first(const char *const *names, char *path, size_t path_size, char *why, size_t why_size)
{
    why[0] = '\0';
    for (int i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(path, path_size, "%s", names[i]);
            return h;
        }
        const char *e = dlerror();
        if (i == 0) snprintf(why, why_size, "%s", e ? e : names[i]);
    }
    mxa_text_sanitize(why);
    return NULL;
}
