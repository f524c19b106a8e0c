/* Helpers of the HIP host-side tests (the test double's environment and log). */
#ifndef MXA_TESTS_HIP_FAKE_UTIL_H
#define MXA_TESTS_HIP_FAKE_UTIL_H

#include "mxa/mxa.h"

extern char fake_tmpdir[256], fake_logpath[300];

/* Creates the temporary cache/log directory; fake_end removes it. */
int fake_begin(void);
void fake_end(void);

/* Points the backend at the double library `lib` (hiprtc from the plain
 * double), clears every FAKE_ and MXA_ switch, empties the log. */
void use_fake(const char *lib);

/* Lines of the double's log starting with `prefix`; whether any contains `text`. */
int log_count(const char *prefix);
int log_has(const char *text);

/* A fresh runtime; the hip backend's info and (if d) its first device's. */
mxa_runtime *probe(mxa_backend_info *b, mxa_device_info *d);
void hip_info(mxa_runtime *rt, mxa_backend_info *info);

/* A small attention (B=1, H=2, Hkv=1, Nq=40, Nk=70, D=64) on hip:0. */
mxa_status run_attention(mxa_recipe recipe, int bc, mxa_attention_info *info, float *out);

#endif
