/*
 * mxa probe [--json]: every backend (present or absent, with the reason),
 * every device with the capabilities that drive kernel choice, the kernel
 * variant it would run and why, and what each environment switch would change
 * on this machine (computed: each switch is set in a fresh runtime and the
 * devices' choices compared).
 *
 * JSON output (stable keys; new keys may be added, none renamed or removed):
 * {
 *   "version": "0.1.0",                 library version
 *   "auto": "cpu" | null,               device id "auto" opens (MXA_DEVICE honoured)
 *   "backends": [ { "name", "built": bool, "present": bool, "device_count": int,
 *                   "reason": str } ],  reason: why absent, or a summary
 *   "devices": [ { "id", "backend", "index": int, "name", "vendor", "driver",
 *                  "memory_bytes": int, "compute_units": int, "subgroup_min": int,
 *                  "subgroup_max": int, "shared_memory_bytes": int,
 *                  "caps": [ "fp16" | "int8" | "int_dot" | "subgroups" | "coopmat" |
 *                            "native_fp4" | "timestamps" | "simd" ],
 *                  "capabilities": str, "variant": str, "variant_reason": str,
 *                  "default_bc": int, "score": int, "score_reason": str,
 *                  "measure": str (only with --measure: what measuring it did) } ],
 *   "auto_reason": str,                 why auto picks that device: every device by score
 *   "environment": [ { "name", "value": str | null, "meaning": str } ],
 *                                       every switch mxa reads, its current value
 *   "what_if": [ { "switch": "MXA_CPU_ISA=portable", "device": "cpu", "variant": str,
 *                  "changed": bool, "reason": str } ]
 *                                       each variant switch, set alone: what the device would run
 * }
 * Exit status: 0 at least one device is present, 1 none is, 2 an error (or a usage mistake).
 *
 * mxa probe --measure: first times a short attention call on every device that auto could
 * pick (mxa_device_measure, cached per device, driver and variant), so that the scores
 * printed, and every later "auto", are measurements instead of estimates.
 *
 * mxa probe --profile FILE [--json]: what the Vulkan backend would run on the device a
 * capability profile describes (tests/vulkan/profiles/README.md), selection only: for
 * D = 64 and 128 by default, and at D = 128 under each variant switch. JSON:
 * { "profile": str, "selection_only": true,
 *   "plans": [ { "d": int, "switch": str | null, "variant": str, "device": str,
 *                "shapes": str, "workgroup": str, "why": str } ] }
 * Exit status: 0, 1 when the profile cannot be read or planned (the reason on stderr), 2 usage.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mxa/mxa_vulkan_profile.h"

#include "cli.h"
#include "commands.h"
#include "conform.h"
#include "isolate.h"

#define PROBE_ERROR 2

static const struct {
    uint32_t bit;
    const char *name;
    const char *text; /* what a kernel does with it */
} cap_names[] = {
    {MXA_CAP_FP16, "fp16", "fp16 arithmetic"},
    {MXA_CAP_INT8, "int8", "int8 arithmetic (exact FP4 emulation)"},
    {MXA_CAP_INT_DOT, "int_dot", "packed int8 dot product (dp4a, VNNI)"},
    {MXA_CAP_SUBGROUPS, "subgroups", "subgroup operations"},
    {MXA_CAP_COOPMAT, "coopmat", "matrix units (cooperative matrix, tensor cores, MFMA)"},
    {MXA_CAP_NATIVE_FP4, "native_fp4", "native MXFP4 matrix instructions"},
    {MXA_CAP_TIMESTAMPS, "timestamps", "device timestamps"},
    {MXA_CAP_SIMD, "simd", "CPU vector ISA beyond the portable path"},
};

/* Every switch mxa reads (DESIGN.md), and what it does. */
static const struct {
    const char *name;
    const char *meaning;
} env_switches[] = {
    {"MXA_DEVICE", "the device 'auto' opens (an id: cpu, vulkan:0, opencl:1, hip:0)"},
    {"MXA_DISABLE", "backends not to load, comma-separated (vulkan,opencl,hip, or all; the CPU always loads), applied before any library loads"},
    {"MXA_DISABLE_COOPMAT", "1: no cooperative-matrix / tensor-core / MFMA variant"},
    {"MXA_DISABLE_INT_DOT", "1: no packed int8 dot-product path"},
    {"MXA_DISABLE_NATIVE_FP4", "1: no native FP4 matrix instructions (gfx950 scaled MFMA)"},
    {"MXA_KERNEL", "force a kernel variant by name (ignored with a note where the device cannot run it)"},
    {"MXA_CPU_ISA", "the CPU kernels' instruction set: portable, avx2, avx512"},
    {"MXA_NUM_THREADS", "CPU worker threads (default: the online CPUs)"},
    {"MXA_CPU_FUSED", "0: the CPU's per-block QK kernel instead of the fused AVX-512 one"},
    {"MXA_CACHE_DIR", "compiled-kernel cache and probe --measure's device speeds (default $XDG_CACHE_HOME/mxa, else ~/.cache/mxa)"},
    {"MXA_OPENCL_OPTIONS", "extra OpenCL build options that keep the kernels' contract (-cl-opt-disable, -cl-nv-maxrregcount=N, -w, ...); others are ignored with a warning"},
    {"MXA_HIP_LIBRARY", "the HIP runtime to load (skips the /dev/kfd check)"},
    {"MXA_OPENCL_LIBRARY", "the OpenCL ICD loader to load (skips the registered-ICD check)"},
    {"MXA_VULKAN_LIBRARY", "the Vulkan loader to load (skips the driver-manifest check)"},
    {"MXA_LOG", "log level: error, warn (default), info, debug"},
};

/* A JSON string literal: quotes, backslashes and control bytes escaped. */
static void json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p == '\n') printf("\\n");
        else if (*p < 0x20 || *p == 0x7f) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

static void json_key(const char *key, const char *value, int comma)
{
    printf("\"%s\": ", key);
    json_string(value);
    if (comma) printf(", ");
}

/* ---------------------------------------------------------------- what if */

/* One device under one switch. */
typedef struct what_if {
    char label[64]; /* "MXA_CPU_ISA=portable" */
    char device[32];
    char variant[48];
    char reason[MXA_REASON_LEN];
    int changed;
} what_if;

/* The devices' choices with `name=value` set in a fresh runtime (restored after). */
static int what_if_switch(const char *name, const char *value, const char *backend, const mxa_device_info *devs,
                          int nd, what_if *out, int max)
{
    conform_env env = {name, value};
    conform_env_saved saved;
    mxa_runtime *rt = NULL;
    int n = 0;
    if (conform_env_apply(&env, 1, &saved) == 0 && mxa_runtime_create(NULL, &rt) == MXA_OK) {
        int count = 0;
        mxa_device_count(rt, &count);
        for (int i = 0; i < nd && n < max; i++) {
            if (backend && strcmp(devs[i].backend, backend) != 0) continue;
            what_if *w = &out[n++];
            snprintf(w->label, sizeof w->label, "%s=%s", name, value);
            snprintf(w->device, sizeof w->device, "%s", devs[i].id);
            snprintf(w->variant, sizeof w->variant, "(absent)");
            snprintf(w->reason, sizeof w->reason, "the device is not listed with %s set", w->label);
            w->changed = 1;
            for (int j = 0; j < count; j++) {
                mxa_device_info d;
                if (mxa_device_get_info(rt, j, &d) || strcmp(d.id, devs[i].id) != 0) continue;
                snprintf(w->variant, sizeof w->variant, "%s", d.variant);
                snprintf(w->reason, sizeof w->reason, "%s", d.variant_reason);
                w->changed = strcmp(d.variant, devs[i].variant) != 0 || d.caps != devs[i].caps;
            }
        }
    }
    mxa_runtime_destroy(rt);
    conform_env_restore(&env, &saved);
    return n;
}

/* Every variant switch that applies to a present device, set alone. */
static int what_if_all(const mxa_device_info *devs, int nd, what_if *out, int max)
{
    int n = 0;
    for (int s = 0; s < conform_switch_count && n < max; s++) {
        const conform_switch *sw = &conform_switches[s];
        int present = 0;
        for (int i = 0; i < nd; i++) present |= strcmp(devs[i].backend, sw->backend) == 0;
        /* MXA_NUM_THREADS, MXA_CPU_FUSED change no choice: described, not probed */
        if (!present || sw->policy == CONFORM_SW_ALWAYS) continue;
        n += what_if_switch(sw->env.name, sw->env.value, sw->backend, devs, nd, out + n, max - n);
    }
    return n;
}

/* Why auto picks what it picks: MXA_DEVICE, or every device by score, best first (ties
 * in backend order), each with its variant and the score's basis in short. */
static void auto_why(const mxa_device_info *devs, int nd, char *out, size_t size)
{
    const char *env = getenv("MXA_DEVICE");
    out[0] = 0;
    if (env && *env && strcmp(env, "auto") != 0) {
        snprintf(out, size, "MXA_DEVICE=%s", env);
        return;
    }
    int order[64], n = 0; /* 4 backends x 16 devices */
    for (int i = 0; i < nd && n < CLI_COUNT(order); i++) {
        int at = n++;
        while (at > 0 && devs[order[at - 1]].score < devs[i].score) { /* stable: ties keep backend order */
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
    }
    size_t len = 0;
    for (int k = 0; k < n && len < size; k++) {
        const mxa_device_info *d = &devs[order[k]];
        /* "estimate 244.4 TFLOP/s: ..." and "measured 240.12 TFLOP/s (...)": up to ':' or " (" */
        const char *r = d->score_reason;
        size_t basis = strcspn(r, ":(");
        while (basis && r[basis - 1] == ' ') basis--;
        const int speed = strncmp(r, "estimate ", 9) == 0 || strncmp(r, "measured ", 9) == 0;
        const char *sep = k == 0 ? "" : devs[order[k - 1]].score == d->score ? " = " : " > ";
        if (speed)
            len += (size_t)snprintf(out + len, size - len, "%s%s (%s) %.*s", sep, d->id, d->variant, (int)basis, r);
        else
            len += (size_t)snprintf(out + len, size - len, "%s%s (%s) score %d", sep, d->id, d->variant, d->score);
    }
}

/* ------------------------------------------------------------------ json */

static void print_json(const mxa_backend_info *bis, int nb, const mxa_device_info *devs, char (*measure)[MXA_REASON_LEN],
                       int nd, const char *auto_id, const what_if *wi, int nwi)
{
    char why[1024];
    auto_why(devs, nd, why, sizeof why);
    printf("{\n  \"version\": ");
    json_string(mxa_version_string());
    printf(",\n  \"auto\": ");
    if (auto_id) json_string(auto_id);
    else printf("null");
    printf(",\n  ");
    json_key("auto_reason", why, 0);
    printf(",\n  \"backends\": [");
    for (int i = 0; i < nb; i++) {
        const mxa_backend_info b = bis[i];
        printf("%s\n    {", i ? "," : "");
        json_key("name", b.name, 1);
        printf("\"built\": %s, \"present\": %s, \"device_count\": %d, ", b.built ? "true" : "false",
               b.present ? "true" : "false", b.device_count);
        json_key("reason", b.reason, 0);
        printf("}");
    }
    printf("\n  ],\n  \"devices\": [");
    for (int i = 0; i < nd; i++) {
        const mxa_device_info *d = &devs[i];
        printf("%s\n    {", i ? "," : "");
        json_key("id", d->id, 1);
        json_key("backend", d->backend, 1);
        printf("\"index\": %d, ", d->index);
        json_key("name", d->name, 1);
        json_key("vendor", d->vendor, 1);
        json_key("driver", d->driver, 1);
        printf("\"memory_bytes\": %" PRIu64 ", \"compute_units\": %" PRIu32 ", \"subgroup_min\": %" PRIu32
               ", \"subgroup_max\": %" PRIu32 ", \"shared_memory_bytes\": %" PRIu64 ",\n     \"caps\": [",
               d->memory_bytes, d->compute_units, d->subgroup_min, d->subgroup_max, d->shared_memory_bytes);
        int first = 1;
        for (int c = 0; c < CLI_COUNT(cap_names); c++)
            if (d->caps & cap_names[c].bit) {
                printf("%s", first ? "" : ", ");
                json_string(cap_names[c].name);
                first = 0;
            }
        printf("], ");
        json_key("capabilities", d->capabilities, 1);
        printf("\n     ");
        json_key("variant", d->variant, 1);
        json_key("variant_reason", d->variant_reason, 1);
        printf("\"default_bc\": %d, \"score\": %d, ", d->default_bc, d->score);
        json_key("score_reason", d->score_reason, measure[i][0] != 0);
        if (measure[i][0]) json_key("measure", measure[i], 0);
        printf("}");
    }
    printf("\n  ],\n  \"environment\": [");
    for (int i = 0; i < CLI_COUNT(env_switches); i++) {
        const char *v = getenv(env_switches[i].name);
        printf("%s\n    {", i ? "," : "");
        json_key("name", env_switches[i].name, 0);
        printf(", \"value\": ");
        if (v) json_string(v);
        else printf("null");
        printf(", ");
        json_key("meaning", env_switches[i].meaning, 0);
        printf("}");
    }
    printf("\n  ],\n  \"what_if\": [");
    for (int i = 0; i < nwi; i++) {
        printf("%s\n    {", i ? "," : "");
        json_key("switch", wi[i].label, 1);
        json_key("device", wi[i].device, 1);
        json_key("variant", wi[i].variant, 1);
        printf("\"changed\": %s, ", wi[i].changed ? "true" : "false");
        json_key("reason", wi[i].reason, 0);
        printf("}");
    }
    printf("\n  ]\n}\n");
}

/* ------------------------------------------------------------------ text */

static void print_text(const mxa_backend_info *bis, int nb, const mxa_device_info *devs, char (*measure)[MXA_REASON_LEN],
                       int nd, const char *auto_id, const what_if *wi, int nwi)
{
    printf("mxa %s\n\nbackends:\n", mxa_version_string());
    for (int i = 0; i < nb; i++) {
        const mxa_backend_info b = bis[i];
        if (b.present && b.reason[0]) printf("  %-8s present  %s\n", b.name, b.reason);
        else if (b.present) printf("  %-8s present  %d device%s\n", b.name, b.device_count, b.device_count == 1 ? "" : "s");
        else
            printf("  %-8s absent   %s%s\n", b.name, b.built ? "" : "not built: ", b.reason[0] ? b.reason : "no device");
    }
    printf("\ndevices:%s\n", nd ? "" : " none");
    for (int i = 0; i < nd; i++) {
        const mxa_device_info *d = &devs[i];
        const int is_auto = auto_id && strcmp(auto_id, d->id) == 0;
        printf("  %s: %s%s\n", d->id, d->name, is_auto ? "   <- auto" : "");
        printf("    %-16s %s\n", "vendor", d->vendor);
        printf("    %-16s %s\n", "driver", d->driver);
        if (d->compute_units) printf("    %-16s %" PRIu32 "\n", "compute units", d->compute_units);
        if (d->memory_bytes)
            printf("    %-16s %.1f GiB\n", "memory", (double)d->memory_bytes / (1024.0 * 1024.0 * 1024.0));
        if (d->shared_memory_bytes) printf("    %-16s %" PRIu64 " KiB\n", "shared memory", d->shared_memory_bytes / 1024);
        printf("    %-16s %" PRIu32 "..%" PRIu32 "\n", "subgroup size", d->subgroup_min, d->subgroup_max);
        printf("    %-16s %s\n", "capabilities", d->capabilities[0] ? d->capabilities : "(none)");
        printf("    %-16s", "kernel choice");
        for (int c = 0; c < CLI_COUNT(cap_names); c++)
            printf(" %s %s", cap_names[c].name, (d->caps & cap_names[c].bit) ? "yes" : "no");
        printf("\n    %-16s %s (Bc %d, score %d)\n", "variant", d->variant, d->default_bc, d->score);
        printf("    %-16s %s\n", "why", d->variant_reason);
        printf("    %-16s %s\n", "score", d->score_reason);
        if (measure[i][0]) printf("    %-16s %s\n", "measure", measure[i]);
    }
    if (nd) {
        const char *env = getenv("MXA_DEVICE");
        char why[1024];
        auto_why(devs, nd, why, sizeof why);
        printf("\n  auto -> %s (%s)\n", auto_id ? auto_id : "(none)",
               env && *env ? "MXA_DEVICE" : "the highest score; MXA_DEVICE overrides");
        printf("    why: %s\n", why);
    }

    printf("\nenvironment (current value; what setting it changes here):\n");
    for (int i = 0; i < CLI_COUNT(env_switches); i++) {
        const char *name = env_switches[i].name, *v = getenv(name);
        printf("  %-22s %s\n", name, v ? v : "(unset)");
        printf("      %s\n", env_switches[i].meaning);
        int shown = 0;
        for (int w = 0; w < nwi; w++) {
            if (strncmp(wi[w].label, name, strlen(name)) != 0 || wi[w].label[strlen(name)] != '=') continue;
            const char *asked = wi[w].label + strlen(name) + 1;
            const int forced = strcmp(name, "MXA_KERNEL") == 0;
            printf("      %-28s %-10s %s%s\n", wi[w].label, wi[w].device,
                   wi[w].changed ? "-> " : forced && strcmp(asked, wi[w].variant) != 0 ? "not possible here, stays " : "unchanged: ",
                   wi[w].variant);
            shown++;
        }
        if (!shown && strcmp(name, "MXA_DISABLE_NATIVE_FP4") == 0)
            printf("      no device here has native FP4 matrix instructions\n");
        if (strcmp(name, "MXA_CACHE_DIR") == 0) {
            const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
            printf("      now: %s%s\n", v ? v : x ? x : home ? home : "(none: set MXA_CACHE_DIR)",
                   v ? "" : x ? "/mxa" : home ? "/.cache/mxa" : "");
        }
    }
}

/* ------------------------------------------------------ one backend, isolated */

/* What a child reports about one backend: its info, its devices, their what-ifs. */
typedef struct backend_report {
    mxa_backend_info info;
    int device_count, what_if_count;
    mxa_device_info devices[16];
    char measure[16][MXA_REASON_LEN]; /* --measure: what measuring each device did ("" without) */
    what_if what_ifs[64];
} backend_report;

/* What the child is asked: the backend, and whether to measure its devices first. */
typedef struct probe_job {
    int index;
    int measure;
} probe_job;

/* --measure: times every device of `backend` that auto could pick; the notes are by id. */
static void measure_devices(const char *backend, char ids[16][32], char notes[16][MXA_REASON_LEN], int *count)
{
    mxa_runtime *rt = NULL;
    int nd = 0;
    *count = 0;
    if (mxa_runtime_create(NULL, &rt) || mxa_device_count(rt, &nd)) {
        mxa_runtime_destroy(rt);
        return;
    }
    for (int i = 0; i < nd && *count < 16; i++) {
        mxa_device_info d;
        if (mxa_device_get_info(rt, i, &d) || strcmp(d.backend, backend) != 0) continue; /* the CPU is in every child */
        char *note = notes[*count];
        snprintf(ids[(*count)++], 32, "%s", d.id);
        if (d.score < 0) {
            snprintf(note, MXA_REASON_LEN, "not measured: score %d is a policy (auto never picks it)", d.score);
            continue;
        }
        mxa_device *dev = NULL;
        double tflops = 0.0;
        if (mxa_device_open(rt, d.id, &dev) == MXA_OK && mxa_device_measure(dev, &tflops) == MXA_OK)
            snprintf(note, MXA_REASON_LEN, "measured %.3g TFLOP/s now (cached for later runs)", tflops);
        else
            snprintf(note, MXA_REASON_LEN, "measurement failed: %.200s", mxa_last_error_message());
        mxa_device_close(dev);
    }
    mxa_runtime_destroy(rt);
}

/* In the library's order, which "auto" uses to break ties. */
static const char *const backend_names[] = {"hip", "vulkan", "opencl", "cpu"};

/* In the child: this backend alone (isolate_only_backend), so the what-if
 * runtimes below load nothing else either. */
static int probe_one(void *arg, int fd)
{
    const probe_job *job = arg;
    const char *name = backend_names[job->index];
    alarm(job->measure ? 300 : 120); /* a driver that hangs in its probe is reported, not waited for forever */
    isolate_only_backend(name);
    backend_report *r = calloc(1, sizeof *r);
    mxa_runtime *rt = NULL;
    int nd = 0, nb = 0, found = 0, measured = 0;
    char measured_ids[16][32];
    static char notes[16][MXA_REASON_LEN];
    if (r && job->measure) measure_devices(name, measured_ids, notes, &measured);
    if (!r || mxa_runtime_create(NULL, &rt) || mxa_backend_count(rt, &nb)) {
        cli_library_error("probe", MXA_ERR_INTERNAL);
        return PROBE_ERROR;
    }
    for (int i = 0; i < nb && !found; i++) /* the disabled others answer without loading anything */
        found = mxa_backend_get_info(rt, i, &r->info) == MXA_OK && strcmp(r->info.name, name) == 0;
    if (!found || mxa_device_count(rt, &nd)) {
        cli_error("probe: backend %s: %s", name, found ? mxa_last_error_message() : "not known to this library");
        return PROBE_ERROR;
    }
    for (int i = 0; i < nd && r->device_count < CLI_COUNT(r->devices); i++) {
        mxa_device_info d;
        if (mxa_device_get_info(rt, i, &d) != MXA_OK || strcmp(d.backend, name) != 0) continue;
        for (int m = 0; m < measured; m++)
            if (strcmp(measured_ids[m], d.id) == 0) memcpy(r->measure[r->device_count], notes[m], MXA_REASON_LEN);
        r->devices[r->device_count++] = d;
    }
    mxa_runtime_destroy(rt);
    r->what_if_count = what_if_all(r->devices, r->device_count, r->what_ifs, CLI_COUNT(r->what_ifs));
    const int rc = isolate_write(fd, r, sizeof *r) ? PROBE_ERROR : 0;
    free(r);
    return rc;
}

/* Probes backend `index` in a child; a crash becomes its absence reason. */
static void probe_isolated(int index, int measure, backend_report *r)
{
    isolate_result res;
    probe_job job = {index, measure};
    memset(r, 0, sizeof *r);
    if (isolate_run(probe_one, &job, &res) == 0 && res.exited && res.code == 0 && res.size == sizeof *r) {
        memcpy(r, res.data, sizeof *r);
    } else {
        char how[160];
        snprintf(r->info.name, sizeof r->info.name, "%s", backend_names[index]);
        r->info.built = 1;
        if (res.signal == SIGALRM) snprintf(how, sizeof how, "timed out after %d s", measure ? 300 : 120);
        else if (!res.exited && res.signal) isolate_describe(&res, how, sizeof how);
        else snprintf(how, sizeof how, "its process ended with status %d", res.code);
        snprintf(r->info.reason, sizeof r->info.reason, "probe %s", how);
    }
    free(res.data);
}

/* The device "auto" opens, as find_device in runtime.c picks it: MXA_DEVICE
 * when set, else the highest score (the first in backend order on ties). */
static const char *auto_device(const mxa_device_info *devs, int nd)
{
    const char *env = getenv("MXA_DEVICE");
    if (env && *env && strcmp(env, "auto") != 0) {
        for (int i = 0; i < nd; i++)
            if (strcmp(devs[i].id, env) == 0 || (strcmp(devs[i].backend, env) == 0 && devs[i].index == 0) ||
                (strcmp(devs[i].backend, "cpu") == 0 && strcmp(env, "cpu:0") == 0))
                return devs[i].id;
        return NULL;
    }
    const mxa_device_info *best = NULL;
    for (int i = 0; i < nd; i++)
        if (!best || devs[i].score > best->score) best = &devs[i];
    return best ? best->id : NULL;
}

/* ---------------------------------------------------------------- --profile */

/* One line of mxa_vulkan_profile_plan's detail ("key: value"), or "". */
static void detail_field(const char *detail, const char *key, char *out, size_t size)
{
    const size_t klen = strlen(key);
    out[0] = 0;
    for (const char *line = detail; line && *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > klen + 1 && strncmp(line, key, klen) == 0 && line[klen] == ':' && line[klen + 1] == ' ') {
            snprintf(out, size, "%.*s", (int)(len - klen - 2), line + klen + 2);
            return;
        }
        line = end ? end + 1 : NULL;
    }
}

static int probe_profile(const char *path, int json)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("probe: --profile %s: cannot open it", path);
        return CLI_FAIL;
    }
    enum { MAX_PROFILE = 1 << 20 };
    char *text = malloc(MAX_PROFILE + 1);
    size_t n = text ? fread(text, 1, MAX_PROFILE + 1, f) : 0;
    const int read_error = ferror(f);
    fclose(f);
    if (!text || read_error || n > MAX_PROFILE) {
        cli_error("probe: --profile %s: %s", path, !text ? "out of memory" : read_error ? "read error" : "larger than 1 MiB");
        free(text);
        return CLI_FAIL;
    }
    text[n] = 0;
    if (memchr(text, 0, n)) {
        cli_error("probe: --profile %s: a NUL byte in the text", path);
        free(text);
        return CLI_FAIL;
    }
    static const struct {
        const char *label; /* NULL: the default */
        const char *kernel;
        unsigned flags;
    } runs[] = {
        {NULL, NULL, 0},
        {"MXA_KERNEL=coopmat-khr-i8", "coopmat-khr-i8", 0},
        {"MXA_KERNEL=coopmat-khr-f16", "coopmat-khr-f16", 0},
        {"MXA_KERNEL=coopmat-khr-i8-smem", "coopmat-khr-i8-smem", 0},
        {"MXA_KERNEL=coopmat-khr-f16-smem", "coopmat-khr-f16-smem", 0},
        {"MXA_KERNEL=intdot", "intdot", 0},
        {"MXA_DISABLE_COOPMAT=1", NULL, MXA_VULKAN_PLAN_DISABLE_COOPMAT},
        {"MXA_DISABLE_INT_DOT=1", NULL, MXA_VULKAN_PLAN_DISABLE_INT_DOT},
    };
    char def128[48] = "";
    int first = 1;
    if (json) {
        printf("{\n  \"profile\": ");
        json_string(path);
        printf(",\n  \"selection_only\": true,\n  \"plans\": [");
    }
    for (int r = -1; r < CLI_COUNT(runs); r++) {
        /* r = -1: the default at D = 64; then every run at D = 128 */
        const int64_t d = r < 0 ? 64 : 128;
        const int i = r < 0 ? 0 : r;
        char variant[48], detail[1024], device[256], shapes[256], workgroup[256], why[512];
        const mxa_status st = mxa_vulkan_profile_plan(text, d, runs[i].kernel, runs[i].flags, variant, sizeof variant,
                                                      detail, sizeof detail);
        if (st != MXA_OK) {
            if (json) printf("\n  ]\n}\n");
            cli_error("probe: --profile %s: %s", path, mxa_last_error_message());
            free(text);
            return CLI_FAIL;
        }
        detail_field(detail, "device", device, sizeof device);
        detail_field(detail, "shapes", shapes, sizeof shapes);
        detail_field(detail, "workgroup", workgroup, sizeof workgroup);
        detail_field(detail, "why", why, sizeof why);
        if (json) {
            printf("%s\n    {\"d\": %lld, \"switch\": ", first ? "" : ",", (long long)d);
            if (runs[i].label) json_string(runs[i].label);
            else printf("null");
            printf(", ");
            json_key("variant", variant, 1);
            json_key("device", device, 1);
            json_key("shapes", shapes, 1);
            json_key("workgroup", workgroup, 1);
            json_key("why", why, 0);
            printf("}");
            first = 0;
            continue;
        }
        if (r == -1) printf("mxa %s: profile %s (selection only, not run)\n\n  %-16s %s\n", mxa_version_string(), path,
                            "device", device);
        if (!runs[i].label) {
            printf("\n  D = %-12lld %s\n    %-14s %s\n    %-14s %s\n    %-14s %s\n", (long long)d, variant, "shapes",
                   shapes, "workgroup", workgroup, "why", why);
            if (d == 128) {
                snprintf(def128, sizeof def128, "%s", variant);
                printf("\n  switches, each set alone (D = 128):\n");
            }
            continue;
        }
        const int changed = strcmp(variant, def128) != 0;
        const int forced = runs[i].kernel != NULL;
        printf("    %-32s %s%s\n", runs[i].label,
               changed ? "-> " : forced && strcmp(runs[i].kernel, variant) != 0 ? "not possible here, stays " : "unchanged: ",
               variant);
        if (forced && strcmp(runs[i].kernel, variant) != 0) printf("    %-32s   (%s)\n", "", why);
    }
    if (json) printf("\n  ]\n}\n");
    free(text);
    return CLI_OK;
}

/* ------------------------------------------------------------------- main */

int cmd_probe(int argc, char **argv)
{
    cli_option options[] = {
        {"--json", NULL, "print JSON (stable keys, documented in tools/mxa/probe.c) instead of text", NULL},
        {"--profile", "FILE", "a Vulkan capability profile (tests/vulkan/profiles): what mxa would run on that device and why; selection only, nothing runs", NULL},
        {"--measure", NULL, "first time a short attention call (a few hundred ms) on every device auto could pick and cache it per device, driver and variant: the scores, and every later auto, are measured instead of estimated", NULL},
    };
    cli_spec spec = {"probe", "[--json] [--profile FILE] [--measure]",
                     "Lists every backend this build knows (present, or absent with the reason) and every\n"
                     "device: the capabilities that drive kernel choice, the kernel variant mxa would run and\n"
                     "why, which device 'auto' picks and why (each device's score: its attention throughput,\n"
                     "estimated, or measured with --measure), and what each environment switch would change here\n"
                     "(each variant switch is tried in a fresh runtime). Each backend is probed in a child\n"
                     "process of its own, so a driver that crashes while it loads is reported (\"probe\n"
                     "crashed: signal 6 ...\") and the others are still listed. Exit status: 0 at least one\n"
                     "device is present, 1 none is, 2 an error.",
                     options, CLI_COUNT(options), 0, 0, {NULL}, 0};
    int rc = cli_parse(&spec, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if (options[1].value && options[2].value) {
        cli_error("probe: --measure runs devices and --profile describes one that is not here: use one of them");
        return CLI_USAGE;
    }
    if (options[1].value) return probe_profile(options[1].value, options[0].value != NULL);

    enum { NB = CLI_COUNT(backend_names) };
    backend_report *reports = calloc(NB, sizeof *reports);
    mxa_backend_info bis[NB];
    mxa_device_info *devs = calloc(NB * 16, sizeof *devs);
    char (*measure)[MXA_REASON_LEN] = calloc(NB * 16, sizeof *measure);
    what_if *wi = calloc(NB * 64, sizeof *wi);
    int nd = 0, nwi = 0;
    if (!reports || !devs || !measure || !wi) {
        cli_error("probe: out of memory");
        rc = PROBE_ERROR;
        goto out;
    }
    for (int b = 0; b < NB; b++) {
        probe_isolated(b, options[2].value != NULL, &reports[b]);
        bis[b] = reports[b].info;
        for (int i = 0; i < reports[b].device_count; i++) {
            memcpy(measure[nd], reports[b].measure[i], sizeof measure[nd]);
            devs[nd++] = reports[b].devices[i];
        }
        for (int i = 0; i < reports[b].what_if_count; i++) wi[nwi++] = reports[b].what_ifs[i];
    }
    const char *auto_id = auto_device(devs, nd);
    if (options[0].value) print_json(bis, NB, devs, measure, nd, auto_id, wi, nwi);
    else print_text(bis, NB, devs, measure, nd, auto_id, wi, nwi);
    if (!nd) {
        cli_error("probe: no device is present");
        rc = CLI_FAIL;
    }
out:
    free(reports);
    free(devs);
    free(measure);
    free(wi);
    return rc;
}
