/*
 * Preloaded into the ASan test runs only (LD_PRELOAD in the asan test preset; never part of
 * mxa): a dlclose that leaves lavapipe mapped. Mesa 22.3's CPU detection in lavapipe (the
 * L3 cache masks of AMD Zen CPUs) keeps 128 bytes in a global; when the Vulkan loader
 * unloads the driver at vkDestroyInstance that global vanishes and LeakSanitizer reports a
 * leak from an "<unknown module>", which no suppression can name (ASan's fast unwinder
 * stops at the driver, and full unwinding deadlocks in libgcc under lavapipe's JIT).
 * Kept mapped, the memory stays reachable and every real leak is still reported.
 */
#define _GNU_SOURCE /* dlinfo, RTLD_NEXT */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

int dlclose(void *handle)
{
    static int (*real_dlclose)(void *);
    if (!real_dlclose) {
        void *sym = dlsym(RTLD_NEXT, "dlclose");
        memcpy(&real_dlclose, &sym, sizeof real_dlclose); /* POSIX: object -> function pointer */
    }
    struct link_map *map = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && strstr(map->l_name, "libvulkan_lvp"))
        return 0;
    return real_dlclose ? real_dlclose(handle) : -1;
}
