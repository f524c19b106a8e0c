/*
 * LD_PRELOAD stand-in for a driver that crashes inside a kernel: mxa_attention
 * aborts on devices of the backend named by CONFORM_CRASH_BACKEND and forwards
 * to the library otherwise. conform_py_isolate runs `mxa conform` over several
 * backends with it: the crashing backend's child dies mid-test, is reported as
 * a failure, and the other backends' results still come through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "mxa/mxa.h"

typedef mxa_status (*attention_fn)(mxa_device *, const mxa_attention_desc *, const mxa_tensor *, const mxa_tensor *,
                                   const mxa_tensor *, mxa_tensor *, mxa_tensor *, mxa_attention_info *);

MXA_API mxa_status mxa_attention(mxa_device *dev, const mxa_attention_desc *desc, const mxa_tensor *q,
                                 const mxa_tensor *k, const mxa_tensor *v, mxa_tensor *o, mxa_tensor *lse,
                                 mxa_attention_info *info)
{
    const char *crash = getenv("CONFORM_CRASH_BACKEND");
    mxa_device_info di;
    if (crash && mxa_device_info_of(dev, &di) == MXA_OK && strcmp(di.backend, crash) == 0) abort();
    attention_fn next = (attention_fn)(void (*)(void))dlsym(RTLD_NEXT, "mxa_attention");
    return next ? next(dev, desc, q, k, v, o, lse, info) : MXA_ERR_INTERNAL;
}
