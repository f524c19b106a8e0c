/* The mxa_attention configurations built for the emulator:
 * EMU_CONFIG(function, D, BC, variant, K16, EXTRAS). tests/hip/CMakeLists.txt builds one
 * object per line (it reads this file). EXTRAS = 1: the build that reads the bias,
 * mask and key lengths (-DMXA_EXTRAS=1). */
EMU_CONFIG(emu_scalar_64_64, 64, 64, 0, 0, 0)
EMU_CONFIG(emu_scalar_64_96, 64, 96, 0, 0, 0)
EMU_CONFIG(emu_scalar_32_32, 32, 32, 0, 0, 0)
EMU_CONFIG(emu_i8k16_64_64, 64, 64, 1, 1, 0)
EMU_CONFIG(emu_i8k8_64_64, 64, 64, 1, 0, 0)
EMU_CONFIG(emu_i8k16_128_128, 128, 128, 1, 1, 0)
EMU_CONFIG(emu_fp4_64_64, 64, 64, 2, 1, 0)
EMU_CONFIG(emu_fp4_32_32, 32, 32, 2, 1, 0)
EMU_CONFIG(emu_fp4_64_96, 64, 96, 2, 1, 0)
EMU_CONFIG(emu_scalar_64_64_x, 64, 64, 0, 0, 1)
EMU_CONFIG(emu_scalar_32_32_x, 32, 32, 0, 0, 1)
EMU_CONFIG(emu_i8k16_64_64_x, 64, 64, 1, 1, 1)
EMU_CONFIG(emu_i8k8_64_64_x, 64, 64, 1, 0, 1)
EMU_CONFIG(emu_fp4_64_64_x, 64, 64, 2, 1, 1)
