/*
 * A small SVG writer for the analysis figures: line plots (linear or log y),
 * overlaid histograms and bar charts, with axes, ticks, a legend and vertical
 * marker lines. Self-contained SVG 1.1 that any browser shows. Files are
 * written completely or not at all (a temporary file, then a rename).
 */
#ifndef MXA_TOOLS_SVG_H
#define MXA_TOOLS_SVG_H

#include <stddef.h>

typedef struct svg_series {
    const char *label;
    const double *x, *y; /* n points; non-finite y values break the line */
    int n;
} svg_series;

typedef struct svg_marker {
    double x;
    const char *label;
} svg_marker;

typedef struct svg_axes {
    const char *title, *xlabel, *ylabel;
    int log_y; /* base-10 logarithmic y axis (values <= 0 are skipped) */
} svg_axes;

/* Line plot of `ns` series with vertical markers. Returns 0, or -1 with one
 * line in err. */
int svg_line_plot(const char *path, const svg_axes *axes, const svg_series *series, int ns,
                  const svg_marker *markers, int nm, char *err, size_t err_size);

/* Overlaid histograms: series i has counts[i][0..nbins) over equal bins of
 * [lo, hi) (only y of each svg_series is read, n must be nbins). */
int svg_histogram(const char *path, const svg_axes *axes, double lo, double hi, int nbins,
                  const svg_series *series, int ns, const svg_marker *markers, int nm, char *err,
                  size_t err_size);

/* One bar per label. */
int svg_bars(const char *path, const svg_axes *axes, const char *const *labels, const double *values, int n,
             char *err, size_t err_size);

#endif
