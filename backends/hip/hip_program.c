/* hiprtc compilation of the embedded kernels, with the on-disk code-object cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/cache.h"
#include "../../runtime/log.h"
#include "../../runtime/status.h"
#include "hip_program.h"

#define MAX_OPTIONS 24

mxa_status mxa_hip_program_key(const mxa_hip_api *api, const char *arch, const char *name, const char *source,
                               const char *options, char *key, size_t size)
{
    uint64_t h = mxa_hash64(source, strlen(source), MXA_HASH_SEED);
    for (int i = 0; i < mxa_hip_header_count; i++) {
        h = mxa_hash64(mxa_hip_header_names[i], strlen(mxa_hip_header_names[i]), h);
        h = mxa_hash64(mxa_hip_header_sources[i], strlen(mxa_hip_header_sources[i]), h);
    }
    int n = snprintf(key, size, "hip|%s|%s|runtime=%d|driver=%d|hiprtc=%d.%d|src=%016llx|%s", arch, name,
                     api->runtime_version, api->driver_version, api->rtc_major, api->rtc_minor,
                     (unsigned long long)h, options);
    if (n < 0 || (size_t)n >= size) return mxa_fail(MXA_ERR_INTERNAL, "hip: cache key too long");
    return MXA_OK;
}

/* Splits `options` (space-separated, modified in place) after the fixed ones. */
static int build_argv(char *options, const char *arch_opt, const char **argv)
{
    int n = 0;
    argv[n++] = arch_opt;
    argv[n++] = "-O3";
    argv[n++] = "-std=c++17";
    argv[n++] = "-ffp-contract=off"; /* the reference has no fused multiply-adds */
    char *save = NULL;
    for (char *tok = strtok_r(options, " ", &save); tok && n < MAX_OPTIONS; tok = strtok_r(NULL, " ", &save))
        argv[n++] = tok;
    return n;
}

/* The compiler's log, as one line fit for an error message. */
static void read_log(const mxa_hip_api *api, hiprtcProgram prog, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    if (api->hiprtcGetProgramLogSize(prog, &n) != 0 || n == 0) return;
    char *log = malloc(n + 1);
    if (!log) return;
    if (api->hiprtcGetProgramLog(prog, log) == 0) {
        log[n] = '\0';
        MXA_LOG_E("hip: hiprtc log:\n%s", log);
        size_t j = 0;
        for (size_t i = 0; log[i] && j + 1 < size; i++) out[j++] = (log[i] == '\n' || log[i] == '\r') ? ' ' : log[i];
        out[j] = '\0';
    }
    free(log);
}

/* Compiles with hiprtc; *code is malloc'd. */
static mxa_status compile(const mxa_hip_api *api, const char *arch, const char *name, const char *source,
                          const char *options, void **code, size_t *code_size)
{
    mxa_status st = MXA_OK;
    hiprtcProgram prog = NULL;
    char arch_opt[300], opts[512], log[320];
    const char *argv[MAX_OPTIONS];
    *code = NULL;
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    snprintf(opts, sizeof opts, "%s", options);
    const int argc = build_argv(opts, arch_opt, argv);

    hiprtcResult r = api->hiprtcCreateProgram(&prog, source, name, mxa_hip_header_count, mxa_hip_header_sources,
                                              mxa_hip_header_names);
    if (r != 0) {
        st = mxa_fail(MXA_ERR_BACKEND, "hip: hiprtcCreateProgram(%s) failed: %s (%d)", name,
                      api->hiprtcGetErrorString(r), r);
        prog = NULL;
        goto out;
    }
    r = api->hiprtcCompileProgram(prog, argc, argv);
    if (r != 0) {
        read_log(api, prog, log, sizeof log);
        st = mxa_fail(MXA_ERR_BACKEND, "hip: hiprtc could not compile %s for %s (%s %s): %s: %s", name, arch,
                      arch_opt, options, api->hiprtcGetErrorString(r), log[0] ? log : "(empty log)");
        goto out;
    }
    if ((r = api->hiprtcGetCodeSize(prog, code_size)) != 0 || *code_size == 0) {
        st = mxa_fail(MXA_ERR_BACKEND, "hip: hiprtcGetCodeSize(%s) failed (%d, %zu bytes)", name, r, *code_size);
        goto out;
    }
    if (!(*code = malloc(*code_size))) {
        st = mxa_fail(MXA_ERR_OUT_OF_MEMORY, "hip: out of memory for a %zu-byte code object", *code_size);
        goto out;
    }
    if ((r = api->hiprtcGetCode(prog, *code)) != 0) {
        st = mxa_fail(MXA_ERR_BACKEND, "hip: hiprtcGetCode(%s) failed (%d)", name, r);
        goto out;
    }
out:
    if (prog) api->hiprtcDestroyProgram(&prog);
    if (st) {
        free(*code);
        *code = NULL;
    }
    return st;
}

mxa_status mxa_hip_program_load(const mxa_hip_api *api, const char *arch, const char *name, const char *source,
                                const char *options, hipModule_t *module, mxa_hip_origin *origin)
{
    char key[1024];
    void *code = NULL;
    size_t size = 0;
    *module = NULL;
    mxa_status st = mxa_hip_program_key(api, arch, name, source, options, key, sizeof key);
    if (st) return st;
    if (mxa_cache_load(MXA_HIP_CACHE_KIND, key, &code, &size) == MXA_OK) {
        hipError_t e = api->hipModuleLoadData(module, code);
        free(code);
        code = NULL;
        if (e == MXA_HIP_SUCCESS) {
            *origin = MXA_HIP_FROM_CACHE;
            return MXA_OK;
        }
        /* A well-formed entry the runtime rejects (e.g. a driver change the key missed). */
        MXA_LOG_W("hip: the runtime rejected the cached code object of %s (%d); rebuilding", name, e);
        *module = NULL;
    }
    mxa_clear_error(); /* a cache miss is not an error */
    if ((st = compile(api, arch, name, source, options, &code, &size))) return st;
    if (mxa_cache_store(MXA_HIP_CACHE_KIND, key, code, size) != MXA_OK) mxa_clear_error(); /* not fatal */
    hipError_t e = api->hipModuleLoadData(module, code);
    free(code);
    if (e != MXA_HIP_SUCCESS) {
        *module = NULL;
        return mxa_hip_fail(api, e, "hipModuleLoadData (freshly compiled code object)");
    }
    *origin = MXA_HIP_FROM_COMPILER;
    return MXA_OK;
}
