/* Environment switches of DESIGN.md (internal): MXA_DISABLE_COOPMAT, MXA_KERNEL, ... */
#ifndef MXA_RUNTIME_ENV_H
#define MXA_RUNTIME_ENV_H

/* 1 if the variable is set to something other than "", "0", "off", "false". */
int mxa_env_flag(const char *name);

/* The variable's value, or NULL when unset or empty. */
const char *mxa_env_string(const char *name);

/* 1 if `name` appears in the comma-separated list `list` (case-insensitive). */
int mxa_list_contains(const char *list, const char *name);

/* Integer value of the variable, or `fallback` when unset or not an integer. */
long mxa_env_long(const char *name, long fallback);

#endif
