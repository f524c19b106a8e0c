// mxa_prep.hip compiled for the host emulator.
#include "hip_emu.h"

namespace {
#include "mxa_prep.hip"
}

extern "C" void emu_prep(const char *fn, unsigned gx, unsigned threads, const void *args);
extern "C" void emu_prep(const char *fn, unsigned gx, unsigned threads, const void *args)
{
    if (std::strcmp(fn, "mxa_quantize_rows") == 0) {
        mxa_hip_quant_args a;
        std::memcpy(&a, args, sizeof a);
        mxa_emu_run(gx, 1, 1, threads, [&] { mxa_quantize_rows(a); });
        return;
    }
    mxa_hip_prep_args a;
    std::memcpy(&a, args, sizeof a);
    if (std::strcmp(fn, "mxa_prep_qk") == 0) mxa_emu_run(gx, 1, 1, threads, [&] { mxa_prep_qk(a); });
    else mxa_emu_run(gx, 1, 1, threads, [&] { mxa_prep_v(a); });
}
