/* The analysis figures as SVG (see svg.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "svg.h"

enum { W = 760, H = 480, LEFT = 84, RIGHT = 24, TOP = 44, BOTTOM = 78 };

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf"};
#define PALETTE(i) palette[(i) % 8]

/* ------------------------------------------------------------ text buffer */

typedef struct sbuf {
    char *data;
    size_t len, cap;
    int failed;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->data ? b->data + b->len : NULL, b->data ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if (b->data && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
        char *p = realloc(b->data, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
}

/* Text content with &, < and > escaped. */
static void sb_text(sbuf *b, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '&') sb_printf(b, "&amp;");
        else if (*s == '<') sb_printf(b, "&lt;");
        else if (*s == '>') sb_printf(b, "&gt;");
        else sb_printf(b, "%c", *s);
    }
}

/* All or nothing, links and devices as every output of the CLI (outfile.h). */
static int save(const char *path, sbuf *b, char *err, size_t err_size)
{
    int rc = -1;
    if (b->failed) snprintf(err, err_size, "out of memory");
    else rc = outfile_write_whole(path, b->data, b->len, err, err_size);
    free(b->data);
    return rc;
}

/* ------------------------------------------------------------------ axes */

typedef struct frame {
    double x0, x1, y0, y1; /* data range (log10 values when log_y) */
    int log_y;
} frame;

static double px(const frame *f, double x) { return LEFT + (x - f->x0) / (f->x1 - f->x0) * (W - LEFT - RIGHT); }

static double py(const frame *f, double y)
{
    if (f->log_y) y = log10(y);
    return H - BOTTOM - (y - f->y0) / (f->y1 - f->y0) * (H - TOP - BOTTOM);
}

/* A 1, 2 or 5 times 10^k step giving about `want` intervals over [lo, hi]. */
static double nice_step(double lo, double hi, int want)
{
    double raw = (hi - lo) / want, p = pow(10.0, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1.0 : m < 3.5 ? 2.0 : m < 7.5 ? 5.0 : 10.0) * p;
}

static void widen(double *lo, double *hi)
{
    if (!(*hi > *lo)) {
        double c = *lo, w = fabs(c) > 0 ? fabs(c) * 0.05 : 1.0;
        *lo = c - w;
        *hi = c + w;
    }
}

static void begin(sbuf *b, const svg_axes *a, const frame *f, int x_ticks)
{
    sb_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
                 "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
              W, H, W, H);
    sb_printf(b, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">", W / 2);
    sb_text(b, a->title);
    sb_printf(b, "</text>\n");
    /* y grid and ticks */
    if (f->log_y) {
        for (double e = ceil(f->y0); e <= f->y1 + 1e-9; e += 1.0) {
            double y = H - BOTTOM - (e - f->y0) / (f->y1 - f->y0) * (H - TOP - BOTTOM);
            sb_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                         "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">1e%d</text>\n",
                      LEFT, W - RIGHT, y, y, LEFT - 6, y + 4, (int)e);
        }
    } else {
        double step = nice_step(f->y0, f->y1, 6);
        for (double t = ceil(f->y0 / step) * step; t <= f->y1 + step * 1e-9; t += step) {
            double y = py(f, t);
            sb_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                         "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.6g</text>\n",
                      LEFT, W - RIGHT, y, y, LEFT - 6, y + 4, fabs(t) < step * 1e-9 ? 0.0 : t);
        }
    }
    if (x_ticks) {
        double step = nice_step(f->x0, f->x1, 8);
        for (double t = ceil(f->x0 / step) * step; t <= f->x1 + step * 1e-9; t += step) {
            double x = px(f, t);
            sb_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#eee\"/>"
                         "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.6g</text>\n",
                      x, x, TOP, H - BOTTOM, x, H - BOTTOM + 16, fabs(t) < step * 1e-9 ? 0.0 : t);
        }
    }
    sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", LEFT, TOP,
              W - LEFT - RIGHT, H - TOP - BOTTOM);
    sb_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (LEFT + W - RIGHT) / 2, H - 24);
    sb_text(b, a->xlabel);
    sb_printf(b, "</text>\n<text transform=\"translate(20 %d) rotate(-90)\" text-anchor=\"middle\">",
              (TOP + H - BOTTOM) / 2);
    sb_text(b, a->ylabel);
    sb_printf(b, "</text>\n");
}

static void markers_and_legend(sbuf *b, const frame *f, const svg_marker *m, int nm, const svg_series *s, int ns)
{
    for (int i = 0; i < nm; i++) {
        if (m[i].x < f->x0 || m[i].x > f->x1) continue;
        double x = px(f, m[i].x);
        const int right = x > W - RIGHT - 60; /* near the right edge: label to the left */
        sb_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#444\" stroke-dasharray=\"5 4\"/>"
                     "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"%s\">",
                  x, x, TOP, H - BOTTOM, right ? x - 4 : x + 4, H - BOTTOM - 8 - 14 * (i % 2), right ? "end" : "start");
        sb_text(b, m[i].label);
        sb_printf(b, "</text>\n");
    }
    if (ns <= 0) return;
    int width = 0;
    for (int i = 0; i < ns; i++) {
        int len = s[i].label ? (int)strlen(s[i].label) : 0;
        if (len > width) width = len;
    }
    const int bw = 36 + 7 * width, bx = W - RIGHT - bw - 8, by = TOP + 8;
    sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"white\" fill-opacity=\"0.85\" "
                 "stroke=\"#aaa\"/>\n",
              bx, by, bw, 8 + 16 * ns);
    for (int i = 0; i < ns; i++) {
        const int y = by + 16 + 16 * i;
        sb_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>"
                     "<text x=\"%d\" y=\"%d\" font-size=\"11\">",
                  bx + 6, bx + 26, y - 4, y - 4, PALETTE(i), bx + 30, y);
        sb_text(b, s[i].label);
        sb_printf(b, "</text>\n");
    }
}

/* ------------------------------------------------------------- the plots */

int svg_line_plot(const char *path, const svg_axes *axes, const svg_series *s, int ns, const svg_marker *m,
                  int nm, char *err, size_t err_size)
{
    frame f = {INFINITY, -INFINITY, INFINITY, -INFINITY, axes->log_y};
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < s[i].n; j++) {
            double x = s[i].x[j], y = s[i].y[j];
            if (!isfinite(x) || !isfinite(y) || (f.log_y && y <= 0)) continue;
            if (f.log_y) y = log10(y);
            f.x0 = fmin(f.x0, x);
            f.x1 = fmax(f.x1, x);
            f.y0 = fmin(f.y0, y);
            f.y1 = fmax(f.y1, y);
        }
    if (!isfinite(f.x0) || !isfinite(f.y0)) {
        snprintf(err, err_size, "nothing to plot");
        return -1;
    }
    widen(&f.x0, &f.x1);
    widen(&f.y0, &f.y1);
    const double pad = (f.y1 - f.y0) * 0.06;
    f.y0 -= pad;
    f.y1 += pad;
    if (f.log_y) {
        f.y0 = floor(f.y0);
        f.y1 = ceil(f.y1);
    }
    sbuf b = {0};
    begin(&b, axes, &f, 1);
    for (int i = 0; i < ns; i++) {
        int open = 0;
        for (int j = 0; j < s[i].n; j++) {
            double x = s[i].x[j], y = s[i].y[j];
            if (!isfinite(x) || !isfinite(y) || (f.log_y && y <= 0)) {
                if (open) sb_printf(&b, "\"/>\n");
                open = 0;
                continue;
            }
            if (!open)
                sb_printf(&b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" points=\"", PALETTE(i));
            sb_printf(&b, "%.2f,%.2f ", px(&f, x), py(&f, y));
            open = 1;
        }
        if (open) sb_printf(&b, "\"/>\n");
    }
    markers_and_legend(&b, &f, m, nm, s, ns);
    sb_printf(&b, "</svg>\n");
    return save(path, &b, err, err_size);
}

int svg_histogram(const char *path, const svg_axes *axes, double lo, double hi, int nbins, const svg_series *s,
                  int ns, const svg_marker *m, int nm, char *err, size_t err_size)
{
    if (!(hi > lo) || nbins <= 0) {
        snprintf(err, err_size, "empty histogram range");
        return -1;
    }
    frame f = {lo, hi, 0.0, 0.0, 0};
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < nbins && j < s[i].n; j++)
            if (isfinite(s[i].y[j])) f.y1 = fmax(f.y1, s[i].y[j]);
    f.y1 = f.y1 > 0 ? f.y1 * 1.08 : 1.0;
    sbuf b = {0};
    begin(&b, axes, &f, 1);
    const double w = (hi - lo) / nbins;
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < nbins && j < s[i].n; j++) {
            if (!(s[i].y[j] > 0)) continue;
            double x0 = px(&f, lo + j * w), x1 = px(&f, lo + (j + 1) * w), y = py(&f, s[i].y[j]);
            sb_printf(&b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
                          "fill-opacity=\"0.45\" stroke=\"%s\" stroke-width=\"0.6\"/>\n",
                      x0, y, fmax(x1 - x0, 0.5), H - BOTTOM - y, PALETTE(i), PALETTE(i));
        }
    markers_and_legend(&b, &f, m, nm, s, ns);
    sb_printf(&b, "</svg>\n");
    return save(path, &b, err, err_size);
}

int svg_bars(const char *path, const svg_axes *axes, const char *const *labels, const double *v, int n, char *err,
             size_t err_size)
{
    frame f = {0.0, n > 0 ? n : 1, 0.0, 0.0, axes->log_y};
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i]) || (f.log_y && v[i] <= 0)) continue;
        double y = f.log_y ? log10(v[i]) : v[i];
        lo = fmin(lo, y);
        hi = fmax(hi, y);
    }
    if (!isfinite(lo)) {
        snprintf(err, err_size, "nothing to plot");
        return -1;
    }
    if (f.log_y) {
        f.y0 = floor(lo);
        f.y1 = ceil(hi) > floor(lo) ? ceil(hi) : floor(lo) + 1;
    } else {
        f.y0 = fmin(0.0, lo);
        f.y1 = hi > f.y0 ? hi * 1.08 : f.y0 + 1.0;
    }
    sbuf b = {0};
    begin(&b, axes, &f, 0);
    const double base = f.log_y ? H - BOTTOM : py(&f, 0.0);
    for (int i = 0; i < n; i++) {
        double x0 = px(&f, i + 0.15), x1 = px(&f, i + 0.85);
        if (isfinite(v[i]) && !(f.log_y && v[i] <= 0)) {
            double y = py(&f, v[i]);
            sb_printf(&b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n"
                          "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"10\">%.3g</text>\n",
                      x0, fmin(y, base), x1 - x0, fabs(base - y), PALETTE(i), (x0 + x1) / 2, fmin(y, base) - 4, v[i]);
        }
        sb_printf(&b, "<text transform=\"translate(%.2f %d) rotate(-25)\" text-anchor=\"end\" font-size=\"11\">",
                  (x0 + x1) / 2, H - BOTTOM + 14);
        sb_text(&b, labels[i]);
        sb_printf(&b, "</text>\n");
    }
    sb_printf(&b, "</svg>\n");
    return save(path, &b, err, err_size);
}
