/*
 * Run-time instruction-set selection. AMX needs the tile and int8 bits, the
 * OS saving tile state (XCR0) and, on Linux, the process's permission;
 * AVX-512 needs the CPU bits (F, BW, VNNI) and the OS saving zmm state;
 * AVX2 needs AVX2, FMA and ymm state. Anything else, or a non-x86 build,
 * gets the portable C path.
 */
#include <stdio.h>
#include <string.h>

#include "../../runtime/env.h"
#include "cpu_isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* Linux hands out the AMX tile state only on request (once per process). */
static int amx_permitted(void)
{
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return 0;
#endif
}

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
    const int avx512 = avx2 && fma && avx512f && avx512bw && vnni && (xcr0 & 0xe0) == 0xe0; /* opmask, zmm state */
    if (isa == CPU_ISA_AVX512) return avx512;
#if defined(MXA_CPU_HAVE_AMX)
    const int amx = ((d >> 24) & 1) && ((d >> 25) & 1) && (xcr0 & 0x60000) == 0x60000; /* tile, int8; XTILECFG/DATA */
    return isa == CPU_ISA_AMX && avx512 && amx && amx_permitted();
#else
    (void)amx_permitted;
    return 0;
#endif
}

const cpu_kernels *cpu_isa_kernels(cpu_isa isa)
{
#if defined(MXA_CPU_HAVE_AMX)
    if (isa == CPU_ISA_AMX) return cpu_kernels_amx();
#endif
    if (isa == CPU_ISA_AVX512 || isa == CPU_ISA_AMX) return &cpu_kernels_avx512;
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
    return isa == CPU_ISA_AMX ? "amx" : isa == CPU_ISA_AVX512 ? "avx512" : isa == CPU_ISA_AVX2 ? "avx2" : "portable";
}

cpu_isa cpu_isa_select(char *reason, size_t reason_size)
{
    cpu_isa best = CPU_ISA_PORTABLE;
    for (int i = CPU_ISA_COUNT - 1; i > CPU_ISA_PORTABLE && best == CPU_ISA_PORTABLE; i--)
        if (cpu_isa_supported((cpu_isa)i)) best = (cpu_isa)i;
    const char *want = mxa_env_string("MXA_CPU_ISA");
    if (!want) {
        snprintf(reason, reason_size, "%s",
                 best == CPU_ISA_AMX      ? "cpuid: AMX-INT8 (OS tile state granted) + AVX-512 VNNI"
                 : best == CPU_ISA_AVX512 ? "cpuid: AVX-512 F/BW/VNNI with OS zmm support"
                 : best == CPU_ISA_AVX2   ? "cpuid: AVX2 + FMA (no AVX-512 VNNI)"
                                          : "no AVX2/AVX-512 VNNI: portable C");
        return best;
    }
    for (int i = CPU_ISA_PORTABLE; i < CPU_ISA_COUNT; i++)
        if (strcmp(want, cpu_isa_name((cpu_isa)i)) == 0) {
            if (cpu_isa_supported((cpu_isa)i)) {
                snprintf(reason, reason_size, "MXA_CPU_ISA=%s", want);
                return (cpu_isa)i;
            }
            snprintf(reason, reason_size, "MXA_CPU_ISA=%s is not supported here; using %s", want, cpu_isa_name(best));
            return best;
        }
    snprintf(reason, reason_size, "MXA_CPU_ISA=%.64s unknown (amx|avx512|avx2|portable); using %s", want, cpu_isa_name(best));
    mxa_env_warn_once("MXA_CPU_ISA", "%s", reason);
    return best;
}
