/* mxa_quantize (MXFP4) and mxa_quantize_mxfp8 on an OpenCL device: one work-item per 32-element
 * block, bit-exact with the reference. */
#include <string.h>

#include "cl_internal.h"
#include "status.h"

cl_rule_args mxa_cl_rule_args(mxa_rule rule)
{
    cl_rule_args r = {0, 0u, 0};
    if (rule.kind == MXA_RULE_CEIL) {
        /* bump iff m > q/4, i.e. fraction bits > q 2^21 - 2^23 (exact: q in [6, 8] has ulp 2^-21) */
        r.ceil_rule = 1;
        r.thr = (cl_uint)(rule.q * 2097152.0f) - 8388608u;
        r.pow2_dec = rule.q == 8.0f;
    }
    return r;
}

/* MXFP4 under `rule` (16 code bytes per block), or MXFP8 when fp8 (32 code bytes per block). */
static mxa_status quantize_rows(cl_impl *d, const mxa_array *x, mxa_rule rule, int fp8, uint8_t *codes, uint8_t *scales)
{
    const int64_t rows64 = x->b * x->h * x->n, cols64 = x->d;
    if (rows64 > INT32_MAX || cols64 > INT32_MAX / 2)
        return mxa_fail(MXA_ERR_UNSUPPORTED, "opencl quantize: %lld x %lld is too large for one launch",
                        (long long)rows64, (long long)cols64);
    const cl_int rows = (cl_int)rows64, cols = (cl_int)cols64, nblocks = (cols + 31) / 32;
    const size_t code_bytes = (size_t)rows * nblocks * (fp8 ? 32 : 16);
    const char *name = fp8 ? "mxa_quantize_rows_fp8" : "mxa_quantize_rows";
    const cl_rule_args ra = mxa_cl_rule_args(rule);
    cl_mem in = NULL, mcodes = NULL, mscales = NULL;
    cl_ulong off = 0;
    cl_program prog = NULL;
    cl_kernel k = NULL;
    mxa_status st;
    mxa_cl_sync(d);
    if ((st = mxa_cl_array_in(d, x, SCRATCH_Q, &in, &off)) ||
        (st = mxa_cl_scratch(d, SCRATCH_QS, code_bytes, &mcodes)) ||
        (st = mxa_cl_scratch(d, SCRATCH_KS, (size_t)rows * nblocks, &mscales)) ||
        (st = mxa_cl_program(d, CL_FAMILY_PREP, "-cl-std=CL1.2", &prog)) ||
        (st = mxa_cl_kernel(d, prog, name, &k)))
        goto out;
    cl_args a = {d->cl, k, 0, CL_SUCCESS};
    mxa_cl_arg(&a, sizeof in, &in);
    mxa_cl_arg(&a, sizeof off, &off);
    mxa_cl_arg(&a, sizeof rows, &rows);
    mxa_cl_arg(&a, sizeof cols, &cols);
    mxa_cl_arg(&a, sizeof nblocks, &nblocks);
    if (!fp8) {
        mxa_cl_arg(&a, sizeof ra.ceil_rule, &ra.ceil_rule);
        mxa_cl_arg(&a, sizeof ra.thr, &ra.thr);
        mxa_cl_arg(&a, sizeof ra.pow2_dec, &ra.pow2_dec);
    }
    mxa_cl_arg(&a, sizeof mcodes, &mcodes);
    mxa_cl_arg(&a, sizeof mscales, &mscales);
    const size_t global[2] = {(size_t)nblocks, (size_t)rows};
    if ((st = mxa_cl_launch(d, &a, 2, global, NULL, NULL, NULL, name))) goto out;
    cl_int err = d->cl->EnqueueReadBuffer(d->queue, mcodes, CL_TRUE, 0, code_bytes, codes, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = d->cl->EnqueueReadBuffer(d->queue, mscales, CL_TRUE, 0, (size_t)rows * nblocks, scales, 0, NULL, NULL);
    if (err != CL_SUCCESS) st = mxa_cl_fail(err, "clEnqueueReadBuffer (codes)");
out:
    d->cl->Finish(d->queue); /* the host input must outlive any queued upload */
    if (k) d->cl->ReleaseKernel(k);
    return st;
}

mxa_status mxa_cl_quantize(void *impl, const mxa_array *x, mxa_rule rule, uint8_t *codes, uint8_t *scales)
{
    return quantize_rows(impl, x, rule, 0, codes, scales);
}

mxa_status mxa_cl_quantize_mxfp8(void *impl, const mxa_array *x, uint8_t *codes, uint8_t *scales)
{
    return quantize_rows(impl, x, mxa_rule_ocp(), 1, codes, scales);
}
