/*
 * Run-time instruction-set selection. AVX-512 needs the CPU bits (F, BW,
 * VNNI) and the OS saving zmm state (XCR0); AVX2 needs AVX2, FMA and ymm
 * state. Anything else, or a non-x86 build, gets the portable C path.
 */
#include <stdio.h>
#include <string.h>

#include "../../runtime/env.h"
#include "cpu_isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xgetbv0(void)
{
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

int cpu_isa_supported(cpu_isa isa)
{
    unsigned int a, b, c, d;
    if (isa == CPU_ISA_PORTABLE) return 1;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1;
    if (!osxsave) return 0;
    const unsigned long long xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return 0; /* xmm and ymm state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    const int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1, avx512bw = (b >> 30) & 1, vnni = (c >> 11) & 1;
    if (isa == CPU_ISA_AVX2) return avx2 && fma;
    return avx2 && fma && avx512f && avx512bw && vnni && (xcr0 & 0xe0) == 0xe0; /* opmask, zmm state */
}

const cpu_kernels *cpu_isa_kernels(cpu_isa isa)
{
    if (isa == CPU_ISA_AVX512) return &cpu_kernels_avx512;
    if (isa == CPU_ISA_AVX2) return &cpu_kernels_avx2;
    return &cpu_kernels_portable;
}
#else
int cpu_isa_supported(cpu_isa isa)
{
    return isa == CPU_ISA_PORTABLE;
}

const cpu_kernels *cpu_isa_kernels(cpu_isa isa)
{
    (void)isa;
    return &cpu_kernels_portable;
}
#endif

const char *cpu_isa_name(cpu_isa isa)
{
    return isa == CPU_ISA_AVX512 ? "avx512" : isa == CPU_ISA_AVX2 ? "avx2" : "portable";
}

cpu_isa cpu_isa_select(char *reason, size_t reason_size)
{
    cpu_isa best = cpu_isa_supported(CPU_ISA_AVX512) ? CPU_ISA_AVX512
                   : cpu_isa_supported(CPU_ISA_AVX2) ? CPU_ISA_AVX2
                                                     : CPU_ISA_PORTABLE;
    const char *want = mxa_env_string("MXA_CPU_ISA");
    if (!want) {
        snprintf(reason, reason_size, "%s", best == CPU_ISA_AVX512 ? "cpuid: AVX-512 F/BW/VNNI with OS zmm support"
                                             : best == CPU_ISA_AVX2 ? "cpuid: AVX2 + FMA (no AVX-512 VNNI)"
                                                                    : "no AVX2/AVX-512 VNNI: portable C");
        return best;
    }
    for (int i = CPU_ISA_PORTABLE; i <= CPU_ISA_AVX512; i++)
        if (strcmp(want, cpu_isa_name((cpu_isa)i)) == 0) {
            if (cpu_isa_supported((cpu_isa)i)) {
                snprintf(reason, reason_size, "MXA_CPU_ISA=%s", want);
                return (cpu_isa)i;
            }
            snprintf(reason, reason_size, "MXA_CPU_ISA=%s is not supported here; using %s", want, cpu_isa_name(best));
            return best;
        }
    snprintf(reason, reason_size, "MXA_CPU_ISA=%s unknown (avx512|avx2|portable); using %s", want, cpu_isa_name(best));
    return best;
}
