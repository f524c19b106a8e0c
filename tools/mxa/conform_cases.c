/*
 * mxa conform: the case list (built once, in run order) and the name filter.
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conform.h"

conform_case *conform_case_add(conform_case_list *list, const conform_case *c)
{
    if (list->n == list->cap) {
        const int cap = list->cap ? list->cap * 2 : 256;
        conform_case *v = realloc(list->v, (size_t)cap * sizeof *v);
        if (!v) {
            cli_error("conform: out of memory building the case list");
            return NULL;
        }
        list->v = v;
        list->cap = cap;
    }
    list->v[list->n] = *c;
    return &list->v[list->n++];
}

void conform_case_list_free(conform_case_list *list)
{
    for (int i = 0; i < list->n; i++) free(list->v[i].path);
    free(list->v);
    memset(list, 0, sizeof *list);
}

int conform_build_cases(conform_case_list *list, const char *vectors_dir)
{
    /* External vectors replace the built-in suite: that run is about them. */
    if (vectors_dir) return conform_add_vector_cases(list, vectors_dir);
    if (conform_add_quant_cases(list) || conform_add_quant8_cases(list) || conform_add_attn_cases(list) || conform_add_invariant_cases(list) ||
        conform_add_extras_cases(list) || conform_add_bad_cases(list))
        return -1;
    return 0;
}

int conform_match(const char *patterns, const char *name)
{
    if (!patterns || !*patterns) return 1;
    const char *p = patterns;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char pat[CONFORM_NAME_LEN + 8];
        if (len >= sizeof pat) len = sizeof pat - 1;
        memcpy(pat, p, len);
        pat[len] = '\0';
        if (len > 0) {
            if (strpbrk(pat, "*?[")) {
                if (fnmatch(pat, name, 0) == 0) return 1;
            } else if (strstr(name, pat)) {
                return 1;
            }
        }
        if (!end) break;
        p = end + 1;
    }
    return 0;
}
