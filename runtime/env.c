/* Environment switches. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"

const char *mxa_env_string(const char *name)
{
    const char *s = getenv(name);
    return (s && *s) ? s : NULL;
}

int mxa_env_flag(const char *name)
{
    const char *s = mxa_env_string(name);
    if (!s) return 0;
    return !(strcmp(s, "0") == 0 || strcmp(s, "off") == 0 || strcmp(s, "false") == 0 ||
             strcmp(s, "no") == 0);
}

long mxa_env_long(const char *name, long fallback)
{
    const char *s = mxa_env_string(name);
    if (!s) return fallback;
    char *end;
    long v = strtol(s, &end, 10);
    return (*end == '\0') ? v : fallback;
}

int mxa_list_contains(const char *list, const char *name)
{
    if (!list || !name) return 0;
    size_t n = strlen(name);
    const char *p = list;
    while (*p) {
        while (*p == ',' || *p == ' ') p++;
        const char *start = p;
        while (*p && *p != ',') p++;
        const char *end = p;
        while (end > start && end[-1] == ' ') end--;
        if ((size_t)(end - start) == n) {
            size_t i = 0;
            while (i < n && tolower((unsigned char)start[i]) == tolower((unsigned char)name[i])) i++;
            if (i == n) return 1;
        }
    }
    return 0;
}
