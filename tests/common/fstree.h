/* Temporary directory trees for tests: fake sysfs, ICD and manifest dirs, cache directories. */
#ifndef MXA_TESTS_FSTREE_H
#define MXA_TESTS_FSTREE_H

/* Creates a fresh temporary directory under $TMPDIR (or /tmp); its path is returned (static storage). */
const char *fst_begin(void);
/* Removes the tree made by fst_begin (not following links). 0 on success. */
int fst_end(void);
/* The absolute path of `rel` inside the tree (static storage, one of 4 rotating buffers). */
const char *fst_path(const char *rel);
/* Writes `text` to tree-relative `rel`, creating its parent directories. 0 on success. */
int fst_write(const char *rel, const char *text);
/* Creates tree-relative directory `rel` and its parents. 0 on success. */
int fst_mkdir(const char *rel);

#endif
