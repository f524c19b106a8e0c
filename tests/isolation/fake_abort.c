/* A GPU runtime that aborts as soon as it is loaded, like a driver whose LLVM
 * clashes with another LLVM already in the process. Built three times, as
 * libamdhip64.so, libOpenCL.so.1 and libvulkan.so.1. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void clash(void)
{
    fputs(": CommandLine Error: Option 'disassemble' registered more than once! (fake runtime of tests/isolation)\n",
          stderr);
    abort();
}
