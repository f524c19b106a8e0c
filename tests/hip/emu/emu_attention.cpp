// One configuration of mxa_attention.hip (-DMXA_D, -DMXA_BC, -DMXA_VARIANT,
// -DMXA_MFMA_K16, -DEMU_NAME) compiled for the host emulator.
#include "hip_emu.h"

namespace {
#include "mxa_attention.hip"
}

extern "C" void EMU_NAME(unsigned gx, unsigned gy, unsigned gz, unsigned threads, const void *args);
extern "C" void EMU_NAME(unsigned gx, unsigned gy, unsigned gz, unsigned threads, const void *args)
{
    mxa_hip_attn_args a;
    std::memcpy(&a, args, sizeof a);
    mxa_emu_run(gx, gy, gz, threads, [&] { mxa_attention(a); });
}
