/*
 * mxa analyze uos [TENSOR.npy ...]: Universal Optimal Scaling (paper §4.1,
 * App. B-D, §5.5.1).
 *
 * Analytic part, from the E2M1 grid alone: E(x) = int_0^x (v - Pi(v))^2 dv is
 * a cubic on each rounding interval, so Delta(q) = E(q) - 8 E(q/2) is a
 * quadratic on each piece of [6, 8] and its sign change is found exactly;
 * J(q) = int_{q/2}^{q} D(x) g(x) dx, D = E/x^3, g(x) = H(log2 x)/(x ln 2), is
 * integrated by Gauss-Legendre on the pieces where D is smooth, for a
 * log-uniform law and several wrapped (periodized) densities H (Fig. 2).
 *
 * Empirical part, for each tensor: quantization MSE through the library's
 * format core for q = 6.00, 6.05, ..., 8.00 (blocks of 32 along the last axis,
 * or along the tokens with --axis tokens, as attention quantizes V), where
 * the minimum falls (Table 4), and per 32-block which of the two candidate
 * scales wins as a function of the block's OCP-normalized maximum.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "svg.h"

#define NQ 41           /* q = 6.00 ... 8.00 in steps of 0.05 */
#define CURVE 201       /* J(q) sampled every 0.01 */
#define XBINS 20        /* block preference bins over (6, 8] */
#define MAX_TENSORS 256
#define LN2 0.69314718055994530942
#define PI 3.14159265358979323846

/* ------------------------------------------------------------ the grid */

static const double grid[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
static const double cut[8] = {0.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0}; /* interval k starts at cut[k] */

static int interval(double x)
{
    int k = 0;
    while (k < 7 && x >= cut[k + 1]) k++;
    return k;
}

/* E at the start of interval k: the exact sum of the earlier intervals. */
static double e_start(int k)
{
    double e = 0.0;
    for (int i = 0; i < k; i++) e += (pow(cut[i + 1] - grid[i], 3) - pow(cut[i] - grid[i], 3)) / 3.0;
    return e;
}

static double e_of(double x)
{
    const int k = interval(x);
    return e_start(k) + (pow(x - grid[k], 3) - pow(cut[k] - grid[k], 3)) / 3.0;
}

static double d_of(double x) { return e_of(x) / (x * x * x); }

/* Delta(q) = a q^2 + b q + c where q lies in interval k1 and q/2 in k2. */
typedef struct piece {
    double lo, hi, a, b, c;
} piece;

static piece delta_piece(double lo, double hi)
{
    const double mid = 0.5 * (lo + hi);
    const int k1 = interval(mid), k2 = interval(mid / 2);
    const double r = grid[k1], s = 2.0 * grid[k2];
    /* E(q) = C1 + ((q-r)^3 - (t1-r)^3)/3;  8E(q/2) = 8C2 + ((q-s)^3 - 8(t2-s/2)^3)/3 */
    const double k = e_start(k1) - pow(cut[k1] - r, 3) / 3.0 - 8.0 * e_start(k2) + 8.0 * pow(cut[k2] - s / 2, 3) / 3.0;
    piece p = {lo, hi, s - r, r * r - s * s, (s * s * s - r * r * r) / 3.0 + k};
    return p;
}

static double piece_at(const piece *p, double q) { return (p->a * q + p->b) * q + p->c; }

/* Roots of the piece's polynomial inside [lo, hi]; returns the count. */
static int piece_roots(const piece *p, double roots[2])
{
    int n = 0;
    double cand[2];
    int nc = 0;
    if (fabs(p->a) < 1e-12) {
        if (fabs(p->b) > 1e-12) cand[nc++] = -p->c / p->b;
    } else {
        const double disc = p->b * p->b - 4 * p->a * p->c;
        if (disc >= 0) {
            const double sq = sqrt(disc), t = -0.5 * (p->b + (p->b >= 0 ? sq : -sq));
            cand[nc++] = t / p->a;
            if (t != 0) cand[nc++] = p->c / t;
        }
    }
    for (int i = 0; i < nc; i++)
        if (cand[i] >= p->lo - 1e-12 && cand[i] <= p->hi + 1e-12) roots[n++] = cand[i];
    return n;
}

/* ------------------------------------------------------------ densities */

typedef struct density {
    const char *name;
    int kind; /* 0 uniform, 1 wrapped normal, 2 von Mises, 3 two von Mises */
    double mu, sigma, kappa, mu2, kappa2, w;
} density;

static const density densities[] = {
    {"log-uniform (H = 1)", 0, 0, 0, 0, 0, 0, 0},
    {"wrapped normal mu=0.30 sigma=0.15", 1, 0.30, 0.15, 0, 0, 0, 0},
    {"wrapped normal mu=0.85 sigma=0.25", 1, 0.85, 0.25, 0, 0, 0, 0},
    {"von Mises mu=0.50 kappa=3", 2, 0.50, 0, 3.0, 0, 0, 0},
    {"two von Mises 0.6(0.10,8)+0.4(0.60,4)", 3, 0.10, 0, 8.0, 0.60, 4.0, 0.6},
};
#define NDENS ((int)(sizeof densities / sizeof densities[0]))

static double bessel_i0(double x)
{
    double sum = 1.0, term = 1.0;
    for (int k = 1; k < 60; k++) {
        term *= (x / (2.0 * k)) * (x / (2.0 * k));
        sum += term;
    }
    return sum;
}

static double von_mises(double t, double mu, double kappa)
{
    return exp(kappa * cos(2 * PI * (t - mu))) / bessel_i0(kappa);
}

/* The periodized density H(t) (period 1, unit mean over a period). */
static double h_of(const density *d, double t)
{
    switch (d->kind) {
    case 1: {
        double s = 0.0;
        for (int k = -12; k <= 12; k++) {
            const double z = (t + k - d->mu) / d->sigma;
            s += exp(-0.5 * z * z);
        }
        return s / (d->sigma * sqrt(2 * PI));
    }
    case 2: return von_mises(t, d->mu, d->kappa);
    case 3: return d->w * von_mises(t, d->mu, d->kappa) + (1 - d->w) * von_mises(t, d->mu2, d->kappa2);
    default: return 1.0;
    }
}

/* J(q) by 8-point Gauss-Legendre on 64 panels of each piece where D is smooth. */
static double j_of(const density *d, double q)
{
    static const double gx[4] = {0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363};
    static const double gw[4] = {0.3626837833783620, 0.3137066386232910, 0.2223810344533745, 0.1012285362903763};
    double edges[10], total = 0.0;
    int ne = 0;
    edges[ne++] = q / 2;
    for (int k = 1; k < 8; k++)
        if (cut[k] > q / 2 && cut[k] < q) edges[ne++] = cut[k];
    edges[ne++] = q;
    for (int e = 0; e + 1 < ne; e++) {
        const int panels = 64;
        const double w = (edges[e + 1] - edges[e]) / panels;
        for (int p = 0; p < panels; p++) {
            const double c = edges[e] + (p + 0.5) * w, hw = 0.5 * w;
            for (int i = 0; i < 4; i++)
                for (int sgn = -1; sgn <= 1; sgn += 2) {
                    const double x = c + sgn * hw * gx[i];
                    total += gw[i] * hw * d_of(x) * h_of(d, log2(x)) / (x * LN2);
                }
        }
    }
    return total;
}

/* Golden-section minimum of J over [6, 8] (J is unimodal there, §4.1). */
static double j_argmin(const density *d)
{
    const double g = 0.5 * (sqrt(5.0) - 1.0);
    double a = 6.0, b = 8.0, x1 = b - g * (b - a), x2 = a + g * (b - a), f1 = j_of(d, x1), f2 = j_of(d, x2);
    while (b - a > 1e-7) {
        if (f1 < f2) {
            b = x2; x2 = x1; f2 = f1; x1 = b - g * (b - a); f1 = j_of(d, x1);
        } else {
            a = x1; x1 = x2; f1 = f2; x2 = a + g * (b - a); f2 = j_of(d, x2);
        }
    }
    return 0.5 * (a + b);
}

/* ------------------------------------------------------- analytic part */

static int analytic(an_report *r, const char *svg_path, double *q_star)
{
    an_table *td = an_table_add(r, "delta", "Delta(q) = E(q) - 8 E(q/2) on [6, 8], exact from the E2M1 grid (App. B)", 1,
                                "q from\tq to\tDelta(q)\tq^2 coef\tq coef\tconstant\troots in piece\tmax |poly - direct|");
    an_table *tm = an_table_add(r, "objective", "UOS objective J(q) = E[D(X_q)] under several block-maximum laws (Fig. 2)", 1,
                                "law of log2 M\targmin J (numeric)\tJ(6) TFS\tJ(7.25) UOS\tJ(8) OCP\tJ(6)/J(7.25)\tJ(8)/J(7.25)");
    an_table *tc = an_table_add(r, "curves", "J(q) curves", 0, "law\tq\tJ\tJ/J(7.25)");
    if (!td || !tm || !tc) {
        cli_error("analyze: out of memory");
        return CLI_FAIL;
    }
    /* Pieces of [6, 8]: split where q or q/2 crosses a rounding threshold. */
    double bp[20];
    int nb = 0;
    bp[nb++] = 6.0;
    for (int k = 1; k < 8; k++) {
        if (cut[k] > 6.0 && cut[k] < 8.0) bp[nb++] = cut[k];
        if (2 * cut[k] > 6.0 && 2 * cut[k] < 8.0) bp[nb++] = 2 * cut[k];
    }
    bp[nb++] = 8.0;
    for (int i = 1; i < nb; i++) /* insertion sort */
        for (int j = i; j > 0 && bp[j] < bp[j - 1]; j--) {
            double t = bp[j]; bp[j] = bp[j - 1]; bp[j - 1] = t;
        }
    *q_star = NAN;
    for (int i = 0; i + 1 < nb; i++) {
        piece p = delta_piece(bp[i], bp[i + 1]);
        double roots[2], worst = 0.0;
        for (int s = 0; s <= 16; s++) {
            const double q = p.lo + (p.hi - p.lo) * s / 16.0;
            worst = fmax(worst, fabs(piece_at(&p, q) - (e_of(q) - 8 * e_of(q / 2))));
        }
        const int nr = piece_roots(&p, roots);
        char rtext[96] = "none", form[96];
        for (int k = 0; k < nr; k++) {
            /* the minimum: Delta changes from negative to positive */
            const int rising = piece_at(&p, roots[k] - 1e-6) < 0 && piece_at(&p, roots[k] + 1e-6) > 0;
            if (rising) *q_star = roots[k];
            snprintf(rtext + (k ? strlen(rtext) : 0), sizeof rtext - (k ? strlen(rtext) : 0), "%s%.10g%s",
                     k ? ", " : "", roots[k], rising ? " (- to +: minimum)" : "");
        }
        if (fabs(p.a) < 1e-12 && fabs(p.b) < 1e-12) snprintf(form, sizeof form, "constant %.10g", p.c);
        else snprintf(form, sizeof form, "quadratic");
        if (an_row(td, "%g\t%g\t%s\t%.10g\t%.10g\t%.10g\t%s\t%.2e", p.lo, p.hi, form, p.a, p.b, p.c, rtext, worst))
            return CLI_FAIL;
    }
    /* J(q) for each law. */
    static double qs[CURVE], js[NDENS][CURVE];
    svg_series series[NDENS];
    for (int d = 0; d < NDENS; d++) {
        const double jstar = j_of(&densities[d], 7.25);
        for (int i = 0; i < CURVE; i++) {
            qs[i] = 6.0 + 0.01 * i;
            const double j = j_of(&densities[d], qs[i]);
            js[d][i] = j / jstar;
            if (an_row(tc, "%s\t%.2f\t%.10e\t%.10f", densities[d].name, qs[i], j, j / jstar)) return CLI_FAIL;
        }
        const double j6 = j_of(&densities[d], 6.0), j8 = j_of(&densities[d], 8.0);
        if (an_row(tm, "%s\t%.5f\t%.6e\t%.6e\t%.6e\t%.5f\t%.5f", densities[d].name, j_argmin(&densities[d]), j6, jstar,
                   j8, j6 / jstar, j8 / jstar))
            return CLI_FAIL;
        series[d] = (svg_series){densities[d].name, qs, js[d], CURVE};
    }
    if (svg_path) {
        char err[256];
        svg_axes ax = {"UOS objective J(q) under several block-maximum laws (minimum at q = 7.25)",
                       "q (Q_max of the ceiling rule)", "J(q) / J(7.25)", 0};
        svg_marker m[3] = {{6.0, "TFS"}, {7.25, "UOS 7.25"}, {8.0, "OCP"}};
        if (svg_line_plot(svg_path, &ax, series, NDENS, m, 3, err, sizeof err)) {
            cli_error("%s: %s", svg_path, err);
            return CLI_FAIL;
        }
    }
    return CLI_OK;
}

/* ------------------------------------------------------ empirical part */

typedef struct tensor_result {
    char name[128], group[32];
    double mse[NQ], mse_ocp;
    int64_t blocks;
} tensor_result;

typedef struct block_bins {
    int64_t keep[XBINS], halve[XBINS], tie[XBINS], no_choice;
} block_bins;

static double q_at(int i) { return (double)(float)(6.0 + 0.05 * i); }

/* Rows of the matrix to quantize: the last axis, or the tokens (--axis tokens). */
static float *as_matrix(const an_tensor *t, int tokens, int hadamard, int64_t *rows, int64_t *cols)
{
    const int64_t bh = t->shape[0] * t->shape[1], n = t->shape[2], d = t->shape[3];
    float *m = malloc((size_t)an_numel(t) * sizeof(float));
    if (!m) return NULL;
    memcpy(m, t->data, (size_t)an_numel(t) * sizeof(float));
    if (hadamard)
        for (int64_t r = 0; r < bh * n; r++) an_hadamard(m + r * d, (int)d);
    if (!tokens) {
        *rows = bh * n;
        *cols = d;
        return m;
    }
    float *tr = malloc((size_t)an_numel(t) * sizeof(float));
    if (tr)
        for (int64_t h = 0; h < bh; h++)
            for (int64_t i = 0; i < n; i++)
                for (int64_t c = 0; c < d; c++) tr[(h * d + c) * n + i] = m[(h * n + i) * d + c];
    free(m);
    *rows = bh * d;
    *cols = n;
    return tr;
}

static void group_of(const char *stem, char *group, size_t size)
{
    size_t n = 0;
    while (stem[n] && stem[n] != '_' && stem[n] != '-' && !(stem[n] >= '0' && stem[n] <= '9')) n++;
    snprintf(group, size, "%.*s", (int)(n ? n : strlen(stem)), stem);
}

/* Squared error of each block (and the maximum, for the OCP run). */
static void block_errors(const float *x, const float *y, int64_t rows, int64_t cols, double *err)
{
    const int64_t nb = (cols + 31) / 32;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < nb; b++) {
            double s = 0.0;
            for (int64_t c = b * 32; c < cols && c < b * 32 + 32; c++) {
                const double e = (double)x[r * cols + c] - y[r * cols + c];
                s += e * e;
            }
            err[r * nb + b] = s;
        }
}

static int empirical_one(mxa_device *dev, const an_tensor *t, int tokens, int hadamard, tensor_result *res,
                         block_bins *bins)
{
    int64_t rows, cols;
    int rc = CLI_FAIL;
    float *m = as_matrix(t, tokens, hadamard, &rows, &cols), *y = NULL;
    const int64_t nb = (cols + 31) / 32;
    double *e_ocp = NULL, *e_six = NULL, *e_q = NULL;
    uint8_t *s_ocp = NULL;
    if (!m || !(y = malloc((size_t)(rows * cols) * sizeof(float))) || !(e_ocp = malloc((size_t)(rows * nb) * 8)) ||
        !(e_six = malloc((size_t)(rows * nb) * 8)) || !(e_q = malloc((size_t)(rows * nb) * 8)) ||
        !(s_ocp = malloc((size_t)(rows * nb)))) {
        cli_error("%s: out of memory", t->path);
        goto out;
    }
    res->blocks = rows * nb;
    const double count = (double)(rows * cols);
    for (int i = 0; i < NQ; i++) {
        mxa_rule rule = {MXA_RULE_CEIL, (float)q_at(i)};
        if (an_fake_quantize(dev, m, rows, cols, rule, y, NULL)) goto out;
        block_errors(m, y, rows, cols, i == 0 ? e_six : e_q);
        double sse = 0.0;
        for (int64_t b = 0; b < rows * nb; b++) sse += i == 0 ? e_six[b] : e_q[b];
        res->mse[i] = sse / count;
    }
    if (an_fake_quantize(dev, m, rows, cols, mxa_rule_ocp(), y, s_ocp)) goto out;
    block_errors(m, y, rows, cols, e_ocp);
    double sse = 0.0;
    for (int64_t b = 0; b < rows * nb; b++) sse += e_ocp[b];
    res->mse_ocp = sse / count;
    /* Per block: for q in [6, 8] the exponent is the OCP one (E-2) or one more
     * (E-1, halving), the latter iff the OCP-normalized maximum x > q. Only
     * blocks with x in (6, 8) have a choice: which candidate wins there? */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < nb; b++) {
            float mx = 0.0f;
            for (int64_t c = b * 32; c < cols && c < b * 32 + 32; c++) mx = fmaxf(mx, fabsf(m[r * cols + c]));
            const int64_t at = r * nb + b;
            const double x = mx > 0 ? ldexp(mx, 127 - (int)s_ocp[at]) : 0.0;
            if (!(x > 6.0) || s_ocp[at] == 0) {
                bins->no_choice++;
                continue;
            }
            int bin = (int)((x - 6.0) / (2.0 / XBINS));
            if (bin >= XBINS) bin = XBINS - 1;
            if (e_six[at] < e_ocp[at]) bins->halve[bin]++;
            else if (e_ocp[at] < e_six[at]) bins->keep[bin]++;
            else bins->tie[bin]++;
        }
    rc = CLI_OK;
out:
    free(m);
    free(y);
    free(e_ocp);
    free(e_six);
    free(e_q);
    free(s_ocp);
    return rc;
}

static const char *category(double q)
{
    if (q < 7.175) return "<=7.15";
    if (q < 7.225) return "7.20";
    if (q < 7.275) return "7.25";
    return ">=7.30";
}

static int empirical_report(an_report *r, tensor_result *res, int nt, const block_bins *bins, const char *svg_mse,
                            const char *svg_blocks)
{
    an_table *tq = an_table_add(r, "mse", "MSE vs q per tensor", 0, "tensor\tq\tmse\tmse/mse(7.25)");
    an_table *to = an_table_add(r, "tensors", "Where each tensor's MSE minimum falls (q = 6.00 ... 8.00 by 0.05)", 1,
                                "tensor\tblocks\targmin q\tcategory\tMSE(7.25)/min\tMSE(OCP)/MSE(7.25)\tMSE(TFS)/MSE(7.25)");
    an_table *t4 = an_table_add(r, "table4", "Per-tensor empirical optima (Table 4 layout), % of tensors", 1,
                                "group\ttensors\t<=7.15\t7.20\t7.25\t>=7.30");
    an_table *tb = an_table_add(r, "blocks",
                                "Per 32-block: which scale wins by OCP-normalized block maximum x (keep = 2^(E-2), halve = 2^(E-1))", 1,
                                "x from\tx to\tblocks\tkeep wins\thalve wins\tties\thalve share");
    if (!tq || !to || !t4 || !tb) {
        cli_error("analyze: out of memory");
        return CLI_FAIL;
    }
    const int i725 = 25;
    char groups[MAX_TENSORS][32];
    int ng = 0;
    static double qx[NQ], curves[8][NQ];
    int counts[8] = {0};
    for (int t = 0; t < nt; t++) {
        int best = 0;
        for (int i = 1; i < NQ; i++)
            if (res[t].mse[i] < res[t].mse[best]) best = i;
        int last = best;
        while (last + 1 < NQ && res[t].mse[last + 1] == res[t].mse[best]) last++;
        char argmin[48];
        if (last == best) snprintf(argmin, sizeof argmin, "%.2f", q_at(best));
        else snprintf(argmin, sizeof argmin, "%.2f..%.2f (tie)", q_at(best), q_at(last));
        if (an_row(to, "%s\t%lld\t%s\t%s\t%.6f\t%.4f\t%.4f", res[t].name, (long long)res[t].blocks, argmin,
                   category(q_at(best)), res[t].mse[i725] / res[t].mse[best], res[t].mse_ocp / res[t].mse[i725],
                   res[t].mse[0] / res[t].mse[i725]))
            return CLI_FAIL;
        for (int i = 0; i < NQ; i++)
            if (an_row(tq, "%s\t%.2f\t%.8e\t%.8f", res[t].name, q_at(i), res[t].mse[i], res[t].mse[i] / res[t].mse[i725]))
                return CLI_FAIL;
        int g = 0;
        while (g < ng && strcmp(groups[g], res[t].group) != 0) g++;
        if (g == ng) snprintf(groups[ng++], sizeof groups[0], "%s", res[t].group);
        if (g < 8) {
            for (int i = 0; i < NQ; i++) curves[g][i] += res[t].mse[i] / res[t].mse[i725];
            counts[g]++;
        }
    }
    for (int g = -1; g < ng; g++) { /* g = -1: all tensors */
        int n = 0, cat[4] = {0};
        for (int t = 0; t < nt; t++) {
            if (g >= 0 && strcmp(res[t].group, groups[g]) != 0) continue;
            int best = 0;
            for (int i = 1; i < NQ; i++)
                if (res[t].mse[i] < res[t].mse[best]) best = i;
            const double q = q_at(best);
            cat[q < 7.175 ? 0 : q < 7.225 ? 1 : q < 7.275 ? 2 : 3]++;
            n++;
        }
        if (n && an_row(t4, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f", g < 0 ? "all" : groups[g], n, 100.0 * cat[0] / n,
                        100.0 * cat[1] / n, 100.0 * cat[2] / n, 100.0 * cat[3] / n))
            return CLI_FAIL;
    }
    static double keep[XBINS], halve[XBINS];
    for (int b = 0; b < XBINS; b++) {
        const int64_t n = bins->keep[b] + bins->halve[b] + bins->tie[b];
        keep[b] = (double)bins->keep[b];
        halve[b] = (double)bins->halve[b];
        if (an_row(tb, "%.2f\t%.2f\t%lld\t%lld\t%lld\t%lld\t%.3f", 6.0 + b * 2.0 / XBINS, 6.0 + (b + 1) * 2.0 / XBINS,
                   (long long)n, (long long)bins->keep[b], (long long)bins->halve[b], (long long)bins->tie[b],
                   n ? (double)bins->halve[b] / (double)n : NAN))
            return CLI_FAIL;
    }
    char err[256];
    if (svg_mse) {
        svg_series s[8];
        const int ns = ng < 8 ? ng : 8;
        for (int i = 0; i < NQ; i++) qx[i] = q_at(i);
        for (int g = 0; g < ns; g++) {
            for (int i = 0; i < NQ; i++) curves[g][i] /= counts[g];
            s[g] = (svg_series){groups[g], qx, curves[g], NQ};
        }
        svg_axes ax = {"Empirical MXFP4 quantization MSE vs q (mean over the tensors of each group)",
                       "q (Q_max of the ceiling rule)", "MSE(q) / MSE(7.25)", 0};
        svg_marker m[1] = {{7.25, "UOS 7.25"}};
        if (svg_line_plot(svg_mse, &ax, s, ns, m, 1, err, sizeof err)) {
            cli_error("%s: %s", svg_mse, err);
            return CLI_FAIL;
        }
    }
    if (svg_blocks) {
        svg_series s[2] = {{"keep 2^(E-2) wins", NULL, keep, XBINS}, {"halve: 2^(E-1) wins", NULL, halve, XBINS}};
        svg_axes ax = {"Per 32-block winner by OCP-normalized block maximum", "x = M / 2^(floor(log2 M) - 2)",
                       "blocks", 0};
        svg_marker m[1] = {{7.25, "7.25"}};
        if (svg_histogram(svg_blocks, &ax, 6.0, 8.0, XBINS, s, 2, m, 1, err, sizeof err)) {
            cli_error("%s: %s", svg_blocks, err);
            return CLI_FAIL;
        }
    }
    return CLI_OK;
}

enum { O_AXIS, O_HADAMARD, O_DEVICE, O_SVG, O_SVG_MSE, O_SVG_BLOCKS, O_CSV, O_JSON, O_COUNT };

int analyze_uos(int argc, char **argv)
{
    cli_option o[O_COUNT] = {
        [O_AXIS] = {"--axis", "last|tokens", "block axis of the tensors: last (Q, K) or tokens (V in attention)", NULL},
        [O_HADAMARD] = {"--hadamard", NULL, "rotate the last axis first (Q and K in MXAttention; D = 32..256)", NULL},
        [O_DEVICE] = {"--device", "ID", "device that quantizes (default cpu; bit-exact everywhere)", NULL},
        [O_SVG] = {"--svg", "FILE", "write Fig. 2: J(q) for every law", NULL},
        [O_SVG_MSE] = {"--svg-mse", "FILE", "write the empirical MSE(q) curves (needs tensors)", NULL},
        [O_SVG_BLOCKS] = {"--svg-blocks", "FILE", "write the per-block winner histogram (needs tensors)", NULL},
        [O_CSV] = {"--csv", "FILE", "write every table (curves included) as CSV", NULL},
        [O_JSON] = {"--json", "FILE", "write every table (curves included) as JSON", NULL},
    };
    static const char *const axes[] = {"last", "tokens", NULL};
    cli_spec spec = {"analyze uos", "[TENSOR.npy ...] [options]",
                     "Universal Optimal Scaling: the exact minimum of J(q) from the E2M1 grid (it must be 7.25)\n"
                     "and J(q) under several laws (Fig. 2); with tensors, the quantization MSE for q = 6.00 ... 8.00\n"
                     "by 0.05 and where its minimum falls per tensor (Table 4) and per 32-block.",
                     o, O_COUNT, 0, MAX_TENSORS, {NULL}, 0};
    /* cli_parse keeps only 4 positionals: collect the tensors ourselves. */
    const char *paths[MAX_TENSORS];
    int np = 0, rc;
    char *rest[2 * O_COUNT + 2];
    int nrest = 0;
    rest[nrest++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            if (nrest >= (int)(sizeof rest / sizeof rest[0]) - 1) {
                cli_error("analyze uos: too many options");
                return CLI_USAGE;
            }
            rest[nrest++] = argv[i];
            const int takes = strcmp(argv[i], "--hadamard") != 0 && strcmp(argv[i], "--help") != 0 &&
                              strcmp(argv[i], "-h") != 0 && !strchr(argv[i], '=');
            if (takes && i + 1 < argc) rest[nrest++] = argv[++i];
        } else if (np < MAX_TENSORS) {
            paths[np++] = argv[i];
        } else {
            cli_error("analyze uos: at most %d tensors", MAX_TENSORS);
            return CLI_USAGE;
        }
    }
    spec.positional_max = 0;
    rc = cli_parse(&spec, nrest, rest);
    if (rc) return rc < 0 ? CLI_OK : rc;
    int tokens = 0;
    if (o[O_AXIS].value && (rc = cli_choice("--axis", o[O_AXIS].value, axes, &tokens))) return rc;
    if (!np && (o[O_SVG_MSE].value || o[O_SVG_BLOCKS].value)) {
        cli_error("analyze uos: --svg-mse and --svg-blocks need tensors");
        return CLI_USAGE;
    }
    if ((rc = an_check_files(NULL, 0, paths, np, &o[O_SVG], 5))) return rc;

    an_report *r = an_report_new("uos");
    tensor_result *res = calloc((size_t)(np ? np : 1), sizeof *res);
    block_bins bins;
    memset(&bins, 0, sizeof bins);
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    rc = CLI_FAIL;
    double q_star;
    if (!r || !res) {
        cli_error("analyze: out of memory");
        goto out;
    }
    if (analytic(r, o[O_SVG].value, &q_star)) goto out;
    printf("UOS: Delta(q) = E(q) - 8E(q/2) changes sign from - to + at q* = %.10g (exact from the E2M1 grid)\n", q_star);
    if (np) {
        if (cli_open_device(o[O_DEVICE].value ? o[O_DEVICE].value : "cpu", &rt, &dev)) goto out;
        for (int i = 0; i < np; i++) {
            an_tensor t;
            char stem[128];
            if (an_load(paths[i], &t)) goto out;
            if (o[O_HADAMARD].value && !an_hadamard_ok(t.shape[3])) {
                cli_error("%s: --hadamard needs a last axis of 32, 64, 128 or 256, not %lld", paths[i],
                          (long long)t.shape[3]);
                an_tensor_free(&t);
                goto out;
            }
            an_stem(paths[i], stem, sizeof stem);
            snprintf(res[i].name, sizeof res[i].name, "%s", stem);
            group_of(stem, res[i].group, sizeof res[i].group);
            const int bad = empirical_one(dev, &t, tokens, o[O_HADAMARD].value != NULL, &res[i], &bins);
            an_tensor_free(&t);
            if (bad) goto out;
        }
        if (empirical_report(r, res, np, &bins, o[O_SVG_MSE].value, o[O_SVG_BLOCKS].value)) goto out;
    }
    an_report_print(r);
    if (np) printf("\n(%lld blocks have no choice for q in [6, 8]: OCP-normalized maximum <= 6, or zero)\n",
                   (long long)bins.no_choice);
    if ((o[O_CSV].value && an_report_write_csv(r, o[O_CSV].value)) ||
        (o[O_JSON].value && an_report_write_json(r, o[O_JSON].value)))
        goto out;
    rc = fabs(q_star - 7.25) < 1e-9 ? CLI_OK : CLI_FAIL;
    if (rc) cli_error("analyze uos: the minimum is %.10g, not 7.25", q_star);
out:
    cli_close_device(rt, dev);
    free(res);
    an_report_free(r);
    return rc;
}
