/* Which instruction set the CPU kernels use: cpuid, the OS, MXA_CPU_ISA. */
#ifndef MXA_CPU_ISA_H
#define MXA_CPU_ISA_H

#include <stddef.h>

#include "cpu_kernels.h"

typedef enum cpu_isa { CPU_ISA_PORTABLE = 0, CPU_ISA_AVX2 = 1, CPU_ISA_AVX512 = 2, CPU_ISA_AMX = 3 } cpu_isa;
#define CPU_ISA_COUNT 4

/* 1 if this machine (CPU and OS) can run the path. */
int cpu_isa_supported(cpu_isa isa);

/* "portable", "avx2", "avx512", "amx" (the MXA_CPU_ISA spellings). */
const char *cpu_isa_name(cpu_isa isa);

/* The best supported path, or the one MXA_CPU_ISA asks for (falling back,
 * with the reason saying so, when this machine cannot run it). */
cpu_isa cpu_isa_select(char *reason, size_t reason_size);

/* The kernel table of a supported path. */
const cpu_kernels *cpu_isa_kernels(cpu_isa isa);

#endif
