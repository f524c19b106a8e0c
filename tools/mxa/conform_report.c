/*
 * mxa conform: the report. Text prints as the run goes (failures always,
 * every case with -v, one summary line per device and variant); JSON and CSV
 * print everything at the end, to stdout, with stable keys/columns:
 *
 * JSON {"version", "mode", "seed", "quick", "tolerances": [{"class", "nmse_max", "reason"}]
 *       (every element and LSE also within its derived fp32 bound, or its row explained
 *       by P~ code flips: conform_flip.c),
 *       "runs": [{"id", "name", "backend", "variant", "env", "default_bc",
 *                 "skipped": bool, "skip_reason", "passed", "failed", "unsupported",
 *                 "skipped_cases", "seconds",
 *                 "cases": [{"name", "group", "status": "pass"|"fail"|"unsupported"|"skip",
 *                            "message", "nmse", "threshold", "max_abs", "nmse_fp32",
 *                            "bc", "variant", "seconds"}]}],
 *       "failed": int, "passed": bool}
 * (numbers that do not apply are null; "passed" is false, and "failed" at least 1,
 * when no case passed anywhere: nothing was checked).
 * CSV  device,env,device_variant,case,group,status,nmse,threshold,max_abs,nmse_fp32,bc,variant,seconds,message
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

void conform_json_string(const char *s)
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

static void json_number(double x)
{
    if (isfinite(x)) printf("%.6g", x);
    else printf("null");
}

static void csv_field(const char *s)
{
    /* quote always: messages hold commas */
    putchar('"');
    for (const char *p = s ? s : ""; *p; p++) {
        if (*p == '"') putchar('"');
        putchar(*p == '\n' ? ' ' : *p);
    }
    putchar('"');
}

static void csv_number(double x)
{
    if (isfinite(x)) printf("%.6g", x);
}

static void run_label(const conform_target_run *run, char *buf, size_t size)
{
    if (run->env[0]) snprintf(buf, size, "%s [%s]", run->id, run->env);
    else snprintf(buf, size, "%s", run->id);
}

void conform_report_header(const conform_report *rep, int case_count)
{
    if (rep->format != CONFORM_TEXT) return;
    printf("mxa conform %s: mode %s, seed %llu (reproduce with --seed %llu), %d cases per device%s\n", mxa_version_string(),
           rep->mode, (unsigned long long)rep->seed, (unsigned long long)rep->seed, case_count,
           rep->quick ? " (--quick)" : "");
    fflush(stdout);
}

void conform_report_target_begin(const conform_report *rep, const conform_target_run *run)
{
    if (rep->format != CONFORM_TEXT || run->status) return;
    char label[160];
    run_label(run, label, sizeof label);
    printf("\n== %s: %s, variant %s, Bc %d\n", label, run->name, run->variant, run->default_bc);
    fflush(stdout);
}

void conform_report_case(const conform_report *rep, const conform_target_run *run, const conform_case *c,
                         const conform_result *r)
{
    (void)run;
    if (rep->format != CONFORM_TEXT) return;
    if (r->status == CONFORM_FAIL) {
        printf("  FAIL %s: %s\n", c->name, r->message);
    } else if (rep->verbose) {
        printf("  %-4s %s", r->status == CONFORM_PASS ? "pass" : conform_status_name(r->status), c->name);
        if (isfinite(r->nmse)) printf("  nmse %.2e", r->nmse);
        if (isfinite(r->nmse_fp32) && r->nmse_fp32 != r->nmse) printf(" (vs fp32 %.2e)", r->nmse_fp32);
        if (r->bc) printf("  Bc %d %s", r->bc, r->variant);
        printf("  %.3f s", r->seconds);
        if (r->message[0]) printf("  %s", r->message);
        putchar('\n');
    }
    fflush(stdout);
}

void conform_report_target_end(const conform_report *rep, const conform_target_run *run)
{
    if (rep->format != CONFORM_TEXT) return;
    char label[160];
    run_label(run, label, sizeof label);
    if (run->status) {
        printf("%s%s: skipped: %s\n", rep->verbose ? "\n" : "", label, run->skip_reason);
    } else {
        printf("%s %s: %d/%d passed", label, run->name, run->passed, run->passed + run->failed);
        if (run->unsupported) printf(", %d unsupported", run->unsupported);
        if (run->skipped) printf(", %d not applicable", run->skipped);
        printf(" (variant %s) in %.1f s\n", run->variant, run->seconds);
    }
    fflush(stdout);
}

static void print_json(const conform_report *rep, int failed)
{
    printf("{\n  \"version\": ");
    conform_json_string(mxa_version_string());
    printf(",\n  \"mode\": ");
    conform_json_string(rep->mode);
    printf(",\n  \"seed\": %llu,\n  \"quick\": %s,\n  \"tolerances\": [", (unsigned long long)rep->seed,
           rep->quick ? "true" : "false");
    for (int i = 0; i < conform_tolerance_count; i++) {
        const conform_tolerance *t = &conform_tolerances[i];
        printf("%s\n    {\"class\": ", i ? "," : "");
        conform_json_string(t->klass);
        printf(", \"nmse_max\": %g, \"reason\": ", t->nmse_max);
        conform_json_string(t->reason);
        printf("}");
    }
    printf("\n  ],\n  \"runs\": [");
    for (int i = 0; i < rep->run_count; i++) {
        const conform_target_run *run = &rep->runs[i];
        printf("%s\n    {\"id\": ", i ? "," : "");
        conform_json_string(run->id);
        printf(", \"name\": ");
        conform_json_string(run->name);
        printf(", \"backend\": ");
        conform_json_string(run->backend);
        printf(", \"variant\": ");
        conform_json_string(run->variant);
        printf(", \"env\": ");
        conform_json_string(run->env);
        printf(", \"default_bc\": %d, \"skipped\": %s, \"skip_reason\": ", run->default_bc, run->status ? "true" : "false");
        conform_json_string(run->skip_reason);
        printf(",\n     \"passed\": %d, \"failed\": %d, \"unsupported\": %d, \"skipped_cases\": %d, \"seconds\": %.3f,\n     \"cases\": [",
               run->passed, run->failed, run->unsupported, run->skipped, run->seconds);
        for (int j = 0; j < run->count; j++) {
            const conform_result *r = &run->results[j];
            printf("%s\n      {\"name\": ", j ? "," : "");
            conform_json_string(run->cases[j]->name);
            printf(", \"group\": ");
            conform_json_string(run->cases[j]->group);
            printf(", \"status\": ");
            conform_json_string(conform_status_name(r->status));
            printf(", \"message\": ");
            conform_json_string(r->message);
            printf(", \"nmse\": ");
            json_number(r->nmse);
            printf(", \"threshold\": ");
            json_number(r->threshold);
            printf(", \"max_abs\": ");
            json_number(r->max_abs);
            printf(", \"nmse_fp32\": ");
            json_number(r->nmse_fp32);
            printf(", \"bc\": %d, \"variant\": ", r->bc);
            conform_json_string(r->variant);
            printf(", \"seconds\": %.4f}", r->seconds);
        }
        printf("%s]}", run->count ? "\n     " : "");
    }
    printf("\n  ],\n  \"failed\": %d,\n  \"passed\": %s\n}\n", failed, failed ? "false" : "true");
}

static void print_csv(const conform_report *rep)
{
    printf("device,env,device_variant,case,group,status,nmse,threshold,max_abs,nmse_fp32,bc,variant,seconds,message\n");
    for (int i = 0; i < rep->run_count; i++) {
        const conform_target_run *run = &rep->runs[i];
        if (run->status) {
            csv_field(run->id), putchar(','), csv_field(run->env), putchar(','), csv_field(run->variant);
            printf(",,,skip,,,,,,,,");
            csv_field(run->skip_reason);
            putchar('\n');
            continue;
        }
        for (int j = 0; j < run->count; j++) {
            const conform_result *r = &run->results[j];
            csv_field(run->id), putchar(','), csv_field(run->env), putchar(','), csv_field(run->variant), putchar(',');
            csv_field(run->cases[j]->name), putchar(','), csv_field(run->cases[j]->group);
            printf(",%s,", conform_status_name(r->status));
            csv_number(r->nmse), putchar(','), csv_number(r->threshold), putchar(','), csv_number(r->max_abs), putchar(',');
            csv_number(r->nmse_fp32);
            printf(",%d,", r->bc);
            csv_field(r->variant);
            printf(",%.4f,", r->seconds);
            csv_field(r->message);
            putchar('\n');
        }
    }
}

void conform_report_finish(const conform_report *rep)
{
    int failed = 0, passed = 0, unsupported = 0, ran = 0, skipped = 0;
    for (int i = 0; i < rep->run_count; i++) {
        failed += rep->runs[i].failed;
        passed += rep->runs[i].passed;
        unsupported += rep->runs[i].unsupported;
        if (rep->runs[i].status) skipped++;
        else ran++;
    }
    /* a run in which no case passed checked nothing: a failure (a vector set whose every case the
     * devices call unsupported must not read as a pass) */
    const int nothing = failed == 0 && passed == 0;
    if (rep->format == CONFORM_JSON) print_json(rep, failed + nothing);
    else if (rep->format == CONFORM_CSV) print_csv(rep);
    else if (nothing)
        printf("\nconform: FAIL: no case passed over %d device/variant run%s (%d unsupported): nothing was checked\n", ran,
               ran == 1 ? "" : "s", unsupported);
    else if (failed)
        printf("\nconform: FAIL: %d of %d cases failed over %d device/variant run%s (rerun one with -o NAME --seed %llu -v)\n",
               failed, failed + passed, ran, ran == 1 ? "" : "s", (unsigned long long)rep->seed);
    else
        printf("\nconform: PASS: %d cases passed over %d device/variant run%s (%d unsupported, %d run%s skipped)\n", passed,
               ran, ran == 1 ? "" : "s", unsupported, skipped, skipped == 1 ? "" : "s");
}
