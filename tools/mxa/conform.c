/*
 * mxa conform [test|support|list]: the cross-backend conformance suite.
 *
 * Every case runs on every present device (or those named), compared against
 * the reference with the same recipe and the Bc the device reports; then on
 * every other kernel variant the device has, forced through the environment
 * switches of DESIGN.md (each in a fresh runtime, restored afterwards).
 * Exit status: 0 everything ran passed (or nothing requested is present, unless
 * --require), 1 a case failed, 2 a usage mistake.
 *
 * A run that spans more than one backend runs each backend's part (its device
 * discovery, its devices and their forced variants) in a child process of its
 * own with every other GPU backend disabled (isolate.h), which streams its
 * results back to this process; one report is printed as for a single process.
 * A driver that aborts or crashes while it loads takes down only its child: that
 * backend is reported absent ("probe crashed: signal 6 ...", a failure with
 * --require); one that crashes during its cases is a failure. A single backend
 * (-b NAME, or --device ids of one backend) runs in this process.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "conform.h"
#include "isolate.h"

/* Switches that may reach another kernel path, per backend (DESIGN.md). */
const conform_switch conform_switches[] = {
    {"cpu", {"MXA_CPU_ISA", "portable"}, CONFORM_SW_NEW_PATH},
    {"cpu", {"MXA_CPU_ISA", "avx2"}, CONFORM_SW_NEW_PATH},
    {"cpu", {"MXA_CPU_ISA", "avx512"}, CONFORM_SW_NEW_PATH},
    {"cpu", {"MXA_NUM_THREADS", "1"}, CONFORM_SW_ALWAYS},
    {"cpu", {"MXA_CPU_FUSED", "0"}, CONFORM_SW_ALWAYS}, /* the per-block QK kernel instead of the fused one */
    {"vulkan", {"MXA_KERNEL", "coopmat-khr-i8"}, CONFORM_SW_MATCH},
    {"vulkan", {"MXA_KERNEL", "coopmat-khr-f16"}, CONFORM_SW_MATCH},
    {"vulkan", {"MXA_KERNEL", "coopmat-khr-i8-smem"}, CONFORM_SW_MATCH},
    {"vulkan", {"MXA_KERNEL", "coopmat-khr-f16-smem"}, CONFORM_SW_MATCH},
    {"vulkan", {"MXA_KERNEL", "coopmat-khr-i8pv"}, CONFORM_SW_MATCH},
    {"vulkan", {"MXA_KERNEL", "intdot"}, CONFORM_SW_MATCH},
    {"vulkan", {"MXA_KERNEL", "scalar"}, CONFORM_SW_MATCH},
    {"vulkan", {"MXA_DISABLE_COOPMAT", "1"}, CONFORM_SW_NEW_PATH},
    {"vulkan", {"MXA_DISABLE_INT_DOT", "1"}, CONFORM_SW_NEW_PATH},
    {"opencl", {"MXA_KERNEL", "cl-mma-ptx"}, CONFORM_SW_MATCH},
    {"opencl", {"MXA_KERNEL", "cl-tiled"}, CONFORM_SW_MATCH},
    {"opencl", {"MXA_DISABLE_COOPMAT", "1"}, CONFORM_SW_NEW_PATH},
    {"opencl", {"MXA_DISABLE_INT_DOT", "1"}, CONFORM_SW_NEW_PATH},
    {"hip", {"MXA_KERNEL", "hip-mfma-fp4"}, CONFORM_SW_MATCH},
    {"hip", {"MXA_KERNEL", "hip-mfma-i8"}, CONFORM_SW_MATCH},
    {"hip", {"MXA_KERNEL", "hip-scalar"}, CONFORM_SW_MATCH},
    {"hip", {"MXA_DISABLE_NATIVE_FP4", "1"}, CONFORM_SW_NEW_PATH},
    {"hip", {"MXA_DISABLE_COOPMAT", "1"}, CONFORM_SW_NEW_PATH},
};
const int conform_switch_count = (int)(sizeof conform_switches / sizeof conform_switches[0]);

static const char *const known_backends[] = {"cpu", "vulkan", "opencl", "hip", NULL};

/* 1 if `name` is one of the comma-separated names of `list`. */
static int in_list(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

enum { OPT_DEVICE, OPT_B, OPT_BACKEND, OPT_O, OPT_ONLY, OPT_SKIP, OPT_SEED, OPT_QUICK, OPT_VARIANTS, OPT_JSON, OPT_CSV, OPT_V,
       OPT_VERBOSE, OPT_VECTORS, OPT_WRITE, OPT_REQUIRE, OPT_COUNT };

typedef struct conform_opts {
    const char *only, *skip;
    int quick, verbose, require;
    int variants; /* 0 none, 1 sweep (the variant subset), 2 full */
    uint64_t seed;
} conform_opts;

/* ------------------------------------------------------------- one target */

typedef struct tested_path {
    char variant[48];
    uint32_t caps;
} tested_path;

static int case_selected(const conform_case *c, const conform_opts *o, int forced)
{
    if (!conform_match(o->only, c->name)) return 0;
    if (o->skip && conform_match(o->skip, c->name)) return 0;
    if (o->quick && !(c->flags & CF_QUICK)) return 0;
    /* forced variants run the kernel-exercising subset, unless -o or --variants full says which */
    if (forced && o->variants == 1 && !o->only && !(c->flags & CF_VARIANT)) return 0;
    return 1;
}

/* Runs the selected cases on an open device; fills run. Returns 0, or -1 when out of memory. */
static int run_cases(conform_report *rep, conform_ctx *ctx, conform_target_run *run, const conform_case_list *cases,
                     const conform_opts *o)
{
    int n = 0;
    for (int i = 0; i < cases->n; i++) n += case_selected(&cases->v[i], o, ctx->forced);
    if (n == 0) { /* e.g. -o named no case of the variant subset */
        run->status = 1;
        snprintf(run->skip_reason, sizeof run->skip_reason, "no selected case runs on %s", ctx->forced ? "forced variants" : "it");
        return 0;
    }
    run->results = calloc((size_t)n, sizeof *run->results);
    const conform_case **list = calloc((size_t)n, sizeof *list);
    if (!run->results || !list) {
        free(list);
        cli_error("conform: out of memory");
        return -1;
    }
    run->cases = list;
    conform_report_target_begin(rep, run);
    const double t0 = cli_now();
    for (int i = 0; i < cases->n; i++) {
        const conform_case *c = &cases->v[i];
        if (!case_selected(c, o, ctx->forced)) continue;
        conform_result *r = &run->results[run->count];
        memset(r, 0, sizeof *r);
        r->status = CONFORM_PASS;
        r->nmse = r->threshold = r->max_abs = r->nmse_fp32 = NAN;
        const double c0 = cli_now();
        c->run(ctx, c, r);
        r->seconds = cli_now() - c0;
        list[run->count++] = c;
        switch (r->status) {
        case CONFORM_PASS: run->passed++; break;
        case CONFORM_FAIL: run->failed++; break;
        case CONFORM_UNSUPPORTED: run->unsupported++; break;
        case CONFORM_SKIP: run->skipped++; break;
        }
        conform_report_case(rep, run, c, r);
    }
    run->seconds = cli_now() - t0;
    return 0;
}

static conform_target_run *new_run(conform_report *rep)
{
    if (rep->run_count == rep->run_cap) {
        const int cap = rep->run_cap ? rep->run_cap * 2 : 16;
        conform_target_run *v = realloc(rep->runs, (size_t)cap * sizeof *v);
        if (!v) {
            cli_error("conform: out of memory");
            return NULL;
        }
        rep->runs = v;
        rep->run_cap = cap;
    }
    conform_target_run *run = &rep->runs[rep->run_count++];
    memset(run, 0, sizeof *run);
    return run;
}

static void fill_run(conform_target_run *run, const mxa_device_info *info)
{
    snprintf(run->id, sizeof run->id, "%s", info->id);
    snprintf(run->name, sizeof run->name, "%s", info->name);
    snprintf(run->backend, sizeof run->backend, "%s", info->backend);
    snprintf(run->variant, sizeof run->variant, "%s", info->variant);
    run->default_bc = info->default_bc;
}

/* The device `id` under one switch (or none): a fresh runtime when switched. */
static int run_target(conform_report *rep, mxa_runtime *base, const char *id, const conform_switch *sw,
                      tested_path *tested, int *ntested, const conform_case_list *cases, const conform_opts *o)
{
    conform_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.seed = o->seed;
    ctx.quick = o->quick;
    ctx.forced = sw != NULL;
    conform_env_saved saved = {0};
    conform_target_run *run = new_run(rep);
    if (!run) return -1;
    snprintf(run->id, sizeof run->id, "%s", id);
    if (sw) snprintf(run->env, sizeof run->env, "%s=%s", sw->env.name, sw->env.value);
    int rc = 0;
    mxa_status st;
    if (sw && conform_env_apply(&sw->env, 1, &saved)) {
        cli_error("conform: cannot set %s", run->env);
        rc = -1;
        goto out;
    }
    ctx.rt = base;
    if (sw && (st = mxa_runtime_create(NULL, &ctx.rt))) {
        ctx.rt = NULL;
        run->status = 1;
        snprintf(run->skip_reason, sizeof run->skip_reason, "runtime: %s", mxa_last_error_message());
        run->failed = 1; /* a switch must never break the runtime */
        goto out;
    }
    if ((st = mxa_device_open(ctx.rt, id, &ctx.dev)) || (st = mxa_device_info_of(ctx.dev, &ctx.info))) {
        /* a switch may make a device refuse (not supported here); a present device must open */
        run->status = 1;
        const int refused = sw && (st == MXA_ERR_UNSUPPORTED || st == MXA_ERR_NOT_FOUND);
        snprintf(run->skip_reason, sizeof run->skip_reason, "%s%s: %s", refused ? "not supported here: " : "cannot open: ",
                 mxa_status_string(st), mxa_last_error_message());
        if (!refused) run->failed = 1;
        goto out;
    }
    fill_run(run, &ctx.info);
    snprintf(ctx.label, sizeof ctx.label, "%s%s%s%s", id, sw ? " [" : "", sw ? run->env : "", sw ? "]" : "");
    if (sw && sw->policy == CONFORM_SW_MATCH && strcmp(ctx.info.variant, sw->env.value) != 0) {
        run->status = 1;
        snprintf(run->skip_reason, sizeof run->skip_reason, "not supported here (the device chose %s: %.200s)", ctx.info.variant,
                 ctx.info.variant_reason);
        goto out;
    }
    if (sw && sw->policy != CONFORM_SW_ALWAYS)
        for (int i = 0; i < *ntested; i++)
            if (strcmp(tested[i].variant, ctx.info.variant) == 0 && tested[i].caps == ctx.info.caps) {
                run->status = 1;
                snprintf(run->skip_reason, sizeof run->skip_reason, "same path as already tested (variant %s, same capabilities)",
                         ctx.info.variant);
                goto out;
            }
    if (*ntested < 32) {
        snprintf(tested[*ntested].variant, sizeof tested[*ntested].variant, "%s", ctx.info.variant);
        tested[(*ntested)++].caps = ctx.info.caps;
    }
    rc = run_cases(rep, &ctx, run, cases, o);
out:
    conform_report_target_end(rep, run);
    mxa_device_close(ctx.dev);
    if (ctx.rt && ctx.rt != base) mxa_runtime_destroy(ctx.rt);
    if (sw) conform_env_restore(&sw->env, &saved);
    return rc;
}

/* ----------------------------------------------------------- targets */

/* An absent backend or device: one line, exit 0 unless --require. */
static int absent(conform_report *rep, const char *id, const char *reason)
{
    conform_target_run *run = new_run(rep);
    if (!run) return -1;
    snprintf(run->id, sizeof run->id, "%s", id);
    run->status = 1;
    run->absent = 1;
    snprintf(run->skip_reason, sizeof run->skip_reason, "absent on this machine: %s", reason);
    rep->absent_lines++;
    conform_report_target_end(rep, run);
    return 0;
}

/* 0 if every name of the -b list is a backend mxa knows, else a usage error. */
static int check_backends(const char *backends)
{
    for (const char *p = backends; p && *p;) {
        const char *end = strchr(p, ',');
        const int len = end ? (int)(end - p) : (int)strlen(p);
        int known = 0;
        for (int i = 0; known_backends[i]; i++)
            known |= (int)strlen(known_backends[i]) == len && strncmp(p, known_backends[i], (size_t)len) == 0;
        if (!known) {
            cli_error("conform: -b %.*s: unknown backend (expected cpu, vulkan, opencl or hip)", len, p);
            return CLI_USAGE;
        }
        p = end ? end + 1 : NULL;
    }
    return CLI_OK;
}

/* Device ids to test: --device list, else every present device of the -b backends
 * (a named backend without a device is reported absent when report_absent). */
static int pick_devices(conform_report *rep, mxa_runtime *rt, const char *devices, const char *backends, int report_absent,
                        char ids[][32], int *nids)
{
    int nd = 0, nb = 0;
    *nids = 0;
    if (devices) {
        /* strtok_r: opening a device runs driver code (the Vulkan loader calls strtok) */
        char buf[256], *save = NULL;
        snprintf(buf, sizeof buf, "%s", devices);
        for (char *t = strtok_r(buf, ",", &save); t && *nids < 32; t = strtok_r(NULL, ",", &save)) {
            mxa_device *dev = NULL;
            mxa_status st = mxa_device_open(rt, t, &dev);
            if (st == MXA_ERR_NOT_FOUND) {
                if (absent(rep, t, mxa_last_error_message())) return CLI_FAIL;
                continue;
            }
            if (st) {
                cli_error("conform: --device %s: %s", t, mxa_last_error_message());
                return CLI_USAGE;
            }
            mxa_device_info info;
            mxa_device_info_of(dev, &info);
            mxa_device_close(dev);
            if (backends && !in_list(backends, info.backend)) continue;
            snprintf(ids[(*nids)++], 32, "%s", info.id);
        }
        return CLI_OK;
    }
    mxa_backend_count(rt, &nb);
    if (backends) {
        /* only the named backends load: mxa_backend_get_info probes the one it is asked about, so the
         * others are skipped by their place in the library's order (checked against the name it gives) */
        static const char *const order[] = {"hip", "vulkan", "opencl", "cpu"};
        for (int i = 0; i < nb && *nids < 32; i++) {
            mxa_backend_info b;
            if (i < 4 && !in_list(backends, order[i])) continue;
            if (mxa_backend_get_info(rt, i, &b) || !in_list(backends, b.name)) continue;
            if (!b.present) {
                if (report_absent && absent(rep, b.name, b.reason[0] ? b.reason : "no device")) return CLI_FAIL;
                continue;
            }
            for (int d = 0; d < b.device_count && *nids < 32; d++) {
                if (strcmp(b.name, "cpu") == 0) snprintf(ids[(*nids)++], 32, "cpu");
                else snprintf(ids[(*nids)++], 32, "%s:%d", b.name, d);
            }
        }
        return CLI_OK;
    }
    mxa_device_count(rt, &nd); /* every backend not disabled loads */
    for (int i = 0; i < nd && *nids < 32; i++) {
        mxa_device_info info;
        if (mxa_device_get_info(rt, i, &info)) continue;
        snprintf(ids[(*nids)++], 32, "%s", info.id);
    }
    return CLI_OK;
}

/* --------------------------------------------------------- the targets */

/* Every device of ids, then its forced variants. Each finished run goes to fd
 * (a child's result pipe) when fd >= 0. 0, or -1 when out of memory. */
static int send_runs(int fd, const conform_report *rep, int *sent, const conform_case_list *cases);

static int test_devices(conform_report *rep, mxa_runtime *rt, char ids[][32], int nids, const conform_case_list *cases,
                        const conform_opts *o, int fd, int *sent)
{
    for (int i = 0; i < nids; i++) {
        tested_path tested[32];
        int ntested = 0;
        if (run_target(rep, rt, ids[i], NULL, tested, &ntested, cases, o)) return -1;
        if (fd >= 0 && send_runs(fd, rep, sent, cases)) return -1;
        if (o->variants == 0) continue;
        char backend[16];
        const conform_target_run *first = &rep->runs[rep->run_count - 1];
        if (first->status) continue;
        snprintf(backend, sizeof backend, "%s", first->backend);
        for (int sw = 0; sw < conform_switch_count; sw++) {
            if (strcmp(conform_switches[sw].backend, backend) != 0) continue;
            if (run_target(rep, rt, ids[i], &conform_switches[sw], tested, &ntested, cases, o)) return -1;
            if (fd >= 0 && send_runs(fd, rep, sent, cases)) return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------ one backend per child */

/* The child's records on its pipe: a run (the struct, then per case its index
 * in the case list and its result), "devices discovered", a support-matrix
 * column (device info, then its cells), "done" with the exit status. Parent and child are one binary (fork), so structs go as bytes. */
enum { REC_RUN = 1, REC_DISCOVERED = 2, REC_END = 3, REC_COLUMN = 4 };
typedef struct rec_head {
    int32_t tag, value;
} rec_head;

static int send_rec(int fd, int tag, int value)
{
    const rec_head h = {tag, value};
    return isolate_write(fd, &h, sizeof h);
}

static int send_runs(int fd, const conform_report *rep, int *sent, const conform_case_list *cases)
{
    for (; *sent < rep->run_count; (*sent)++) {
        const conform_target_run *run = &rep->runs[*sent];
        if (send_rec(fd, REC_RUN, run->count) || isolate_write(fd, run, sizeof *run)) return -1;
        for (int k = 0; k < run->count; k++) {
            const int32_t index = (int32_t)(run->cases[k] - cases->v);
            if (isolate_write(fd, &index, sizeof index) || isolate_write(fd, &run->results[k], sizeof run->results[k]))
                return -1;
        }
    }
    return 0;
}

typedef struct backend_job {
    const char *backend;   /* the backend this child tests */
    const char *devices;   /* its ids of --device (comma-separated), or NULL: discover */
    int report_absent;     /* -b named it: say so when it has no device */
    const conform_report *rep;
    const conform_case_list *cases;
    const conform_opts *o;
    int support;           /* mode support: columns of the matrix instead of test runs */
} backend_job;

/* Support columns gathered from the children. */
typedef struct support_columns {
    mxa_device_info infos[32];
    conform_support_cell *cells; /* 32 x nf, device-major */
    int n, nf;
} support_columns;

/* In the child: this backend alone (isolate_only_backend), so nothing else loads here. */
static int backend_child(void *arg, int fd)
{
    const backend_job *job = arg;
    isolate_only_backend(job->backend);
    conform_report rep = *job->rep; /* format, verbosity, seed: the text lines print from here as they come */
    rep.runs = NULL, rep.run_count = rep.run_cap = rep.absent_lines = 0;
    mxa_runtime *rt = NULL;
    char ids[32][32];
    int nids = 0, sent = 0, rc;
    mxa_status st = mxa_runtime_create(NULL, &rt);
    if (st) rc = cli_library_error("conform: runtime", st);
    else rc = pick_devices(&rep, rt, job->devices, job->backend, job->report_absent, ids, &nids);
    if (send_runs(fd, &rep, &sent, job->cases) || send_rec(fd, REC_DISCOVERED, nids)) rc = CLI_FAIL;
    if (rc == CLI_OK && job->support) {
        const int nf = conform_support_feature_count();
        conform_support_cell *col = calloc((size_t)nf, sizeof *col);
        for (int i = 0; i < nids && rc == CLI_OK; i++) {
            mxa_device_info info;
            if (!col) {
                rc = CLI_FAIL;
                break;
            }
            conform_support_column(rt, ids[i], job->o->seed, &info, col);
            if (send_rec(fd, REC_COLUMN, nf) || isolate_write(fd, &info, sizeof info) ||
                isolate_write(fd, col, (size_t)nf * sizeof *col))
                rc = CLI_FAIL;
        }
        free(col);
    } else if (rc == CLI_OK && test_devices(&rep, rt, ids, nids, job->cases, job->o, fd, &sent)) {
        rc = CLI_FAIL;
    }
    if (send_runs(fd, &rep, &sent, job->cases)) rc = CLI_FAIL;
    send_rec(fd, REC_END, rc); /* before the runtime goes: a driver that crashes unloading costs nothing */
    for (int i = 0; i < rep.run_count; i++) {
        free(rep.runs[i].results);
        free((void *)rep.runs[i].cases);
    }
    free(rep.runs);
    mxa_runtime_destroy(rt);
    return rc;
}

/* The child's records into rep. Sets *discovered / *ended (and *end_rc). -1 when
 * out of memory or the records are not what a child writes. */
static int take_runs(conform_report *rep, const isolate_result *res, const conform_case_list *cases, int *discovered,
                     int *ended, int *end_rc, support_columns *cols)
{
    size_t at = 0;
    *discovered = *ended = 0;
    while (res->data && at + sizeof(rec_head) <= res->size) {
        rec_head h;
        memcpy(&h, res->data + at, sizeof h);
        at += sizeof h;
        if (h.tag == REC_DISCOVERED) {
            *discovered = 1;
        } else if (h.tag == REC_END) {
            *ended = 1, *end_rc = h.value;
        } else if (h.tag == REC_COLUMN) {
            const size_t bytes = sizeof(mxa_device_info) + (size_t)cols->nf * sizeof(conform_support_cell);
            if (!cols->cells || h.value != cols->nf || res->size - at < bytes) return -1;
            if (cols->n < 32) {
                memcpy(&cols->infos[cols->n], res->data + at, sizeof(mxa_device_info));
                memcpy(cols->cells + (size_t)cols->n * cols->nf, res->data + at + sizeof(mxa_device_info),
                       (size_t)cols->nf * sizeof(conform_support_cell));
                cols->n++;
            }
            at += bytes;
        } else if (h.tag == REC_RUN) {
            const size_t item = sizeof(int32_t) + sizeof(conform_result);
            if (h.value < 0 || at + sizeof(conform_target_run) > res->size ||
                (res->size - at - sizeof(conform_target_run)) / item < (size_t)h.value)
                return -1;
            conform_target_run *run = new_run(rep);
            if (!run) return -1;
            memcpy(run, res->data + at, sizeof *run);
            at += sizeof *run;
            run->cases = NULL, run->results = NULL, run->count = 0;
            if (h.value > 0) {
                const conform_case **list = calloc((size_t)h.value, sizeof *list);
                run->results = calloc((size_t)h.value, sizeof *run->results);
                run->cases = list;
                if (!list || !run->results) return -1;
                for (int k = 0; k < h.value; k++) {
                    int32_t index;
                    memcpy(&index, res->data + at, sizeof index);
                    at += sizeof index;
                    memcpy(&run->results[k], res->data + at, sizeof run->results[k]);
                    at += sizeof run->results[k];
                    if (index < 0 || index >= cases->n) return -1;
                    list[k] = &cases->v[index];
                    run->count++;
                }
            }
            if (run->absent) rep->absent_lines++;
        } else {
            return -1;
        }
    }
    return 0;
}

/* Runs each backend's part in a child of its own (devices[b]: its --device ids or NULL). */
static int test_isolated(conform_report *rep, const char *const *backends, char devices[][256], int count, int report_absent,
                         const conform_case_list *cases, const conform_opts *o, support_columns *cols)
{
    for (int b = 0; b < count; b++) {
        backend_job job = {backends[b], devices && devices[b][0] ? devices[b] : NULL, report_absent, rep, cases, o, cols != NULL};
        isolate_result res;
        if (isolate_run(backend_child, &job, &res)) {
            cli_error("conform: %s: cannot start a child process: %s", backends[b], strerror(res.code));
            return CLI_FAIL;
        }
        int discovered, ended, end_rc = CLI_OK;
        support_columns none = {0};
        const int bad = take_runs(rep, &res, cases, &discovered, &ended, &end_rc, cols ? cols : &none);
        if (bad) {
            free(res.data);
            cli_error("conform: %s: out of memory or a garbled result from its child process", backends[b]);
            return CLI_FAIL;
        }
        if (!ended) { /* the child died: while loading (absent), or while testing (a failure) */
            char how[160];
            if (res.exited) snprintf(how, sizeof how, "ended with status %d", res.code);
            else isolate_describe(&res, how, sizeof how);
            conform_target_run *run = new_run(rep);
            if (!run) {
                free(res.data);
                return CLI_FAIL;
            }
            snprintf(run->id, sizeof run->id, "%s", backends[b]);
            snprintf(run->backend, sizeof run->backend, "%s", backends[b]);
            run->status = 1;
            if (!discovered) {
                run->absent = 1;
                rep->absent_lines++;
                snprintf(run->skip_reason, sizeof run->skip_reason, "absent on this machine: probe %s", how);
            } else {
                run->failed = 1;
                snprintf(run->skip_reason, sizeof run->skip_reason,
                         "its process %s while testing (the runs it finished are counted)", how);
            }
            conform_report_target_end(rep, run);
        }
        free(res.data);
        if (ended && end_rc != CLI_OK) return end_rc; /* a usage mistake or out of memory: as in one process */
    }
    return CLI_OK;
}

/* The backends a run spans, each with its --device ids: 0 and *count when they
 * are known (count 1: run in this process), -1 when an id names no backend
 * ("auto", a typo: this process, which reports it as before). */
static int split_targets(const char *devices, const char *backends, const char *names[4], char ids[4][256], int *count)
{
    static const char *const order[] = {"hip", "vulkan", "opencl", "cpu"}; /* the library's */
    *count = 0;
    if (!devices) {
        for (int i = 0; i < 4; i++)
            if (!backends || in_list(backends, order[i])) names[(*count)++] = order[i], ids[*count - 1][0] = '\0';
        return 0;
    }
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", devices);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const size_t len = strcspn(t, ":");
        int b = -1;
        for (int i = 0; i < 4; i++)
            if (strlen(order[i]) == len && strncmp(t, order[i], len) == 0) b = i;
        if (b < 0) return -1;
        if (backends && !in_list(backends, order[b])) continue; /* as pick_devices: -b filters --device */
        int g = 0;
        while (g < *count && strcmp(names[g], order[b]) != 0) g++;
        if (g == *count) names[(*count)++] = order[b], ids[g][0] = '\0';
        const size_t used = strlen(ids[g]);
        snprintf(ids[g] + used, 256 - used, "%s%s", used ? "," : "", t);
    }
    return 0;
}

/* ------------------------------------------------------------------ list */

static void print_list(const conform_case_list *cases, const conform_opts *o, conform_format format)
{
    int n = 0;
    if (format == CONFORM_JSON) printf("{\n  \"cases\": [");
    if (format == CONFORM_CSV) printf("case,group,quick,variant,required,what\n");
    for (int i = 0; i < cases->n; i++) {
        const conform_case *c = &cases->v[i];
        if (!case_selected(c, o, 0)) continue;
        if (format == CONFORM_JSON) {
            printf("%s\n    {\"name\": ", n ? "," : "");
            conform_json_string(c->name);
            printf(", \"group\": ");
            conform_json_string(c->group);
            printf(", \"quick\": %s, \"variant\": %s, \"required\": %s, \"what\": ", (c->flags & CF_QUICK) ? "true" : "false",
                   (c->flags & CF_VARIANT) ? "true" : "false", (c->flags & CF_REQUIRED) ? "true" : "false");
            conform_json_string(c->what);
            printf("}");
        } else if (format == CONFORM_CSV) {
            printf("%s,%s,%d,%d,%d,\"%s\"\n", c->name, c->group, !!(c->flags & CF_QUICK), !!(c->flags & CF_VARIANT),
                   !!(c->flags & CF_REQUIRED), c->what);
        } else {
            printf("%-52s %c%c%c  %s\n", c->name, (c->flags & CF_QUICK) ? 'q' : '-', (c->flags & CF_VARIANT) ? 'v' : '-',
                   (c->flags & CF_REQUIRED) ? 'r' : '-', c->what);
        }
        n++;
    }
    if (format == CONFORM_JSON) printf("\n  ],\n  \"count\": %d\n}\n", n);
    if (format == CONFORM_TEXT)
        printf("\n%d cases (flags: q = in --quick, v = also on forced kernel variants, r = every device must run it)\n", n);
}

/* ------------------------------------------------------------------- main */

static const char summary[] =
    "The cross-backend conformance suite. MODE is test (default), support (a matrix of what each\n"
    "device supports: recipes, head sizes, Bc, dtypes, buffers, kernel variants) or list.\n\n"
    "test runs every case on every present device (or --device / -b), each compared against the\n"
    "reference with the same recipe and the Bc the device reports: MXFP4 quantization bit-exact\n"
    "(SPEC vectors, random blocks of every magnitude, every q*2^k +-1 ulp boundary, tails, dtypes),\n"
    "attention for every recipe x causal x D 32..256 x tails (Nk 1, 31, 33, 130, 1000) x GQA, every\n"
    "ablation switch, Bc, dtypes, device buffers, tile edges, random shapes drawn from the seed, the\n"
    "SPEC §2 invariants and bad input (right status, outputs untouched). Outputs sit between guard regions (out-of-bounds writes are caught) and\n"
    "must be finite. Then every other kernel variant of each device runs the variant subset, forced\n"
    "through MXA_KERNEL / MXA_CPU_ISA / MXA_DISABLE_COOPMAT / MXA_DISABLE_INT_DOT /\n"
    "MXA_DISABLE_NATIVE_FP4 / MXA_NUM_THREADS (each in a fresh runtime). Attention: every element\n"
    "and LSE within a bound derived from fp32 rounding, or its row reproduced by flipping P~ codes\n"
    "that lie within that bound of an E2M1 boundary; NMSE bounds per recipe class (--json\n"
    "\"tolerances\") over the other rows.\n\n"
    "Every case's data comes from the seed and its own name: '-o NAME --seed S' reproduces one case\n"
    "of a full run exactly. A requested backend that is absent is reported and skipped (exit 0;\n"
    "--require makes it a failure). Exit 1 if any case fails, or if no case passed at all.\n"
    "Over several backends each one runs in a child process of its own: a driver that crashes while\n"
    "it loads is reported absent (\"probe crashed: signal 6 ...\"), one that crashes during its cases\n"
    "fails, and the other backends are still tested.\n\n"
    "External vectors (--vectors DIR), one set per <name>:\n"
    "  attention  <name>.q.npy [B,H,Nq,D]  <name>.k.npy / .v.npy [B,Hkv,Nk,D]  <name>.out.npy [B,H,Nq,D]\n"
    "             optional <name>.lse.npy [B,H,Nq]   (float32 or float16; rank 2/3 = leading 1s)\n"
    "  quantize   <name>.x.npy [..., K]  <name>.codes.npy [rows, ceil(K/32)*16] uint8\n"
    "             <name>.scales.npy [rows, ceil(K/32)] uint8\n"
    "  recipe     <name>.json {\"recipe\": \"mxattention\", \"causal\": 1, \"bc\": 64, \"scale\": 0.125,\n"
    "             \"hadamard\": 1, \"rule\": \"uos\", \"placement\": \"pnq\", \"quantize\": \"qk,v,p\",\n"
    "             \"nmse_max\": 1e-5} (all optional), or tokens in the name: mine_ocp-direct_causal_bc128.\n"
    "             Defaults: mxattention, non-causal, Bc 64. The device runs at that Bc.\n"
    "--write-vectors DIR exports the built-in cases in that form (our reference outputs, the exact\n"
    "host model's codes) and exits; -o selects which.";

int cmd_conform(int argc, char **argv)
{
    cli_option options[OPT_COUNT] = {
        [OPT_DEVICE] = {"--device", "ID[,ID]", "devices to test (default: every present device)", NULL},
        [OPT_B] = {"-b", "BACKEND[,..]", "only devices of these backends (cpu, vulkan, opencl, hip)", NULL},
        [OPT_BACKEND] = {"--backend", "BACKEND[,..]", "same as -b", NULL},
        [OPT_O] = {"-o", "CASE[,..]", "only cases whose name contains CASE (or matches it as a glob: * ? [])", NULL},
        [OPT_ONLY] = {"--only", "CASE[,..]", "same as -o", NULL},
        [OPT_SKIP] = {"--skip", "CASE[,..]", "leave out cases matching CASE (a known issue; same matching as -o)", NULL},
        [OPT_SEED] = {"--seed", "N", "seed of every case's data (default 20251129)", NULL},
        [OPT_QUICK] = {"--quick", NULL, "the quick subset (for slow software devices; what ctest runs)", NULL},
        [OPT_VARIANTS] = {"--variants", "MODE", "other kernel variants: sweep (default: their subset), full, none", NULL},
        [OPT_JSON] = {"--json", NULL, "print JSON to stdout (keys documented in tools/mxa/conform_report.c)", NULL},
        [OPT_CSV] = {"--csv", NULL, "print CSV to stdout, one line per case and device", NULL},
        [OPT_V] = {"-v", NULL, "print every case, not only failures", NULL},
        [OPT_VERBOSE] = {"--verbose", NULL, "same as -v", NULL},
        [OPT_VECTORS] = {"--vectors", "DIR", "run the external vectors in DIR instead of the built-in cases", NULL},
        [OPT_WRITE] = {"--write-vectors", "DIR", "write the built-in cases as .npy vectors to DIR and exit", NULL},
        [OPT_REQUIRE] = {"--require", NULL, "fail when a requested backend or device is absent", NULL},
    };
    cli_spec spec = {"conform", "[test|support|list] [options]", summary, options, OPT_COUNT, 0, 1, {NULL}, 0};
    int rc = cli_parse(&spec, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;

    conform_opts o;
    memset(&o, 0, sizeof o);
    o.seed = CONFORM_DEFAULT_SEED;
    o.variants = 1;
    const char *mode = spec.positional_count ? spec.positional[0] : "test";
    if (strcmp(mode, "test") && strcmp(mode, "support") && strcmp(mode, "list")) {
        cli_error("conform: unknown mode '%s' (expected test, support or list)", mode);
        return CLI_USAGE;
    }
    for (int pair = 0; pair < 3; pair++) { /* short and long spellings of one option */
        const int a = pair == 0 ? OPT_B : pair == 1 ? OPT_O : OPT_V, b = a + 1;
        if (options[a].value && options[b].value) {
            cli_error("conform: %s and %s are the same option; give one", options[a].name, options[b].name);
            return CLI_USAGE;
        }
        if (!options[a].value) options[a].value = options[b].value;
    }
    const char *backends = options[OPT_B].value, *devices = options[OPT_DEVICE].value;
    o.only = options[OPT_O].value;
    o.skip = options[OPT_SKIP].value;
    o.quick = options[OPT_QUICK].value != NULL;
    o.verbose = options[OPT_V].value != NULL;
    o.require = options[OPT_REQUIRE].value != NULL;
    if (options[OPT_SEED].value) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(options[OPT_SEED].value, &end, 0);
        if (errno || *end || end == options[OPT_SEED].value || options[OPT_SEED].value[0] == '-') {
            cli_error("conform: --seed %s: expected a non-negative integer", options[OPT_SEED].value);
            return CLI_USAGE;
        }
        o.seed = s;
    }
    if (options[OPT_VARIANTS].value) {
        static const char *const modes[] = {"none", "sweep", "full", NULL};
        if (cli_choice("--variants", options[OPT_VARIANTS].value, modes, &o.variants)) return CLI_USAGE;
    }
    if (options[OPT_JSON].value && options[OPT_CSV].value) {
        cli_error("conform: --json and --csv exclude each other");
        return CLI_USAGE;
    }
    const conform_format format = options[OPT_JSON].value ? CONFORM_JSON : options[OPT_CSV].value ? CONFORM_CSV : CONFORM_TEXT;
    if (options[OPT_VECTORS].value && options[OPT_WRITE].value) {
        cli_error("conform: --vectors and --write-vectors exclude each other");
        return CLI_USAGE;
    }

    conform_case_list cases = {0};
    mxa_runtime *rt = NULL;
    conform_report rep;
    memset(&rep, 0, sizeof rep);
    rep.format = format;
    rep.verbose = o.verbose;
    rep.seed = o.seed;
    rep.quick = o.quick;
    rep.mode = mode;
    if (conform_build_cases(&cases, options[OPT_VECTORS].value)) {
        rc = options[OPT_VECTORS].value ? CLI_USAGE : CLI_FAIL;
        goto out;
    }
    int matched = 0;
    for (int i = 0; i < cases.n; i++) matched += conform_match(o.only, cases.v[i].name) && !(o.skip && conform_match(o.skip, cases.v[i].name));
    if (!matched) {
        cli_error("conform: -o %s matches no case (see 'mxa conform list')", o.only);
        rc = CLI_USAGE;
        goto out;
    }
    if (options[OPT_WRITE].value) {
        rc = conform_write_vectors(options[OPT_WRITE].value, &cases, o.only, o.seed);
        goto out;
    }
    if (strcmp(mode, "list") == 0) {
        print_list(&cases, &o, format);
        goto out;
    }

    if ((rc = check_backends(backends))) goto out;
    char ids[32][32];
    int nids = 0, per_device = 0;
    for (int i = 0; i < cases.n; i++) per_device += case_selected(&cases.v[i], &o, 0);
    const char *groups[4];
    char group_ids[4][256];
    int ngroups = 0;
    const int isolated = split_targets(devices, backends, groups, group_ids, &ngroups) == 0 && ngroups > 1;
    const int support = strcmp(mode, "support") == 0;
    if (!support) conform_report_header(&rep, per_device);
    if (isolated) {
        /* more than one backend: each in a child of its own, this process loads none of them */
        support_columns cols = {0};
        if (support && !(cols.cells = calloc(32 * (size_t)(cols.nf = conform_support_feature_count()), sizeof *cols.cells))) {
            cli_error("conform: out of memory");
            rc = CLI_FAIL;
            goto out;
        }
        rc = test_isolated(&rep, groups, devices ? group_ids : NULL, ngroups, backends != NULL, &cases, &o,
                           support ? &cols : NULL);
        if (rc == CLI_OK && support) {
            rc = conform_support_print(cols.infos, cols.cells, cols.n, o.seed, format);
            for (int i = 0; i < rep.run_count; i++)
                if (rep.runs[i].failed) rc = CLI_FAIL; /* a backend that crashed while being tested */
            if (rc == CLI_OK && o.require && rep.absent_lines) rc = CLI_FAIL;
        }
        free(cols.cells);
        if (rc || support) goto out;
    } else {
        mxa_status st;
        if ((st = mxa_runtime_create(NULL, &rt))) {
            rc = cli_library_error("conform: runtime", st);
            goto out;
        }
        if ((rc = pick_devices(&rep, rt, devices, backends, backends != NULL, ids, &nids))) goto out;
        if (strcmp(mode, "support") == 0) {
            const char *idp[32];
            for (int i = 0; i < nids; i++) idp[i] = ids[i];
            rc = conform_support(rt, idp, nids, o.seed, format);
            if (rc == CLI_OK && o.require && rep.absent_lines) rc = CLI_FAIL;
            goto out;
        }
        if (test_devices(&rep, rt, ids, nids, &cases, &o, -1, NULL)) {
            rc = CLI_FAIL;
            goto out;
        }
    }
    int failed = 0, ran = 0, passed = 0;
    for (int i = 0; i < rep.run_count; i++) {
        failed += rep.runs[i].failed;
        passed += rep.runs[i].passed;
        ran += !rep.runs[i].status;
    }
    if (ran == 0 && format == CONFORM_TEXT)
        printf("\nconform: nothing to test: no requested device is present (exit %d%s)\n", o.require ? 1 : 0,
               o.require ? ", --require" : "; --require makes this a failure");
    else
        conform_report_finish(&rep);
    /* no case passed on any device that ran (every one unsupported or not applicable): nothing checked */
    rc = failed || (ran && !passed) || (o.require && rep.absent_lines) ? CLI_FAIL : CLI_OK;
out:
    for (int i = 0; i < rep.run_count; i++) {
        free(rep.runs[i].results);
        free((void *)rep.runs[i].cases);
    }
    free(rep.runs);
    conform_case_list_free(&cases);
    mxa_runtime_destroy(rt);
    return rc;
}
