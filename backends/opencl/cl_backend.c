/* The OpenCL backend's vtable (see runtime/backend.h). */
#include "cl_internal.h"

const mxa_backend_ops mxa_opencl_backend = {
    .name = "opencl",
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
};
