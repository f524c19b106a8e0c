/*
 * mxa — a portable C11 runtime for MXFP4 attention (MXAttention).
 *
 * The whole public API. Every function returns an mxa_status (or a value that
 * cannot fail), never aborts and never exits. On failure the thread-local
 * mxa_last_error_message() holds one line saying what was wrong.
 *
 * Numerics are defined by SPEC.md: MXFP4 block quantization (OCP, TFS, UOS,
 * q=<x>), the Walsh-Hadamard rotation and the MXAttention forward pass with
 * Pre-Normalization Quantization in the online softmax.
 */
#ifndef MXA_MXA_H
#define MXA_MXA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define MXA_API __declspec(dllexport)
#elif defined(__GNUC__)
#define MXA_API __attribute__((visibility("default")))
#else
#define MXA_API
#endif

#define MXA_VERSION_MAJOR 0
#define MXA_VERSION_MINOR 1
#define MXA_VERSION_PATCH 0

/* ---------------------------------------------------------------- status */

typedef enum mxa_status {
    MXA_OK = 0,
    MXA_ERR_INVALID_ARGUMENT, /* a NULL, a bad shape, stride, dtype or flag */
    MXA_ERR_UNSUPPORTED,      /* valid, but this device/recipe cannot do it (e.g. D = 48 with Hadamard) */
    MXA_ERR_NON_FINITE,       /* NaN/Inf input, or a magnitude whose MXFP4 decode would overflow */
    MXA_ERR_OUT_OF_MEMORY,
    MXA_ERR_NOT_FOUND,        /* no such device, backend or file */
    MXA_ERR_BACKEND,          /* a driver call failed (message names the call and its result) */
    MXA_ERR_IO,               /* reading or writing a file failed */
    MXA_ERR_FORMAT,           /* a malformed file (.npy, cache) */
    MXA_ERR_INTERNAL
} mxa_status;

/** Short constant name of a status ("MXA_ERR_NON_FINITE"). Never NULL. */
MXA_API const char *mxa_status_string(mxa_status status);

/** The detailed message of the last failure on the calling thread ("" if none).
 *  Valid until the next mxa call on this thread. */
MXA_API const char *mxa_last_error_message(void);

/** The library version as "major.minor.patch". */
MXA_API const char *mxa_version_string(void);

/* --------------------------------------------------------------- logging */

typedef enum mxa_log_level {
    MXA_LOG_ERROR = 0,
    MXA_LOG_WARN = 1,
    MXA_LOG_INFO = 2,
    MXA_LOG_DEBUG = 3
} mxa_log_level;

typedef void (*mxa_log_fn)(mxa_log_level level, const char *message, void *user);

/** Routes log lines to `fn` (NULL restores the default: stderr). Lines above
 *  the level are dropped; the level starts from MXA_LOG=error|warn|info|debug
 *  (default warn). Call before sharing a runtime between threads. */
MXA_API mxa_status mxa_log_set_callback(mxa_log_fn fn, void *user);

/** Sets the log level (overrides MXA_LOG). */
MXA_API mxa_status mxa_log_set_level(mxa_log_level level);

/* ------------------------------------------------------------ tensors */

/* MXA_BOOL (one byte, 0 = false) is for attention masks only. */
typedef enum mxa_dtype { MXA_F32 = 0, MXA_F16 = 1, MXA_BF16 = 2, MXA_BOOL = 3 } mxa_dtype;

typedef struct mxa_buffer mxa_buffer;

/**
 * A 4-D tensor [B, H, N, D] (unused leading dims are 1). Strides are in
 * elements; a zero-filled `strides` means contiguous row-major. The data is
 * either host memory (`data`) or a device buffer (`buffer` + byte `offset`,
 * which must live on the device it is used with, contiguous).
 */
typedef struct mxa_tensor {
    mxa_dtype dtype;
    int64_t shape[4];
    int64_t strides[4];
    void *data;
    mxa_buffer *buffer;
    size_t offset;
} mxa_tensor;

/** Fills `t` as a contiguous host tensor of the given dtype and shape. */
MXA_API mxa_status mxa_tensor_init(mxa_tensor *t, mxa_dtype dtype, int64_t b, int64_t h,
                                   int64_t n, int64_t d, void *data);

/** Size in bytes of one element of `dtype` (0 for an unknown dtype). */
MXA_API size_t mxa_dtype_size(mxa_dtype dtype);

/* ------------------------------------------------------- runtime & devices */

typedef struct mxa_runtime mxa_runtime;
typedef struct mxa_device mxa_device;

typedef struct mxa_runtime_options {
    /** Comma-separated backends not to load ("vulkan,opencl"); NULL reads MXA_DISABLE. */
    const char *disable;
} mxa_runtime_options;

/** Creates a runtime and probes every built-in backend. Never fails because a
 *  backend or driver is absent: absence is recorded with its reason. `opts`
 *  may be NULL. The runtime may be shared by threads. */
MXA_API mxa_status mxa_runtime_create(const mxa_runtime_options *opts, mxa_runtime **out);

/** Destroys a runtime. All devices opened from it must be closed first. */
MXA_API void mxa_runtime_destroy(mxa_runtime *rt);

#define MXA_NAME_LEN 128
#define MXA_REASON_LEN 256

typedef struct mxa_backend_info {
    char name[16];              /* "cpu", "vulkan", "opencl", "hip" */
    int built;                  /* compiled into this library */
    int present;                /* loaded and has at least one device */
    int device_count;
    char reason[MXA_REASON_LEN]; /* why absent, or a one-line summary when present */
} mxa_backend_info;

/** Number of backends this build knows (built or not). */
MXA_API mxa_status mxa_backend_count(const mxa_runtime *rt, int *count);

/** Information about backend `index` in [0, count). */
MXA_API mxa_status mxa_backend_get_info(const mxa_runtime *rt, int index, mxa_backend_info *info);

/* Device capability bits (mxa_device_info.caps). */
#define MXA_CAP_FP16 (1u << 0)       /* fp16 arithmetic in kernels */
#define MXA_CAP_INT8 (1u << 1)       /* int8 arithmetic in kernels */
#define MXA_CAP_INT_DOT (1u << 2)    /* packed int8 dot product (dp4a, VNNI) */
#define MXA_CAP_SUBGROUPS (1u << 3)  /* subgroup operations */
#define MXA_CAP_COOPMAT (1u << 4)    /* cooperative matrix / tensor cores / MFMA */
#define MXA_CAP_NATIVE_FP4 (1u << 5) /* native MXFP4 matrix instructions */
#define MXA_CAP_TIMESTAMPS (1u << 6) /* kernel timing from the device */
#define MXA_CAP_SIMD (1u << 7)       /* CPU vector ISA beyond the portable path */

typedef struct mxa_device_info {
    char id[32];                 /* "cpu", "vulkan:0", "opencl:1", "hip:0" */
    char backend[16];
    int index;                   /* within its backend */
    char name[MXA_NAME_LEN];
    char vendor[64];
    char driver[MXA_NAME_LEN];   /* driver name and version */
    uint64_t memory_bytes;
    uint32_t compute_units;      /* CUs / SMs / CPU threads */
    uint32_t subgroup_min, subgroup_max;
    uint64_t shared_memory_bytes;
    uint32_t caps;               /* MXA_CAP_* */
    char capabilities[MXA_REASON_LEN]; /* human-readable capability list */
    char variant[48];            /* kernel variant that would be chosen */
    char variant_reason[MXA_REASON_LEN];
    int default_bc;              /* key-tile size the chosen variant uses */
    int score;                   /* higher is preferred by "auto": attention GFLOP/s, estimated or
                                    measured (mxa_device_measure); 0 for the CPU backend unless measured;
                                    negative: never preferred (a CPU device behind a GPU API) */
    char score_reason[MXA_REASON_LEN]; /* what the score is: the estimate and its basis, or the measurement */
} mxa_device_info;

/** Number of devices over all present backends. */
MXA_API mxa_status mxa_device_count(const mxa_runtime *rt, int *count);

/** Information about device `index` in [0, count). */
MXA_API mxa_status mxa_device_get_info(const mxa_runtime *rt, int index, mxa_device_info *info);

/** Opens a device by id: "auto" (the best present device; MXA_DEVICE overrides),
 *  "cpu", "vulkan", "vulkan:0", "opencl:1", "hip:0". */
MXA_API mxa_status mxa_device_open(mxa_runtime *rt, const char *id, mxa_device **out);

/** Closes a device. Safe on NULL. */
MXA_API void mxa_device_close(mxa_device *dev);

/** Information about an opened device. */
MXA_API mxa_status mxa_device_info_of(const mxa_device *dev, mxa_device_info *info);

/** Measures the attention throughput of the variant the device runs by default
 *  (mxattention, B1 H8 D128 on device buffers, N doubled from 256, then H, until one
 *  call takes 10 ms; the median of 3 calls; about 0.1 to 1 s) and caches it keyed by
 *  the device, driver and variant: runtimes created later score the device by it for
 *  "auto" (mxa_device_info.score). `tflops` (may be NULL) receives the result. */
MXA_API mxa_status mxa_device_measure(mxa_device *dev, double *tflops);

/* ----------------------------------------------------------- device buffers */

/** Allocates `bytes` of device memory (host memory on the CPU backend). */
MXA_API mxa_status mxa_buffer_create(mxa_device *dev, size_t bytes, mxa_buffer **out);

/** Frees a buffer. Safe on NULL. */
MXA_API void mxa_buffer_destroy(mxa_buffer *buf);

/** Copies `bytes` from host `src` into the buffer at byte `offset`. */
MXA_API mxa_status mxa_buffer_upload(mxa_buffer *buf, size_t offset, const void *src, size_t bytes);

/** Copies `bytes` from the buffer at byte `offset` into host `dst`. */
MXA_API mxa_status mxa_buffer_download(const mxa_buffer *buf, size_t offset, void *dst, size_t bytes);

/* ------------------------------------------------------------ MXFP4 format */

typedef enum mxa_rule_kind {
    MXA_RULE_OCP = 0, /* e = floor(log2 M) - 2 (OCP MX v1.0) */
    MXA_RULE_CEIL = 1 /* e = min{k : M <= q 2^k}, q in [6, 8] */
} mxa_rule_kind;

/** A shared-exponent rule. TFS is CEIL with q = 6, UOS is CEIL with q = 7.25. */
typedef struct mxa_rule {
    mxa_rule_kind kind;
    float q; /* CEIL only */
} mxa_rule;

/** The rules by name. */
MXA_API mxa_rule mxa_rule_ocp(void);
MXA_API mxa_rule mxa_rule_tfs(void);
MXA_API mxa_rule mxa_rule_uos(void);

/** Parses "ocp", "tfs", "uos" or "q=<x>" (x in [6, 8]). */
MXA_API mxa_status mxa_rule_parse(const char *text, mxa_rule *out);

/** Writes the canonical name of a rule ("uos", "q=6.5") into `buf`. */
MXA_API mxa_status mxa_rule_name(mxa_rule rule, char *buf, size_t size);

#define MXA_BLOCK 32

/**
 * Quantizes `x` (shape [B,H,N,D], any dtype, host or device) to MXFP4 in
 * blocks of 32 along the last axis (a tail is zero-padded). Output, host
 * memory, row-major over the B*H*N rows:
 *   codes:  rows x (nblocks * 16) bytes, element 2k in the low nibble of byte k
 *   scales: rows x nblocks E8M0 bytes, nblocks = ceil(D / 32).
 * Bit-exact on every device. Non-finite blocks get scale 0xFF (SPEC §1).
 */
MXA_API mxa_status mxa_quantize(mxa_device *dev, const mxa_tensor *x, mxa_rule rule,
                                uint8_t *codes, uint8_t *scales);

/**
 * Decodes MXFP4 (the layout of mxa_quantize) to float32: `out` is rows x cols,
 * cols the logical row length (<= nblocks * 32). A 0xFF scale decodes to NaN.
 * Pure host function; needs no device.
 */
MXA_API mxa_status mxa_dequantize(const uint8_t *codes, const uint8_t *scales, int64_t rows,
                                  int64_t cols, float *out);

/* ------------------------------------------------------------ MXFP8 format */

/**
 * Quantizes `x` (as mxa_quantize) to MXFP8 E4M3 with the OCP floor rule, the
 * format of MXA_PV_MXFP8, in blocks of 32 along the last axis (a tail is
 * zero-padded). Output, host memory, row-major over the B*H*N rows:
 *   codes:  rows x (nblocks * 32) bytes, one per element, sign in bit 7
 *   scales: rows x nblocks E8M0 bytes.
 * Bit-exact on every device that has it (MXA_ERR_UNSUPPORTED otherwise).
 */
MXA_API mxa_status mxa_quantize_mxfp8(mxa_device *dev, const mxa_tensor *x, uint8_t *codes, uint8_t *scales);

/** Decodes MXFP8 (the layout of mxa_quantize_mxfp8) to float32 rows x cols; a
 *  0xFF scale decodes to NaN. Pure host function. */
MXA_API mxa_status mxa_dequantize_mxfp8(const uint8_t *codes, const uint8_t *scales, int64_t rows,
                                        int64_t cols, float *out);

/* -------------------------------------------------------------- attention */

typedef enum mxa_placement {
    MXA_PLACEMENT_PNQ = 0,   /* l accumulates the quantized P^ (MXAttention) */
    MXA_PLACEMENT_DIRECT = 1 /* l accumulates the unquantized P~ (OCP baseline) */
} mxa_placement;

/* Which tensors are quantized (mxa_attention_desc.quantize). */
#define MXA_QUANT_QK (1u << 0)
#define MXA_QUANT_V (1u << 1)
#define MXA_QUANT_P (1u << 2)
#define MXA_QUANT_ALL (MXA_QUANT_QK | MXA_QUANT_V | MXA_QUANT_P)

/* The 4-bit format of every quantizer. NVFP4 (16-element blocks, E4M3 block
 * scales, an fp32 tensor scale) is a comparison baseline from the paper: the
 * CPU device runs it through the reference; other devices return
 * MXA_ERR_UNSUPPORTED. */
typedef enum mxa_format {
    MXA_FORMAT_MXFP4 = 0,
    MXA_FORMAT_NVFP4 = 1
} mxa_format;

/* The format of P and V in the P V product (mxa_attention_desc.pv_format). MXFP8 is OCP
 * MXFP8 with E4M3 elements and the floor rule whatever desc->rule says (README, "MXFP8");
 * Q and K stay MXFP4. Devices or kernel variants without it return MXA_ERR_UNSUPPORTED. */
typedef enum mxa_pv_format {
    MXA_PV_MXFP4 = 0, /* the paper's (default): MXFP4 with desc->rule */
    MXA_PV_MXFP8 = 1  /* MXFP8 E4M3, e = floor(log2 M) - 8 */
} mxa_pv_format;

typedef enum mxa_recipe {
    MXA_RECIPE_MXATTENTION = 0, /* Hadamard + UOS + PNQ (default) */
    MXA_RECIPE_OCP_DIRECT = 1,  /* OCP rule, no rotation, direct placement */
    MXA_RECIPE_FP32 = 2,        /* no quantization: the accuracy reference */
    MXA_RECIPE_MXATTENTION_FP8PV = 3 /* mxattention with P and V in MXFP8 (MXA_PV_MXFP8) */
} mxa_recipe;

/* mxa_attention_desc.causal: which keys a query row sees (Nq query rows, Nk keys). */
#define MXA_CAUSAL_NONE 0
#define MXA_CAUSAL_BOTTOM_RIGHT 1 /* key j visible to row i iff j <= i + Nk - Nq (the last row sees every key) */
#define MXA_CAUSAL_TOP_LEFT 2     /* key j visible to row i iff j <= i (torch's is_causal) */

/** Every switch of SPEC §2. Start from mxa_attention_desc_init(), then override. */
typedef struct mxa_attention_desc {
    int hadamard;            /* rotate Q and K by the orthonormal Walsh-Hadamard matrix */
    mxa_rule rule;           /* shared-exponent rule for every quantizer */
    mxa_placement placement; /* where P is quantized relative to the row sum */
    uint32_t quantize;       /* MXA_QUANT_* bits; 0 = fp32 attention */
    float scale;             /* softmax scale; 0 = 1/sqrt(D) */
    int causal;              /* MXA_CAUSAL_*: 0 none, 1 bottom-right aligned, 2 top-left aligned */
    int bc;                  /* key-tile size, multiple of 32; 0 = the device's default */
    int allow_non_finite;    /* 1: let NaN/Inf propagate instead of rejecting them */
    mxa_format format;       /* MXFP4 (default) or the NVFP4 baseline */
    int smooth;              /* NVFP4 only: SageAttention-style Q/K smoothing and two-level P scaling */
    /* Optional inputs (NULL = none; read when the call is made, or recorded): */
    const mxa_tensor *bias;      /* additive float bias [B|1, H|1, Nq, Nk] (1 = broadcast), added to the
                                    scaled scores before the running maximum; -inf hides a key */
    const mxa_tensor *mask;      /* MXA_BOOL [B|1, H|1, Nq, Nk]: 0 hides key j from row i (P~ = 0) */
    const int32_t *key_lengths;  /* host array of B lengths in [0, Nk]: batch b has only its first
                                    key_lengths[b] keys, exactly as if it were called alone with that Nk
                                    (V blocks zero-padded there; bottom-right causal aligns to it) */
    const struct mxa_kv *kv;     /* pre-quantized K and V (mxa_prepare_kv) used instead of k and v,
                                    which are then NULL */
    mxa_pv_format pv_format;     /* P and V: MXFP4 (default) or MXFP8; MXFP4 format only */
} mxa_attention_desc;

/** Fills `desc` with a named recipe's switches; scale 0, non-causal, bc 0. */
MXA_API mxa_status mxa_attention_desc_init(mxa_attention_desc *desc, mxa_recipe recipe);

/** Parses "mxattention", "ocp-direct", "fp32" or "mxattention-fp8pv" into a recipe. */
MXA_API mxa_status mxa_recipe_parse(const char *text, mxa_recipe *out);

/** The name of a recipe ("mxattention"). Never NULL. */
MXA_API const char *mxa_recipe_name(mxa_recipe recipe);

/** What a call did (optional out-parameter of mxa_attention). */
typedef struct mxa_attention_info {
    int bc;                  /* key-tile size used (PNQ results depend on it) */
    char variant[48];        /* kernel variant that ran */
    double kernel_seconds;   /* device-measured time, or host wall time; < 0 if unknown */
} mxa_attention_info;

/**
 * MXAttention forward: o = softmax(q k^T * scale + bias) v with the recipe of `desc`.
 *   q: [B, H, Nq, D]; k, v: [B, Hkv, Nk, D] with Hkv dividing H (GQA);
 *   o: [B, H, Nq, D], any dtype (in a device buffer: f32, f16 or bf16, rounded once from
 *   f32); lse (may be NULL): [B, H, Nq, 1] float32, host or device buffer,
 *   per-row m + ln(l) (-inf for a row with no visible key; its o row is 0).
 * q, k and v in device buffers may be float32, float16 or bfloat16 (each its own; on the cpu,
 * vulkan and opencl backends: hip takes float32), read as their exact float32 values: the
 * result is that of float32 tensors of the same values, bit for bit (no conversion pass
 * needed). Host inputs of any dtype are converted on the host.
 * A bias in a device buffer is float32.
 * D must be a multiple of 32; with Hadamard on, one of 32, 64, 128, 256.
 * Host inputs are rejected if non-finite (unless desc->allow_non_finite); device-buffer
 * inputs are not read back to be checked.
 * On failure the outputs are left untouched. `info` may be NULL.
 */
MXA_API mxa_status mxa_attention(mxa_device *dev, const mxa_attention_desc *desc,
                                 const mxa_tensor *q, const mxa_tensor *k, const mxa_tensor *v,
                                 mxa_tensor *o, mxa_tensor *lse, mxa_attention_info *info);

/* ------------------------------------------------------- asynchronous calls */

typedef struct mxa_event mxa_event;

/**
 * mxa_attention without waiting: returns once the work is submitted, with an event that
 * completes when the outputs are written (host outputs are written by mxa_event_wait).
 * Inputs must stay unchanged and outputs untouched until the event completes. The CPU
 * device computes before returning (its event is complete). A later call on the same
 * device waits for this one first (one queue). `info` is filled by mxa_event_wait.
 */
MXA_API mxa_status mxa_attention_async(mxa_device *dev, const mxa_attention_desc *desc,
                                       const mxa_tensor *q, const mxa_tensor *k, const mxa_tensor *v,
                                       mxa_tensor *o, mxa_tensor *lse, mxa_event **event);

/** Waits for an event; `info` (may be NULL) receives what the call did. Waiting twice is fine. */
MXA_API mxa_status mxa_event_wait(mxa_event *event, mxa_attention_info *info);

/** Destroys an event, waiting for it first if it is still running. Safe on NULL. */
MXA_API void mxa_event_destroy(mxa_event *event);

/* ------------------------------------------------------ pre-quantized K/V */

typedef struct mxa_kv mxa_kv;

/**
 * K and V quantized once, kept on the device: an engine's 4-bit KV cache, reused across
 * query blocks or steps. K is rotated (desc->hadamard) and quantized along D, V along
 * tokens (stored as V^T, zero-padded after each batch's desc->key_lengths), with desc's
 * rule, in the layout mxa_quantize documents (4.25 bits per value: 7.5x smaller than
 * float32). The codes are computed on the host by the bit-exact quantizer of SPEC §1 (k and
 * v may be host or device tensors) and uploaded once. Pass the result as desc->kv, with
 * k = v = NULL, to attention whose desc has the same hadamard, rule, Q/K and V quantization
 * and key lengths (checked): the result is bit-identical to passing the float32 k and v.
 * Needs a recipe that quantizes Q/K and V (MXA_ERR_UNSUPPORTED otherwise). Destroy it before
 * closing its device.
 */
MXA_API mxa_status mxa_prepare_kv(mxa_device *dev, const mxa_attention_desc *desc, const mxa_tensor *k,
                                  const mxa_tensor *v, mxa_kv **out);

/** Bytes of device memory a prepared K/V holds (codes and scales). */
MXA_API mxa_status mxa_kv_bytes(const mxa_kv *kv, size_t *bytes);

/** Frees a prepared K/V. Safe on NULL. */
MXA_API void mxa_kv_destroy(mxa_kv *kv);

/* ------------------------------------------------------------ reference */

/**
 * The reference MXAttention of SPEC §2 (plain, slow, host only): the
 * definition every backend is tested against. `bc` is required (> 0,
 * multiple of 32). Same tensor rules as mxa_attention; host tensors only.
 * If `row_sums` is non-NULL it receives, per row (B*H*Nq floats), the sum of
 * the attention weights the output was built from: exactly what PNQ makes 1
 * and direct placement does not (the row sum direct placement would induce
 * is computed when desc->placement is DIRECT).
 */
MXA_API mxa_status mxa_reference_attention(const mxa_attention_desc *desc, int bc,
                                           const mxa_tensor *q, const mxa_tensor *k,
                                           const mxa_tensor *v, mxa_tensor *o, mxa_tensor *lse,
                                           float *row_sums);

#ifdef __cplusplus
}
#endif

#endif /* MXA_MXA_H */
