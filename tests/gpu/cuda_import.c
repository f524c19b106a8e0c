/*
 * Exported mxa memory read by CUDA (issue 17): mxa's attention writes its output into an
 * exportable Vulkan buffer; the opaque fd is imported with the CUDA driver API
 * (libcuda.so.1, loaded at run time: no CUDA toolkit needed to build) and the bytes CUDA
 * reads must be the bytes mxa_buffer_download reads. A tool for the NVIDIA machine.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mxa/mxa_vulkan.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUexternalMemory;
typedef unsigned long long CUdeviceptr;
typedef struct { /* CUDA_EXTERNAL_MEMORY_HANDLE_DESC */
    int type;     /* CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD = 1 */
    union {
        int fd;
        struct {
            void *handle;
            const void *name;
        } win32;
        const void *nvSciBufObject;
    } handle;
    unsigned long long size;
    unsigned int flags;
    unsigned int reserved[16];
} cu_ext_mem_desc;
typedef struct { /* CUDA_EXTERNAL_MEMORY_BUFFER_DESC */
    unsigned long long offset, size;
    unsigned int flags;
    unsigned int reserved[16];
} cu_ext_buf_desc;

int main(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) {
        fprintf(stderr, "cuda_import: no libcuda.so.1\n");
        return 1;
    }
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuImportExternalMemory)(CUexternalMemory *, const cu_ext_mem_desc *);
    CUresult (*cuExternalMemoryGetMappedBuffer)(CUdeviceptr *, CUexternalMemory, const cu_ext_buf_desc *);
    CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
    CUresult (*cuDestroyExternalMemory)(CUexternalMemory);
#define SYM(name)                                               \
    do {                                                        \
        void *s = dlsym(cuda, #name);                           \
        memcpy(&name, &s, sizeof name);                         \
        if (!s) {                                               \
            fprintf(stderr, "cuda_import: no %s\n", #name);     \
            return 1;                                           \
        }                                                       \
    } while (0)
    SYM(cuInit);
    SYM(cuDeviceGet);
    SYM(cuDevicePrimaryCtxRetain);
    SYM(cuCtxSetCurrent);
    SYM(cuImportExternalMemory);
    SYM(cuExternalMemoryGetMappedBuffer);
    SYM(cuMemcpyDtoH_v2);
    SYM(cuDestroyExternalMemory);
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    if (mxa_runtime_create(NULL, &rt) || mxa_device_open(rt, "vulkan:0", &dev)) {
        fprintf(stderr, "cuda_import: %s\n", mxa_last_error_message());
        return 1;
    }
    enum { B = 1, H = 8, N = 512, D = 128 };
    const size_t elems = (size_t)B * H * N * D, bytes = elems * 4;
    float *x = malloc(bytes), *via_mxa = malloc(bytes), *via_cuda = malloc(bytes);
    for (size_t i = 0; i < elems; i++) x[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    mxa_buffer *ob = NULL;
    mxa_tensor q, o;
    mxa_tensor_init(&q, MXA_F32, B, H, N, D, x);
    mxa_tensor_init(&o, MXA_F32, B, H, N, D, x);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    int fd = -1;
    uint64_t alloc = 0;
    if (mxa_vulkan_buffer_create_exportable(dev, bytes, &ob)) goto fail;
    o.data = NULL;
    o.buffer = ob;
    if (mxa_attention(dev, &desc, &q, &q, &q, &o, NULL, NULL) || mxa_buffer_download(ob, 0, via_mxa, bytes) ||
        mxa_vulkan_buffer_export_fd(ob, &fd, &alloc))
        goto fail;
    CUdevice cdev;
    CUcontext cctx;
    CUexternalMemory ext;
    CUdeviceptr ptr;
    cu_ext_mem_desc md;
    memset(&md, 0, sizeof md);
    md.type = 1;
    md.handle.fd = fd; /* CUDA owns the fd once the import succeeds */
    md.size = alloc;
    cu_ext_buf_desc bd;
    memset(&bd, 0, sizeof bd);
    bd.size = bytes;
    CUresult r = cuInit(0);
    if (!r) r = cuDeviceGet(&cdev, 0);
    if (!r) r = cuDevicePrimaryCtxRetain(&cctx, cdev);
    if (!r) r = cuCtxSetCurrent(cctx);
    if (!r) r = cuImportExternalMemory(&ext, &md);
    if (!r) r = cuExternalMemoryGetMappedBuffer(&ptr, ext, &bd);
    if (!r) r = cuMemcpyDtoH_v2(via_cuda, ptr, bytes);
    if (r) {
        fprintf(stderr, "cuda_import: CUDA driver call failed: %d\n", r);
        return 1;
    }
    const int same = memcmp(via_mxa, via_cuda, bytes) == 0;
    printf("cuda_import: mxa attention output (%zu bytes, allocation %llu) read through CUDA: %s\n", bytes,
           (unsigned long long)alloc, same ? "identical" : "DIFFERENT");
    cuDestroyExternalMemory(ext);
    mxa_buffer_destroy(ob);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    free(x);
    free(via_mxa);
    free(via_cuda);
    return same ? 0 : 1;
fail:
    fprintf(stderr, "cuda_import: %s\n", mxa_last_error_message());
    return 1;
}
