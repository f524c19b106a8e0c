/*
 * mxa bench [--device ID] [--shape B,H,N,D | --shapes PRESET] [--recipe R] [--causal] [--bc N] [--reps N] [--json]
 *
 * Times attention on one device, side by side in the same run: the chosen
 * recipe, the same device's fp32 recipe, and a materialised fp32 attention
 * built on OpenBLAS sgemm (S = QK^T, softmax, PV, in row chunks). Reports the
 * median after a warm-up (WARMUP_SECONDS of calls, at least one), effective
 * TFLOP/s (4 B H Nq Nk D / t, halved when causal), the ratios, mxa_quantize
 * throughput, and on AVX-512 VNNI machines the measured int8 peak and the
 * fraction of it the kernel reaches. The median is the caller's wall time of a
 * synchronous call; device_ms is the median of the backend's own time of it
 * (mxa_attention_info.kernel_seconds: GPU timestamps or events from the call's
 * first dispatch to its last; the CPU's compute), without the submission and
 * wait that an engine recording into its own command buffers does not pay.
 * That is the time to compare with a peer timed by GPU events.
 */
#define _DEFAULT_SOURCE /* syscall(): Linux's AMX permission request */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(MXA_HAVE_OPENBLAS)
#include <cblas.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#define BENCH_HAVE_VNNI_PEAK 1
#endif

#include "cli.h"
#include "commands.h"

typedef struct shape {
    int64_t b, h, n, d;
    int causal;
} shape;

typedef struct result {
    shape s;
    double t_recipe, t_fp32, t_blas, t_sgemm; /* medians, seconds; < 0 when not run */
    double t_device; /* median of the backend's own time of the call (mxa_attention_info); < 0: unknown */
    double quant_gbs;
    char variant[48];
    int bc;
} result;

/* Why the OpenBLAS baseline is missing from the table, when it is. */
static const char *blas_skipped = "not built in (install libopenblas-dev and rebuild for the materialised baseline)";
static int progress_on;

static void progress(const char *fmt, const char *a, const shape *s, int rep, int reps)
{
    if (!progress_on) return;
    fprintf(stderr, "\r\033[K");
    fprintf(stderr, fmt, a, (long long)s->b, (long long)s->h, (long long)s->n, (long long)s->d, rep, reps);
    fflush(stderr);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A GPU that idled while the inputs were generated runs its first calls at low clocks
 * (the H200: the first two 16384-token calls up to 5x slower), so the warm-up lasts this
 * long, in at most WARMUP_CALLS calls. */
#define WARMUP_SECONDS 1.0
#define WARMUP_CALLS 10000

typedef struct warmup {
    double seconds;
    int calls;
} warmup;

/* Adds a warm-up call of t seconds; whether the warm-up goes on. */
static int warming(warmup *w, double t)
{
    w->seconds += t;
    return w->seconds < WARMUP_SECONDS && ++w->calls < WARMUP_CALLS;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static double flops(const shape *s)
{
    const double f = 4.0 * (double)s->b * (double)s->h * (double)s->n * (double)s->n * (double)s->d;
    return s->causal ? f / 2 : f;
}

/* ------------------------------------------------------ the device's runs */

typedef struct dev_inputs {
    mxa_buffer *q, *k, *v, *o;
    mxa_tensor tq, tk, tv, to;
} dev_inputs;

static void inputs_free(dev_inputs *in)
{
    mxa_buffer_destroy(in->q);
    mxa_buffer_destroy(in->k);
    mxa_buffer_destroy(in->v);
    mxa_buffer_destroy(in->o);
    memset(in, 0, sizeof *in);
}

/* The dtype of q, k and v in their device buffers (--dtype); o stays float32. */
static mxa_dtype in_dtype = MXA_F32;

static const char *dtype_name(mxa_dtype dtype) { return dtype == MXA_F16 ? "f16" : dtype == MXA_BF16 ? "bf16" : "f32"; }

/* Device-resident inputs, so the timing holds no host copies; q, k, v as in_dtype (16-bit
 * values rounded from the float32 ones). */
static int inputs_upload(mxa_device *dev, const shape *s, const float *q, const float *k, const float *v,
                         dev_inputs *in)
{
    const size_t n = (size_t)(s->b * s->h * s->n * s->d), bytes = n * sizeof(float), in_bytes = n * mxa_dtype_size(in_dtype);
    uint16_t *half = in_dtype == MXA_F32 ? NULL : malloc(in_bytes);
    mxa_status st = in_dtype != MXA_F32 && !half ? MXA_ERR_OUT_OF_MEMORY : MXA_OK;
    memset(in, 0, sizeof *in);
    mxa_buffer **bufs_in[3] = {&in->q, &in->k, &in->v};
    const float *src[3] = {q, k, v};
    if (!st) st = mxa_buffer_create(dev, bytes, &in->o);
    for (int i = 0; i < 3 && !st; i++) {
        const void *data = src[i];
        if (half) {
            for (size_t e = 0; e < n; e++) half[e] = cli_to_half(src[i][e], in_dtype);
            data = half;
        }
        if (!(st = mxa_buffer_create(dev, in_bytes, bufs_in[i]))) st = mxa_buffer_upload(*bufs_in[i], 0, data, in_bytes);
    }
    free(half);
    if (st) {
        inputs_free(in);
        return cli_library_error("bench: device buffers", st);
    }
    mxa_buffer *bufs[4] = {in->q, in->k, in->v, in->o};
    mxa_tensor *ts[4] = {&in->tq, &in->tk, &in->tv, &in->to};
    for (int i = 0; i < 4; i++) {
        memset(ts[i], 0, sizeof *ts[i]);
        ts[i]->dtype = i < 3 ? in_dtype : MXA_F32;
        ts[i]->shape[0] = s->b, ts[i]->shape[1] = s->h, ts[i]->shape[2] = s->n, ts[i]->shape[3] = s->d;
        ts[i]->buffer = bufs[i];
    }
    return CLI_OK;
}

/* One timed call of the device. */
static int attention_once(mxa_device *dev, const mxa_attention_desc *desc, dev_inputs *in, double *seconds,
                          mxa_attention_info *info)
{
    const double t0 = cli_now();
    mxa_status st = mxa_attention(dev, desc, &in->tq, &in->tk, &in->tv, &in->to, NULL, info);
    *seconds = cli_now() - t0;
    return st ? cli_library_error("bench: attention", st) : CLI_OK;
}

static int time_quantize(mxa_device *dev, const shape *s, float *x, int reps, double *gbs)
{
    const int64_t rows = s->b * s->h * s->n, nblk = (s->d + 31) / 32;
    uint8_t *codes = malloc((size_t)(rows * nblk * 16)), *scales = malloc((size_t)(rows * nblk));
    double *t = malloc(sizeof(double) * (size_t)reps);
    int rc = CLI_OK;
    mxa_tensor tx;
    mxa_tensor_init(&tx, MXA_F32, s->b, s->h, s->n, s->d, x);
    if (!codes || !scales || !t) {
        cli_error("bench: out of memory");
        rc = CLI_FAIL;
        goto out;
    }
    warmup warm = {0};
    for (int r = -1; r < reps; r++) { /* r < 0: warm-up */
        progress("bench %s %lld,%lld,%lld,%lld rep %d/%d", "quantize", s, r + 1, reps);
        const double t0 = cli_now();
        mxa_status st = mxa_quantize(dev, &tx, mxa_rule_uos(), codes, scales);
        if (st) {
            rc = cli_library_error("bench: quantize", st);
            goto out;
        }
        if (r >= 0) t[r] = cli_now() - t0;
        else if (warming(&warm, cli_now() - t0)) r--; /* stay in the warm-up */
    }
    *gbs = (double)(rows * s->d) * 4.0 / median(t, reps) / 1e9;
out:
    free(codes);
    free(scales);
    free(t);
    return rc;
}

/* ------------------------------------------- materialised fp32 (OpenBLAS) */

#if defined(MXA_HAVE_OPENBLAS)
/* e^x, lane-wise and branch-free so the compiler vectorizes the softmax. */
static inline float bench_exp(float x)
{
    x = x < -87.0f ? -87.0f : x;
    const float t = x * 1.44269504f + 12582912.0f, n = t - 12582912.0f;
    const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    uint32_t tb;
    memcpy(&tb, &t, sizeof tb);
    const uint32_t sb = (tb - 0x4b400000u + 127u) << 23;
    float sc;
    memcpy(&sc, &sb, sizeof sc);
    return p * sc;
}

typedef struct blas_job {
    const shape *s;
    const float *q, *k, *v;
    float *o, *sbuf;
    int part, parts, avx2;
    double sgemm_seconds;
} blas_job;

/* Softmax of one row of scores in place; causal rows see `visible` keys. */
static void softmax_row(float *row, int64_t cols, int64_t visible)
{
    /* 16 partial maxima and sums so that every loop vectorizes */
    const int64_t n = visible < 0 ? 0 : (visible > cols ? cols : visible), c16 = n / 16 * 16;
    float pm[16], ps[16], m = -INFINITY, sum = 0.0f;
    for (int l = 0; l < 16; l++) pm[l] = -INFINITY, ps[l] = 0.0f;
    for (int64_t c = 0; c < c16; c += 16)
        for (int l = 0; l < 16; l++) pm[l] = row[c + l] > pm[l] ? row[c + l] : pm[l];
    for (int64_t c = c16; c < n; c++) m = row[c] > m ? row[c] : m;
    for (int l = 0; l < 16; l++) m = pm[l] > m ? pm[l] : m;
    for (int64_t c = 0; c < n; c++) row[c] = bench_exp(row[c] - m);
    for (int64_t c = 0; c < c16; c += 16)
        for (int l = 0; l < 16; l++) ps[l] += row[c + l];
    for (int64_t c = c16; c < n; c++) sum += row[c];
    for (int l = 0; l < 16; l++) sum += ps[l];
    const float inv = n ? 1.0f / sum : 0.0f;
    for (int64_t c = 0; c < n; c++) row[c] *= inv;
    for (int64_t c = n; c < cols; c++) row[c] = 0.0f;
}

#if defined(BENCH_HAVE_VNNI_PEAK)
/* The same softmax with AVX2 + FMA (the compiler does not vectorize the
 * plain one): e^x as 2^n p(r), 8 lanes at a time. */
__attribute__((target("avx2,fma"))) static void softmax_row_avx2(float *row, int64_t cols, int64_t visible)
{
    const int64_t n = visible < 0 ? 0 : (visible > cols ? cols : visible), n8 = n / 8 * 8;
    __m256 vm = _mm256_set1_ps(-INFINITY);
    for (int64_t c = 0; c < n8; c += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(row + c));
    float lanes[8], m = -INFINITY, sum = 0.0f;
    _mm256_storeu_ps(lanes, vm);
    for (int l = 0; l < 8; l++) m = lanes[l] > m ? lanes[l] : m;
    for (int64_t c = n8; c < n; c++) m = row[c] > m ? row[c] : m;
    const __m256 mm = _mm256_set1_ps(m);
    __m256 vs = _mm256_setzero_ps();
    for (int64_t c = 0; c < n8; c += 8) {
        __m256 x = _mm256_max_ps(_mm256_sub_ps(_mm256_loadu_ps(row + c), mm), _mm256_set1_ps(-87.0f));
        const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
        r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
        __m256 p = _mm256_set1_ps(1.0f / 720.0f);
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
        const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
        p = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
        _mm256_storeu_ps(row + c, p);
        vs = _mm256_add_ps(vs, p);
    }
    for (int64_t c = n8; c < n; c++) row[c] = bench_exp(row[c] - m);
    _mm256_storeu_ps(lanes, vs);
    for (int l = 0; l < 8; l++) sum += lanes[l];
    for (int64_t c = n8; c < n; c++) sum += row[c];
    const __m256 inv = _mm256_set1_ps(n ? 1.0f / sum : 0.0f);
    for (int64_t c = 0; c < n8; c += 8) _mm256_storeu_ps(row + c, _mm256_mul_ps(_mm256_loadu_ps(row + c), inv));
    for (int64_t c = n8; c < n; c++) row[c] *= n ? 1.0f / sum : 0.0f;
    for (int64_t c = n; c < cols; c++) row[c] = 0.0f;
}
#endif

#define BLAS_CHUNK 256

/* One thread's share of (head, row chunk) items: S = scale Q K^T (sgemm),
 * softmax, O = P V (sgemm). OpenBLAS runs single-threaded inside each call:
 * its own worker threads would spin against ours between calls. */
static void *blas_worker(void *arg)
{
    blas_job *j = arg;
    const shape *s = j->s;
    const int64_t n = s->n, d = s->d, chunks = (n + BLAS_CHUNK - 1) / BLAS_CHUNK;
    const float scale = 1.0f / sqrtf((float)d);
    for (int64_t item = j->part; item < s->b * s->h * chunks; item += j->parts) {
        const int64_t bh = item / chunks, r0 = item % chunks * BLAS_CHUNK;
        const int64_t rows = n - r0 < BLAS_CHUNK ? n - r0 : BLAS_CHUNK;
        const float *qh = j->q + (bh * n + r0) * d, *kh = j->k + bh * n * d, *vh = j->v + bh * n * d;
        double t0 = cli_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)n, (int)d, scale, qh, (int)d, kh, (int)d,
                    0.0f, j->sbuf, (int)n);
        j->sgemm_seconds += cli_now() - t0;
        for (int64_t r = 0; r < rows; r++) {
            const int64_t visible = s->causal ? r0 + r + 1 : n; /* Nq = Nk: bottom-right = top-left */
#if defined(BENCH_HAVE_VNNI_PEAK)
            if (j->avx2) {
                softmax_row_avx2(j->sbuf + r * n, n, visible);
                continue;
            }
#endif
            softmax_row(j->sbuf + r * n, n, visible);
        }
        t0 = cli_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)d, (int)n, 1.0f, j->sbuf, (int)n, vh,
                    (int)d, 0.0f, j->o + (bh * n + r0) * d, (int)d);
        j->sgemm_seconds += cli_now() - t0;
    }
    return NULL;
}

/* One run over `threads` threads; sgemm_seconds: the threads' mean time in sgemm. */
static int blas_attention(const shape *s, const float *q, const float *k, const float *v, float *o, int threads,
                          double *sgemm_seconds)
{
    enum { MAX_T = 256 };
    blas_job jobs[MAX_T];
    pthread_t tid[MAX_T];
    int parts = threads < 1 ? 1 : (threads > MAX_T ? MAX_T : threads), started = 0, rc = CLI_OK;
    float *sbuf = malloc(sizeof(float) * (size_t)(BLAS_CHUNK * s->n) * (size_t)parts);
    if (!sbuf) {
        cli_error("bench: out of memory for the materialised scores");
        return CLI_FAIL;
    }
    openblas_set_num_threads(1);
#if defined(BENCH_HAVE_VNNI_PEAK)
    const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    const int avx2 = 0;
#endif
    for (int p = 0; p < parts; p++)
        jobs[p] = (blas_job){s, q, k, v, o, sbuf + (size_t)p * BLAS_CHUNK * (size_t)s->n, p, parts, avx2, 0.0};
    for (int p = 1; p < parts; p++) {
        if (pthread_create(&tid[p], NULL, blas_worker, &jobs[p]) != 0) break;
        started++;
    }
    for (int p = started + 1; p < parts; p++) jobs[p].part = p, blas_worker(&jobs[p]); /* no thread: run it here */
    blas_worker(&jobs[0]);
    *sgemm_seconds = 0.0;
    for (int p = 1; p <= started; p++) pthread_join(tid[p], NULL);
    for (int p = 0; p < parts; p++) *sgemm_seconds += jobs[p].sgemm_seconds / parts;
    free(sbuf);
    return rc;
}

/* One timed run of the materialised baseline (o: scratch output). */
static int blas_once(const shape *s, const float *q, const float *k, const float *v, float *o, int threads,
                     double *seconds, double *sgemm)
{
    const double t0 = cli_now();
    const int rc = blas_attention(s, q, k, v, o, threads, sgemm);
    *seconds = cli_now() - t0;
    return rc;
}
#endif

/* ------------------------------------------------------- the int8 peak */

#if defined(BENCH_HAVE_VNNI_PEAK)
/* Twelve independent vpdpbusd chains: enough to cover the latency. */
__attribute__((target("avx512f,avx512vnni"))) static void *vnni_loop(void *arg)
{
    long iters = *(long *)arg;
    __m512i acc[12];
    const __m512i a = _mm512_set1_epi32(0x01020304), b = _mm512_set1_epi32(0x01010101);
    for (int r = 0; r < 12; r++) acc[r] = _mm512_set1_epi32(r);
    for (long i = 0; i < iters; i++)
        for (int r = 0; r < 12; r++) acc[r] = _mm512_dpbusd_epi32(acc[r], a, b);
    __m512i s = acc[0];
    for (int r = 1; r < 12; r++) s = _mm512_xor_si512(s, acc[r]);
    uint32_t lanes[16], x = 0;
    _mm512_storeu_si512(lanes, s);
    for (int l = 0; l < 16; l++) x ^= lanes[l];
    *(long *)arg = (long)x; /* keeps the loop alive */
    return NULL;
}

/* The best of three rates (ops/s) of `threads` threads each running `loop`
 * for `iters` iterations of `ops_per_iter` int8 operations. */
static double peak_rate(void *(*loop)(void *), long iters, double ops_per_iter, int threads)
{
    pthread_t tid[256];
    long args[256];
    if (threads > 256) threads = 256;
    double best = 0.0;
    for (int rep = 0; rep < 3; rep++) {
        int started = 0;
        const double t0 = cli_now();
        for (int i = 0; i < threads; i++) {
            args[i] = iters;
            if (pthread_create(&tid[i], NULL, loop, &args[i]) != 0) break;
            started++;
        }
        for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
        const double rate = (double)started * iters * ops_per_iter / (cli_now() - t0);
        best = rate > best ? rate : best;
    }
    return best;
}

/* int8 ops/s (2 per multiply-add) of `threads` threads running vpdpbusd; 0 if unavailable. */
static double vnni_peak(int threads)
{
    if (!__builtin_cpu_supports("avx512vnni")) return 0.0;
    return peak_rate(vnni_loop, 4000000, 12.0 * 16 * 4 * 2, threads);
}

/* The AMX unit's int8 rate: four independent TDPBSSD chains on 16 x 64-byte
 * tiles (16 * 16 * 64 multiply-adds each). 0 where AMX is not available. */
typedef struct amx_tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_tilecfg;

__attribute__((target("amx-tile,amx-int8"))) static void *amx_loop(void *arg)
{
    long iters = *(long *)arg;
    static const int8_t a[16 * 64], b[16 * 64];
    int32_t c[16 * 16];
    amx_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 6; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    _tile_loadconfig(&cfg);
    _tile_loadd(4, a, 64);
    _tile_loadd(5, b, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (long i = 0; i < iters; i++) {
        _tile_dpbssd(0, 4, 5);
        _tile_dpbssd(1, 4, 5);
        _tile_dpbssd(2, 4, 5);
        _tile_dpbssd(3, 4, 5);
    }
    _tile_stored(0, c, 64);
    _tile_release();
    *(long *)arg = c[0];
    return NULL;
}

static double amx_peak(int threads)
{
#if defined(__linux__) && defined(SYS_arch_prctl)
    if (!__builtin_cpu_supports("avx512f") || syscall(SYS_arch_prctl, 0x1023, 18) != 0) return 0.0;
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 24) & 1) || !((d >> 25) & 1)) return 0.0;
    return peak_rate(amx_loop, 2000000, 4.0 * 16 * 16 * 64 * 2, threads);
#else
    (void)threads;
    return 0.0;
#endif
}
#else
static double vnni_peak(int threads)
{
    (void)threads;
    return 0.0;
}

static double amx_peak(int threads)
{
    (void)threads;
    return 0.0;
}
#endif

/* ---------------------------------------------------------------- output */

static const char *peak_unit = "vpdpbusd";

static void print_table(const result *res, int count, const char *recipe, double peak, int blas)
{
    printf("%-22s %-11s %10s %9s %9s %9s %8s %8s %8s %9s %9s\n", "shape B,H,N,D", "recipe", "median_ms", "TFLOP/s",
           "fp32_ms", "blas_ms", "x_fp32", "x_blas", "%peak", "device_ms", "dev_TF/s");
    for (int i = 0; i < count; i++) {
        const result *r = &res[i];
        char sh[64];
        snprintf(sh, sizeof sh, "%lld,%lld,%lld,%lld%s", (long long)r->s.b, (long long)r->s.h, (long long)r->s.n,
                 (long long)r->s.d, r->s.causal ? " causal" : "");
        const double tf = flops(&r->s) / r->t_recipe / 1e12;
        printf("%-22s %-11s %10.2f %9.3f ", sh, recipe, r->t_recipe * 1e3, tf);
        if (r->t_fp32 > 0) printf("%9.2f ", r->t_fp32 * 1e3); else printf("%9s ", "n/a");
        if (blas && r->t_blas > 0) printf("%9.2f ", r->t_blas * 1e3); else printf("%9s ", "n/a");
        if (r->t_fp32 > 0) printf("%8.2f ", r->t_fp32 / r->t_recipe); else printf("%8s ", "n/a");
        if (blas && r->t_blas > 0) printf("%8.2f ", r->t_blas / r->t_recipe); else printf("%8s ", "n/a");
        if (peak > 0) printf("%7.1f%% ", 100.0 * tf * 1e12 / peak); else printf("%8s ", "n/a");
        if (r->t_device > 0) printf("%9.2f %9.3f\n", r->t_device * 1e3, flops(&r->s) / r->t_device / 1e12);
        else printf("%9s %9s\n", "n/a", "n/a");
    }
    for (int i = 0; i < count; i++)
        if (blas && res[i].t_blas > 0)
            printf("  openblas %lld,%lld,%lld,%lld%s: sgemm %.2f ms of %.2f ms (x_sgemm_only %.2f); quantize %.2f GB/s\n",
                   (long long)res[i].s.b, (long long)res[i].s.h, (long long)res[i].s.n, (long long)res[i].s.d,
                   res[i].s.causal ? " causal" : "", res[i].t_sgemm * 1e3, res[i].t_blas * 1e3,
                   res[i].t_sgemm / res[i].t_recipe, res[i].quant_gbs);
        else
            printf("  quantize %lld,%lld,%lld,%lld: %.2f GB/s\n", (long long)res[i].s.b, (long long)res[i].s.h,
                   (long long)res[i].s.n, (long long)res[i].s.d, res[i].quant_gbs);
    if (peak > 0) printf("int8 peak (%s, all threads): %.3f TOPS\n", peak_unit, peak / 1e12);
    else printf("int8 peak: not measured (it is measured for the cpu device, with AVX-512 VNNI or AMX)\n");
    if (!blas) printf("openblas: %s\n", blas_skipped);
}

static void print_json(const result *res, int count, const char *recipe, const char *device, double peak, int blas)
{
    printf("{\"device\": \"%s\", \"recipe\": \"%s\", \"input_dtype\": \"%s\", \"int8_peak_tops\": %.4f, "
           "\"int8_peak_unit\": \"%s\", \"openblas\": %s, \"results\": [",
           device, recipe, dtype_name(in_dtype), peak / 1e12, peak_unit, blas ? "true" : "false");
    for (int i = 0; i < count; i++) {
        const result *r = &res[i];
        const double tf = flops(&r->s) / r->t_recipe / 1e12;
        printf("%s\n  {\"b\": %lld, \"h\": %lld, \"n\": %lld, \"d\": %lld, \"causal\": %s, \"variant\": \"%s\", "
               "\"bc\": %d, \"seconds\": %.6f, \"tflops\": %.4f, ",
               i ? "," : "", (long long)r->s.b, (long long)r->s.h, (long long)r->s.n, (long long)r->s.d,
               r->s.causal ? "true" : "false", r->variant, r->bc, r->t_recipe, tf);
        if (r->t_fp32 > 0)
            printf("\"fp32_seconds\": %.6f, \"speedup_vs_fp32\": %.3f, ", r->t_fp32, r->t_fp32 / r->t_recipe);
        else
            printf("\"fp32_seconds\": null, \"speedup_vs_fp32\": null, ");
        if (blas && r->t_blas > 0)
            printf("\"openblas_seconds\": %.6f, \"openblas_sgemm_seconds\": %.6f, \"speedup_vs_openblas\": %.3f, ",
                   r->t_blas, r->t_sgemm, r->t_blas / r->t_recipe);
        else
            printf("\"openblas_seconds\": null, \"openblas_sgemm_seconds\": null, \"speedup_vs_openblas\": null, ");
        if (peak > 0) printf("\"fraction_of_int8_peak\": %.4f, ", tf * 1e12 / peak);
        else printf("\"fraction_of_int8_peak\": null, ");
        if (r->t_device > 0)
            printf("\"device_seconds\": %.6f, \"device_tflops\": %.4f, ", r->t_device, flops(&r->s) / r->t_device / 1e12);
        else
            printf("\"device_seconds\": null, \"device_tflops\": null, ");
        printf("\"quantize_gbs\": %.3f}", r->quant_gbs);
    }
    printf("\n]}\n");
}

/* ------------------------------------------------------------- command */

static int parse_shape(const char *text, shape *s)
{
    long long b, h, n, d;
    char extra;
    if (sscanf(text, "%lld,%lld,%lld,%lld%c", &b, &h, &n, &d, &extra) != 4 || b < 1 || h < 1 || n < 1 || d < 32 ||
        d > 256 || d % 32 || b * h * n * d > (1ll << 31)) {
        cli_error("bench: --shape wants B,H,N,D with D a multiple of 32 in [32, 256] and B*H*N*D <= 2^31, got '%s'",
                  text);
        return CLI_USAGE;
    }
    *s = (shape){b, h, n, d, 0};
    return CLI_OK;
}

static int run_shape(mxa_device *dev, const shape *s, const mxa_attention_desc *base, int reps, int with_fp32, int blas,
                     int threads, result *r)
{
    const int64_t n = s->b * s->h * s->n * s->d;
    float *q = malloc(sizeof(float) * (size_t)n), *k = malloc(sizeof(float) * (size_t)n),
          *v = malloc(sizeof(float) * (size_t)n);
    dev_inputs in = {0};
    int rc = CLI_OK;
    memset(r, 0, sizeof *r);
    r->s = *s;
    r->t_blas = r->t_sgemm = r->t_fp32 = r->t_device = -1.0;
    if (!q || !k || !v) {
        cli_error("bench: out of memory for %lld-element inputs", (long long)n);
        rc = CLI_FAIL;
        goto out;
    }
    cli_rng rng = {0x5eed + (uint64_t)s->n};
    for (int64_t i = 0; i < n; i++) {
        q[i] = (float)cli_normal(&rng);
        k[i] = (float)cli_normal(&rng);
        v[i] = (float)cli_normal(&rng);
    }
    if ((rc = inputs_upload(dev, s, q, k, v, &in))) goto out;
    mxa_attention_desc desc = *base, fp32;
    desc.causal = s->causal;
    mxa_attention_desc_init(&fp32, MXA_RECIPE_FP32);
    fp32.causal = s->causal;
    fp32.bc = desc.bc;
    /* The three are timed in turn within each repetition, so a machine whose
     * load changes during the run (other users) moves them alike. */
    mxa_attention_info info;
    double *tr = calloc((size_t)reps, sizeof(double)), *tf = calloc((size_t)reps, sizeof(double));
    double *tb = calloc((size_t)reps, sizeof(double)), *tg = calloc((size_t)reps, sizeof(double));
    double *td = calloc((size_t)reps, sizeof(double));
    float *o = blas ? malloc(sizeof(float) * (size_t)n) : NULL;
    if (!tr || !tf || !tb || !tg || !td || (blas && !o)) {
        cli_error("bench: out of memory");
        rc = CLI_FAIL;
        goto done;
    }
    warmup warm = {0};
    for (int rep = -1; rep < reps && !rc; rep++) { /* rep < 0: warm-up */
        double t, g;
        progress("bench %s %lld,%lld,%lld,%lld rep %d/%d", "attention", s, rep + 1, reps);
        if ((rc = attention_once(dev, &desc, &in, &t, &info))) break;
        if (rep >= 0) tr[rep] = t, td[rep] = info.kernel_seconds;
        else if (warming(&warm, t)) {
            rep--; /* stay in the warm-up */
            continue;
        }
        if (with_fp32) {
            if ((rc = attention_once(dev, &fp32, &in, &t, &info))) break;
            if (rep >= 0) tf[rep] = t;
        }
#if defined(MXA_HAVE_OPENBLAS)
        if (blas) {
            progress("bench %s %lld,%lld,%lld,%lld rep %d/%d", "openblas", s, rep + 1, reps);
            if ((rc = blas_once(s, q, k, v, o, threads, &t, &g))) break;
            if (rep >= 0) tb[rep] = t, tg[rep] = g;
        }
#else
        (void)threads;
        (void)g;
#endif
    }
    if (!rc) {
        attention_once(dev, &desc, &in, &r->t_recipe, &info); /* for the variant and Bc it reports */
        snprintf(r->variant, sizeof r->variant, "%s", info.variant);
        r->bc = info.bc;
        r->t_recipe = median(tr, reps);
        r->t_device = median(td, reps);
        if (td[0] < 0.0) r->t_device = -1.0; /* sorted: one unknown time leaves the median unknown */
        if (with_fp32) r->t_fp32 = median(tf, reps);
        if (blas) {
            r->t_blas = median(tb, reps);
            r->t_sgemm = median(tg, reps);
        }
        rc = time_quantize(dev, s, q, reps, &r->quant_gbs);
    }
done:
    free(tr);
    free(tf);
    free(tb);
    free(tg);
    free(td);
    free(o);
out:
    inputs_free(&in);
    free(q);
    free(k);
    free(v);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    cli_option options[] = {
        {"--device", "ID", "device: auto (default), cpu, vulkan:0, opencl:0, hip:0", NULL},
        {"--shape", "B,H,N,D", "one shape (default 1,8,4096,128); Nq = Nk = N, H = Hkv", NULL},
        {"--shapes", "PRESET", "issue (4096/128, 4096/64, 16384/128, 4096/128 causal) or small", NULL},
        {"--recipe", "R[,R...]", "mxattention (default), ocp-direct, fp32 or mxattention-fp8pv; a list (up to 4) times each in turn and prints their time ratios to the first", NULL},
        {"--causal", NULL, "bottom-right causal mask (for --shape)", NULL},
        {"--bc", "N", "key-tile size (default: the device's)", NULL},
        {"--reps", "N", "timed repetitions after a warm-up of at least one call and 1 s (default 5); the median is reported", NULL},
        {"--no-blas", NULL, "skip the OpenBLAS materialised baseline", NULL},
        {"--json", NULL, "print JSON to stdout instead of the table", NULL},
        {"--no-fp32", NULL, "skip the same device's fp32 recipe (slow on a GPU without an fp32 matrix kernel)", NULL},
        {"--dtype", "T", "q, k, v in the device's buffers as f32 (default), f16 or bf16 (the dtype of cuDNN's SDPA inputs: f16)", NULL},
    };
    cli_spec spec = {"bench", "[--device ID] [--shape B,H,N,D | --shapes PRESET] [--recipe R] [--causal] [--json]",
                     "Times a recipe, the same device's fp32 recipe and an OpenBLAS materialised fp32\n"
                     "attention side by side; prints medians, TFLOP/s (4 B H N^2 D / t, halved when causal),\n"
                     "speedups, mxa_quantize GB/s and the fraction of the measured int8 peak.",
                     options, CLI_COUNT(options), 0, 0, {NULL}, 0};
    int rc = cli_parse(&spec, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;
    const char *device = options[0].value ? options[0].value : "auto";
    shape shapes[8];
    int count = 0;
    long reps = 5, bc = 0;
    mxa_recipe recipes[4] = {MXA_RECIPE_MXATTENTION};
    int nrecipes = 1;
    if (options[1].value && options[2].value) {
        cli_error("bench: give --shape or --shapes, not both");
        return CLI_USAGE;
    }
    if (options[2].value) {
        if (strcmp(options[2].value, "issue") == 0) {
            shapes[count++] = (shape){1, 8, 4096, 128, 0};
            shapes[count++] = (shape){1, 8, 4096, 64, 0};
            shapes[count++] = (shape){1, 8, 16384, 128, 0};
            shapes[count++] = (shape){1, 8, 4096, 128, 1};
        } else if (strcmp(options[2].value, "small") == 0) {
            shapes[count++] = (shape){1, 4, 1024, 64, 0};
            shapes[count++] = (shape){1, 4, 1024, 64, 1};
        } else {
            cli_error("bench: unknown --shapes '%s' (issue or small)", options[2].value);
            return CLI_USAGE;
        }
    } else {
        shapes[0] = (shape){1, 8, 4096, 128, 0};
        if (options[1].value && (rc = parse_shape(options[1].value, &shapes[0]))) return rc;
        shapes[0].causal = options[4].value != NULL;
        count = 1;
    }
    if (options[3].value) {
        nrecipes = 0;
        char list[256];
        snprintf(list, sizeof list, "%s", options[3].value);
        for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            if (nrecipes == 4 || mxa_recipe_parse(name, &recipes[nrecipes]) != MXA_OK) {
                cli_error("bench: --recipe '%s': %s (mxattention, ocp-direct, fp32 or mxattention-fp8pv, at most 4)",
                          options[3].value, nrecipes == 4 ? "too many recipes" : "unknown recipe");
                return CLI_USAGE;
            }
            nrecipes++;
        }
        if (nrecipes == 0) {
            cli_error("bench: --recipe is empty");
            return CLI_USAGE;
        }
    }
    if (options[5].value && (rc = cli_int("--bc", options[5].value, 32, 4096, 32, &bc))) return rc;
    if (options[6].value && (rc = cli_int("--reps", options[6].value, 1, 1000, 1, &reps))) return rc;
#if defined(MXA_HAVE_OPENBLAS)
    const int blas = options[7].value == NULL;
    blas_skipped = "skipped (--no-blas)";
#else
    const int blas = 0;
#endif
    const int json = options[8].value != NULL;
    if (options[10].value) {
        const char *t = options[10].value;
        if (strcmp(t, "f32") == 0) in_dtype = MXA_F32;
        else if (strcmp(t, "f16") == 0) in_dtype = MXA_F16;
        else if (strcmp(t, "bf16") == 0) in_dtype = MXA_BF16;
        else {
            cli_error("bench: --dtype '%s': f32, f16 or bf16", t);
            return CLI_USAGE;
        }
    }
    progress_on = isatty(2);

    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    if ((rc = cli_open_device(device, &rt, &dev))) return rc;
    mxa_device_info info;
    mxa_device_info_of(dev, &info);
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("MXA_NUM_THREADS");
    if (env && atol(env) > 0) threads = atol(env);
    if (threads < 1) threads = 1;

    result all[4][8];
    for (int ri = 0; ri < nrecipes && !rc; ri++) {
        mxa_attention_desc desc;
        mxa_attention_desc_init(&desc, recipes[ri]);
        desc.bc = (int)bc;
        for (int i = 0; i < count && !rc; i++)
            rc = run_shape(dev, &shapes[i], &desc, (int)reps, options[9].value == NULL, blas, (int)threads, &all[ri][i]);
    }
    const result *res = all[0];
    double peak = 0.0;
    if (!rc && strcmp(info.backend, "cpu") == 0) {
        progress("bench %s %lld,%lld,%lld,%lld rep %d/%d", "int8-peak", &shapes[0], 0, 1);
        /* the peak of the unit the chosen kernel multiplies with */
        if (strncmp(res[0].variant, "amx", 3) == 0 && (peak = amx_peak((int)threads)) > 0) peak_unit = "amx tdpbssd";
        else peak = vnni_peak((int)threads);
    }
    if (progress_on) fprintf(stderr, "\r\033[K");
    if (!rc) {
        if (json && nrecipes > 1) printf("[");
        for (int ri = 0; ri < nrecipes; ri++) {
            if (json) {
                if (ri) printf(", ");
                print_json(all[ri], count, mxa_recipe_name(recipes[ri]), info.id, peak, blas);
            } else {
                printf("%sdevice %s (%s), variant %s, bc %d, %ld threads, %ld reps (median after a warm-up), %s inputs\n",
                       ri ? "\n" : "", info.id, info.name, all[ri][0].variant, all[ri][0].bc, threads, reps, dtype_name(in_dtype));
                print_table(all[ri], count, mxa_recipe_name(recipes[ri]), peak, blas);
            }
        }
        if (json && nrecipes > 1) printf("]\n");
        for (int ri = 1; ri < nrecipes && !json; ri++) /* the same shapes, timed one recipe after the other */
            for (int i = 0; i < count; i++)
                printf("%s%s / %s time, %lld,%lld,%lld,%lld%s: %.3f\n", ri == 1 && i == 0 ? "\n" : "",
                       mxa_recipe_name(recipes[ri]), mxa_recipe_name(recipes[0]), (long long)shapes[i].b,
                       (long long)shapes[i].h, (long long)shapes[i].n, (long long)shapes[i].d,
                       shapes[i].causal ? " causal" : "", all[ri][i].t_recipe / all[0][i].t_recipe);
    }
    cli_close_device(rt, dev);
    return rc;
}
