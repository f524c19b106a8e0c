/* Fast Walsh-Hadamard transform, exactly as SPEC §2 step 1 orders it. */
#include <math.h>

#include "hadamard.h"

int mxa_hadamard_supported(int d)
{
    return d == 32 || d == 64 || d == 128 || d == 256;
}

float mxa_hadamard_norm(int d)
{
    return (float)(1.0 / sqrt((double)d));
}

void mxa_hadamard(float *x, int d)
{
    for (int h = 1; h < d; h *= 2)
        for (int i = 0; i < d; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
    float norm = mxa_hadamard_norm(d);
    for (int i = 0; i < d; i++) x[i] *= norm;
}
