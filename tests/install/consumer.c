/* A program outside the mxa tree: built against an installed mxa, through
 * find_package(mxa) and through pkg-config (tests/install/check.sh). */
#include <mxa/mxa.h>
#include <stdio.h>
int main(void) {
    mxa_runtime *rt; int n = 0;
    if (mxa_runtime_create(NULL, &rt) != MXA_OK) return 1;
    mxa_device_count(rt, &n);
    printf("mxa %s: %d device(s)\n", mxa_version_string(), n);
    mxa_runtime_destroy(rt);
    return n > 0 ? 0 : 1;
}
