/*
 * Building kernels: hiprtc on the embedded sources for the device's
 * gcnArchName, code objects cached on disk through runtime/cache.h.
 */
#ifndef MXA_HIP_PROGRAM_H
#define MXA_HIP_PROGRAM_H

#include "hip_api.h"

/* The embedded kernel sources (generated at build time from shaders/hip). */
extern const char mxa_hip_src_prep[];
extern const char mxa_hip_src_attention[];
extern const char *const mxa_hip_header_names[];
extern const char *const mxa_hip_header_sources[];
extern const int mxa_hip_header_count;

#define MXA_HIP_CACHE_KIND "hip-code-object"

/* Where a module came from (for tests and logs). */
typedef enum mxa_hip_origin { MXA_HIP_FROM_COMPILER = 0, MXA_HIP_FROM_CACHE = 1 } mxa_hip_origin;

/* The cache key: everything a code object depends on. */
mxa_status mxa_hip_program_key(const mxa_hip_api *api, const char *arch, const char *name, const char *source,
                               const char *options, char *key, size_t size);

/* Loads `name` (source `source`, space-separated -D `options`) for `arch`:
 * from the cache when a valid entry exists and the runtime accepts it, else
 * compiled by hiprtc (the compiler log is in the error message on failure)
 * and stored. */
mxa_status mxa_hip_program_load(const mxa_hip_api *api, const char *arch, const char *name, const char *source,
                                const char *options, hipModule_t *module, mxa_hip_origin *origin);

#endif
