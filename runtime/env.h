/* Environment switches of DESIGN.md (internal): MXA_DISABLE_COOPMAT, MXA_KERNEL, ...
 * A bad value is never silent: the readers below log one warning per process
 * and variable, naming it and saying what is done instead. */
#ifndef MXA_RUNTIME_ENV_H
#define MXA_RUNTIME_ENV_H

#include "status.h"

/* The variable's value, or NULL when unset or empty. */
const char *mxa_env_string(const char *name);

/* The variable as a boolean (1/0/on/off/true/false/yes/no, any case), or
 * `fallback` when unset or empty; another value warns once and gives `fallback`. */
int mxa_env_bool(const char *name, int fallback);

/* A switch that is off unless set: mxa_env_bool(name, 0). */
int mxa_env_flag(const char *name);

/* A decimal integer in [lo, hi]; `fallback` when unset; when not such an
 * integer, warns once and returns `fallback`. */
long mxa_env_long(const char *name, long lo, long hi, long fallback);

/* MXA_KERNEL when it names a kernel variant of some backend (mxa_env_kernel_names);
 * NULL when unset, or when unknown, with one warning listing the known names. */
const char *mxa_env_kernel(void);

/* MXA_COOPMAT_SHAPE: "MxNxK", the cooperative-matrix configuration a Vulkan KHR variant must
 * use for Q K^T (testing each shape a driver lists); NULL when unset or malformed (warned). */
const char *mxa_env_coopmat_shape(void);

/* Every variant name MXA_KERNEL accepts, by backend: "vulkan: scalar, ...; opencl: ...". */
const char *mxa_env_kernel_names(void);

/* Checks the switches that apply to every backend (MXA_KERNEL, MXA_DISABLE_COOPMAT,
 * MXA_DISABLE_INT_DOT, MXA_DISABLE_NATIVE_FP4) once, so a bad value warns even
 * where no chosen backend reads it (e.g. a CPU-only run). */
void mxa_env_check_switches(void);

/* Logs `fmt` as a warning the first time it is called for `name` in this
 * process; later calls for the same name log nothing. Thread-safe. */
void mxa_env_warn_once(const char *name, const char *fmt, ...) MXA_PRINTF(2, 3);

/* Forgets which variables have warned (tests only). */
void mxa_env_reset_warnings(void);

/* 1 if `name` appears in the comma-separated list `list` (case-insensitive). */
int mxa_list_contains(const char *list, const char *name);

#endif
