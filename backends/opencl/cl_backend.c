/* The OpenCL backend's vtable (see runtime/backend.h). */
#include "cl_internal.h"

const mxa_backend_ops mxa_opencl_backend = {
    .name = "opencl",
    .extras = MXA_EXTRA_BIAS | MXA_EXTRA_MASK | MXA_EXTRA_KEY_LENGTHS | MXA_EXTRA_CAUSAL_TOP_LEFT | MXA_EXTRA_OUT_HALF |
              MXA_EXTRA_LSE_BUFFER | MXA_EXTRA_KV | MXA_EXTRA_PV_MXFP8 | MXA_EXTRA_IN_HALF,
    .probe = mxa_cl_probe,
    .release = mxa_cl_release,
    .open = mxa_cl_open,
    .close = mxa_cl_close,
    .buffer_create = mxa_cl_buffer_create,
    .buffer_destroy = mxa_cl_buffer_destroy,
    .buffer_upload = mxa_cl_buffer_upload,
    .buffer_download = mxa_cl_buffer_download,
    .quantize = mxa_cl_quantize,
    .attention = mxa_cl_attention,
    .attention_submit = mxa_cl_attention_submit,
    .attention_wait = mxa_cl_attention_wait,
    .quantize_mxfp8 = mxa_cl_quantize_mxfp8,
};
