/*
 * Vulkan kernel selection on a capability profile, without a driver: no Vulkan header
 * needed (the embedding API is <mxa/mxa_vulkan.h>, which includes this one).
 */
#ifndef MXA_MXA_VULKAN_PROFILE_H
#define MXA_MXA_VULKAN_PROFILE_H

#include "mxa/mxa.h"

#ifdef __cplusplus
extern "C" {
#endif

/* flags of mxa_vulkan_profile_plan: the switches of the same names */
#define MXA_VULKAN_PLAN_DISABLE_COOPMAT 1u /* MXA_DISABLE_COOPMAT=1 */
#define MXA_VULKAN_PLAN_DISABLE_INT_DOT 2u /* MXA_DISABLE_INT_DOT=1 */

/** What the Vulkan backend would run on the device a capability profile describes
 *  (tests/vulkan/profiles/README.md: the format), for attention with head dimension
 *  `head_dim`, Bc 64 and every tensor quantized: selection only, nothing runs and no
 *  driver is loaded. `kernel` is what MXA_KERNEL would say (NULL: auto); the environment
 *  is not read. On success `variant` holds the variant's name and `detail` four lines
 *  "device: ...", "shapes: ...", "workgroup: ...", "why: ..." (each cut to fit).
 *  MXA_ERR_FORMAT for a malformed profile (the message names the key),
 *  MXA_ERR_INVALID_ARGUMENT for a NULL text or output, or head_dim outside 1..4096,
 *  MXA_ERR_UNSUPPORTED when this library was built without the Vulkan backend. */
MXA_API mxa_status mxa_vulkan_profile_plan(const char *json_text, int64_t head_dim, const char *kernel,
                                           unsigned flags, char *variant, size_t variant_size, char *detail,
                                           size_t detail_size);

#ifdef __cplusplus
}
#endif

#endif
