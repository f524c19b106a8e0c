// The emulator's thread pool and barrier, and the table of emulated kernels the
// test double dispatches launches to (FAKE_HIP_EMULATE=1).
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "hip_emu.h"

thread_local mxa_emu_ctx mxa_emu;
static pthread_barrier_t barrier;

void mxa_emu_sync()
{
    pthread_barrier_wait(&barrier);
}

void mxa_emu_run(unsigned gx, unsigned gy, unsigned gz, unsigned threads, const std::function<void()> &body)
{
    pthread_barrier_init(&barrier, nullptr, threads);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; t++)
        pool.emplace_back([&, t] {
            for (unsigned z = 0; z < gz; z++)
                for (unsigned y = 0; y < gy; y++)
                    for (unsigned x = 0; x < gx; x++) {
                        mxa_emu = {(int)t, (long long)x, (int)y, (int)z};
                        body();
                        mxa_emu_sync(); /* the next workgroup reuses the LDS statics */
                    }
        });
    for (auto &th : pool) th.join();
    pthread_barrier_destroy(&barrier);
}

typedef void (*emu_attention_fn)(unsigned, unsigned, unsigned, unsigned, const void *);
extern "C" void emu_prep(const char *fn, unsigned gx, unsigned threads, const void *args);
#define EMU_CONFIG(name, d, bc, variant, k16, extras, out) \
    extern "C" void name(unsigned, unsigned, unsigned, unsigned, const void *);
#include "emu_configs.h"
#undef EMU_CONFIG

static const struct {
    int d, bc, variant, k16, extras, out;
    emu_attention_fn fn;
} configs[] = {
#define EMU_CONFIG(name, d, bc, variant, k16, extras, out) {d, bc, variant, k16, extras, out, name},
#include "emu_configs.h"
#undef EMU_CONFIG
};

static int option(const char *image, const char *name)
{
    const char *p = std::strstr(image, name);
    return p ? std::atoi(p + std::strlen(name)) : -1;
}

static emu_attention_fn find(const char *image)
{
    const int d = option(image, "-DMXA_D="), bc = option(image, "-DMXA_BC="), v = option(image, "-DMXA_VARIANT="),
              k16 = option(image, "-DMXA_MFMA_K16="), x = option(image, "-DMXA_EXTRAS="),
              out = option(image, "-DMXA_OUT=");
    for (const auto &c : configs)
        if (c.d == d && c.bc == bc && c.variant == v && (v != 1 || c.k16 == k16) && c.extras == x && c.out == out)
            return c.fn;
    std::fprintf(stderr, "fake_emu: no emulated mxa_attention for D=%d BC=%d variant=%d k16=%d extras=%d out=%d\n", d,
                 bc, v, k16, x, out);
    return nullptr;
}

// 0 when a launch of `fn` from the module `image` can run here, else 500 (hipErrorNotFound).
extern "C" int fake_emu_known(const char *fn, const char *image);
extern "C" int fake_emu_known(const char *fn, const char *image)
{
    return std::strcmp(fn, "mxa_attention") != 0 || find(image) ? 0 : 500;
}

// Runs a launch on the host (the double asked fake_emu_known first).
extern "C" int fake_emu_launch(const char *fn, const char *image, unsigned gx, unsigned gy, unsigned gz,
                               unsigned threads, void **params);
extern "C" int fake_emu_launch(const char *fn, const char *image, unsigned gx, unsigned gy, unsigned gz,
                               unsigned threads, void **params)
{
    if (std::strcmp(fn, "mxa_attention") != 0) {
        emu_prep(fn, gx, threads, params[0]);
        return 0;
    }
    const emu_attention_fn f = find(image);
    if (!f) return 500;
    f(gx, gy, gz, threads, params[0]);
    return 0;
}
