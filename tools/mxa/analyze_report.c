/* Result tables of mxa analyze: text, CSV and JSON (see analyze.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "outfile.h"

#define AN_MAX_TABLES 16
#define AN_MAX_COLS 24

struct an_table {
    char name[64], title[160];
    int print;
    char *columns; /* tab-separated */
    char **rows;   /* tab-separated */
    int nrows, cap;
};

struct an_report {
    char analysis[32];
    an_table tables[AN_MAX_TABLES];
    int ntables;
};

an_report *an_report_new(const char *analysis)
{
    an_report *r = calloc(1, sizeof *r);
    if (r) snprintf(r->analysis, sizeof r->analysis, "%s", analysis);
    return r;
}

void an_report_free(an_report *r)
{
    if (!r) return;
    for (int i = 0; i < r->ntables; i++) {
        for (int j = 0; j < r->tables[i].nrows; j++) free(r->tables[i].rows[j]);
        free(r->tables[i].rows);
        free(r->tables[i].columns);
    }
    free(r);
}

an_table *an_table_add(an_report *r, const char *name, const char *title, int print, const char *columns)
{
    if (!r || r->ntables == AN_MAX_TABLES) return NULL;
    an_table *t = &r->tables[r->ntables];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->title, sizeof t->title, "%s", title);
    t->print = print;
    if (!(t->columns = strdup(columns))) return NULL;
    r->ntables++;
    return t;
}

int an_row(an_table *t, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (t->nrows == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        char **rows = realloc(t->rows, (size_t)cap * sizeof *rows);
        if (!rows) goto oom;
        t->rows = rows;
        t->cap = cap;
    }
    if (!(t->rows[t->nrows] = strdup(line))) goto oom;
    t->nrows++;
    return CLI_OK;
oom:
    cli_error("analyze: out of memory");
    return CLI_FAIL;
}

/* Splits a tab-separated copy into at most AN_MAX_COLS cells. */
static int cells(char *line, char **out)
{
    int n = 0;
    for (char *p = line; n < AN_MAX_COLS;) {
        out[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = '\0';
        p = tab + 1;
    }
    return n;
}

void an_report_print(const an_report *r)
{
    for (int i = 0; i < r->ntables; i++) {
        const an_table *t = &r->tables[i];
        if (!t->print) continue;
        int width[AN_MAX_COLS] = {0}, ncols;
        char head[2048], line[2048], *c[AN_MAX_COLS];
        snprintf(head, sizeof head, "%s", t->columns);
        ncols = cells(head, c);
        for (int k = 0; k < ncols; k++) width[k] = (int)strlen(c[k]);
        for (int j = 0; j < t->nrows; j++) {
            snprintf(line, sizeof line, "%s", t->rows[j]);
            int n = cells(line, c);
            for (int k = 0; k < n && k < AN_MAX_COLS; k++)
                if ((int)strlen(c[k]) > width[k]) width[k] = (int)strlen(c[k]);
        }
        printf("\n%s\n", t->title);
        for (int j = -1; j < t->nrows; j++) {
            snprintf(line, sizeof line, "%s", j < 0 ? t->columns : t->rows[j]);
            int n = cells(line, c);
            printf(" ");
            for (int k = 0; k < n; k++) printf(" %-*s", width[k], c[k]);
            printf("\n");
        }
    }
}

/* Formats `fill(f)` in memory, then writes it as every output of the CLI
 * (outfile.h): completely or not at all. */
static int write_atomic(const char *path, const an_report *r, void (*fill)(FILE *, const an_report *))
{
    char *data = NULL, err[256];
    size_t size = 0;
    FILE *f = open_memstream(&data, &size);
    if (!f) {
        cli_error("%s: out of memory", path);
        return CLI_FAIL;
    }
    fill(f, r);
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        free(data);
        cli_error("%s: out of memory", path);
        return CLI_FAIL;
    }
    const int rc = outfile_write_whole(path, data, size, err, sizeof err);
    free(data);
    if (rc) {
        cli_error("%s: %s", path, err);
        return CLI_FAIL;
    }
    return CLI_OK;
}

static void csv_cell(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_line(FILE *f, const char *table, const char *tabbed)
{
    char line[2048], *c[AN_MAX_COLS];
    snprintf(line, sizeof line, "%s", tabbed);
    int n = cells(line, c);
    csv_cell(f, table);
    for (int k = 0; k < n; k++) {
        fputc(',', f);
        csv_cell(f, c[k]);
    }
    fputc('\n', f);
}

static void fill_csv(FILE *f, const an_report *r)
{
    for (int i = 0; i < r->ntables; i++) {
        const an_table *t = &r->tables[i];
        csv_line(f, "table", t->columns);
        for (int j = 0; j < t->nrows; j++) csv_line(f, t->name, t->rows[j]);
    }
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

/* 1 if s is a number in JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int json_number(const char *s)
{
    if (*s == '-') s++;
    if (*s == '0') s++;
    else if (*s >= '1' && *s <= '9') while (*s >= '0' && *s <= '9') s++;
    else return 0;
    if (*s == '.') {
        if (!(*++s >= '0' && *s <= '9')) return 0;
        while (*s >= '0' && *s <= '9') s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!(*s >= '0' && *s <= '9')) return 0;
        while (*s >= '0' && *s <= '9') s++;
    }
    return *s == '\0';
}

static void json_value(FILE *f, const char *s)
{
    if (json_number(s[0] == '+' ? s + 1 : s)) {
        fputs(s[0] == '+' ? s + 1 : s, f);
        return;
    }
    char *end;
    double v = strtod(s, &end);
    if (*s && *end == '\0' && end != s && !isfinite(v)) fputs("null", f); /* nan, inf */
    else json_string(f, s);
}

static void fill_json(FILE *f, const an_report *r)
{
    fprintf(f, "{\"analysis\": ");
    json_string(f, r->analysis);
    fprintf(f, ", \"tables\": {");
    for (int i = 0; i < r->ntables; i++) {
        const an_table *t = &r->tables[i];
        char head[2048], line[2048], *hc[AN_MAX_COLS], *c[AN_MAX_COLS];
        snprintf(head, sizeof head, "%s", t->columns);
        const int nh = cells(head, hc);
        fprintf(f, "%s\n  ", i ? "," : "");
        json_string(f, t->name);
        fprintf(f, ": [");
        for (int j = 0; j < t->nrows; j++) {
            snprintf(line, sizeof line, "%s", t->rows[j]);
            const int n = cells(line, c);
            fprintf(f, "%s\n    {", j ? "," : "");
            for (int k = 0; k < n && k < nh; k++) {
                fprintf(f, "%s", k ? ", " : "");
                json_string(f, hc[k]);
                fprintf(f, ": ");
                json_value(f, c[k]);
            }
            fprintf(f, "}");
        }
        fprintf(f, "]");
    }
    fprintf(f, "\n}}\n");
}

int an_report_write_csv(const an_report *r, const char *path)
{
    return write_atomic(path, r, fill_csv);
}

int an_report_write_json(const an_report *r, const char *path)
{
    return write_atomic(path, r, fill_json);
}
