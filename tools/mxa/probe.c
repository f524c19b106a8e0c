/*
 * mxa probe [--json]: every backend (present or absent, with the reason),
 * every device with its capabilities and the kernel variant it would run.
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
 *                  "default_bc": int, "score": int } ]
 * }
 * Exit status 0 when at least one device is present.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static const struct {
    uint32_t bit;
    const char *name;
} cap_names[] = {
    {MXA_CAP_FP16, "fp16"},         {MXA_CAP_INT8, "int8"},           {MXA_CAP_INT_DOT, "int_dot"},
    {MXA_CAP_SUBGROUPS, "subgroups"}, {MXA_CAP_COOPMAT, "coopmat"},   {MXA_CAP_NATIVE_FP4, "native_fp4"},
    {MXA_CAP_TIMESTAMPS, "timestamps"}, {MXA_CAP_SIMD, "simd"},
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

static void print_json(const mxa_runtime *rt, int nb, int nd, const char *auto_id)
{
    printf("{\n  \"version\": ");
    json_string(mxa_version_string());
    printf(",\n  \"auto\": ");
    if (auto_id) json_string(auto_id);
    else printf("null");
    printf(",\n  \"backends\": [");
    for (int i = 0; i < nb; i++) {
        mxa_backend_info b;
        if (mxa_backend_get_info(rt, i, &b)) continue;
        printf("%s\n    {", i ? "," : "");
        json_key("name", b.name, 1);
        printf("\"built\": %s, \"present\": %s, \"device_count\": %d, ", b.built ? "true" : "false",
               b.present ? "true" : "false", b.device_count);
        json_key("reason", b.reason, 0);
        printf("}");
    }
    printf("\n  ],\n  \"devices\": [");
    for (int i = 0; i < nd; i++) {
        mxa_device_info d;
        if (mxa_device_get_info(rt, i, &d)) continue;
        printf("%s\n    {", i ? "," : "");
        json_key("id", d.id, 1);
        json_key("backend", d.backend, 1);
        printf("\"index\": %d, ", d.index);
        json_key("name", d.name, 1);
        json_key("vendor", d.vendor, 1);
        json_key("driver", d.driver, 1);
        printf("\"memory_bytes\": %" PRIu64 ", \"compute_units\": %" PRIu32 ", \"subgroup_min\": %" PRIu32
               ", \"subgroup_max\": %" PRIu32 ", \"shared_memory_bytes\": %" PRIu64 ",\n     \"caps\": [",
               d.memory_bytes, d.compute_units, d.subgroup_min, d.subgroup_max, d.shared_memory_bytes);
        int first = 1;
        for (int c = 0; c < CLI_COUNT(cap_names); c++)
            if (d.caps & cap_names[c].bit) {
                printf("%s", first ? "" : ", ");
                json_string(cap_names[c].name);
                first = 0;
            }
        printf("], ");
        json_key("capabilities", d.capabilities, 1);
        printf("\n     ");
        json_key("variant", d.variant, 1);
        json_key("variant_reason", d.variant_reason, 1);
        printf("\"default_bc\": %d, \"score\": %d}", d.default_bc, d.score);
    }
    printf("\n  ]\n}\n");
}

static void print_text(const mxa_runtime *rt, int nb, int nd, const char *auto_id)
{
    printf("mxa %s\n\nbackends:\n", mxa_version_string());
    for (int i = 0; i < nb; i++) {
        mxa_backend_info b;
        if (mxa_backend_get_info(rt, i, &b)) continue;
        if (b.present && b.reason[0]) printf("  %-8s present  %s\n", b.name, b.reason);
        else if (b.present) printf("  %-8s present  %d device%s\n", b.name, b.device_count, b.device_count == 1 ? "" : "s");
        else
            printf("  %-8s absent   %s\n", b.name, b.reason[0] ? b.reason : "no device");
    }
    printf("\ndevices:%s\n", nd ? "" : " none");
    for (int i = 0; i < nd; i++) {
        mxa_device_info d;
        if (mxa_device_get_info(rt, i, &d)) continue;
        const int is_auto = auto_id && strcmp(auto_id, d.id) == 0;
        printf("  %-10s %s%s\n", d.id, d.name, is_auto ? "   <- auto" : "");
        printf("             vendor %s, driver %s", d.vendor, d.driver);
        if (d.compute_units) printf(", %" PRIu32 " compute units", d.compute_units);
        if (d.memory_bytes) printf(", %.1f GiB", (double)d.memory_bytes / (1024.0 * 1024.0 * 1024.0));
        if (d.shared_memory_bytes) printf(", %" PRIu64 " KiB shared", d.shared_memory_bytes / 1024);
        printf(", subgroup %" PRIu32 "..%" PRIu32 "\n", d.subgroup_min, d.subgroup_max);
        printf("             capabilities: %s\n", d.capabilities[0] ? d.capabilities : "(none)");
        printf("             variant: %s, Bc %d, score %d: %s\n", d.variant, d.default_bc, d.score,
               d.variant_reason);
    }
}

int cmd_probe(int argc, char **argv)
{
    cli_option options[] = {
        {"--json", NULL, "print JSON (stable keys, documented in tools/mxa/probe.c) instead of text", NULL},
    };
    cli_spec spec = {"probe", "[--json]",
                     "Lists every backend this build knows (present, or absent with the reason) and every\n"
                     "device: capabilities, the kernel variant mxa would run and why, and which device\n"
                     "'auto' picks. Exits 0 when at least one device is present.",
                     options, CLI_COUNT(options), 0, 0, {NULL}, 0};
    int rc = cli_parse(&spec, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;

    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_status st;
    int nb = 0, nd = 0;
    char auto_id[32] = "";
    if ((st = mxa_runtime_create(NULL, &rt))) return cli_library_error("runtime", st);
    if ((st = mxa_backend_count(rt, &nb)) || (st = mxa_device_count(rt, &nd))) {
        rc = cli_library_error("probe", st);
        goto out;
    }
    /* Opening "auto" is the only way to honour MXA_DEVICE exactly as attention will. */
    if (nd && mxa_device_open(rt, "auto", &dev) == MXA_OK) {
        mxa_device_info info;
        if (mxa_device_info_of(dev, &info) == MXA_OK) snprintf(auto_id, sizeof auto_id, "%s", info.id);
        mxa_device_close(dev);
    }
    if (options[0].value) print_json(rt, nb, nd, auto_id[0] ? auto_id : NULL);
    else print_text(rt, nb, nd, auto_id[0] ? auto_id : NULL);
    if (!nd) {
        cli_error("probe: no device is present");
        rc = CLI_FAIL;
    }
out:
    mxa_runtime_destroy(rt);
    return rc;
}
