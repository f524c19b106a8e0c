/* Cheap file-system checks made before a vendor library is loaded (internal). */
#ifndef MXA_RUNTIME_SYSPROBE_H
#define MXA_RUNTIME_SYSPROBE_H

#include <stddef.h>

/* 1 if `path` is (or links to) a regular file / a directory. */
int mxa_is_file(const char *path);
int mxa_is_dir(const char *path);

/* 1 if directory `dir` holds a regular file whose name ends with `suffix`. */
int mxa_dir_has_file(const char *dir, const char *suffix);

/* 1 if some directory of the ':'-separated `list`, joined with `sub` (NULL: the
 * entry itself), holds a regular file ending with `suffix`. With `files_too`,
 * an entry that is itself a regular file counts as well. */
int mxa_path_list_has_file(const char *list, const char *sub, const char *suffix, int files_too);

/* dlopens the first of `names` (NULL-terminated) that loads, RTLD_NOW | RTLD_LOCAL, and
 * copies its name into `path`; NULL when none does, with the first name's dlerror text,
 * copied at once (the next dl call overwrites it), in `why`, made printable. */
void *mxa_dlopen_first(const char *const *names, char *path, size_t path_size, char *why, size_t why_size);

#endif
