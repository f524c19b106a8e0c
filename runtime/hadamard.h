/* The orthonormal Walsh-Hadamard rotation of SPEC §2 step 1 (internal). */
#ifndef MXA_RUNTIME_HADAMARD_H
#define MXA_RUNTIME_HADAMARD_H

/* 1 if d is a size the rotation supports (32, 64, 128, 256). */
int mxa_hadamard_supported(int d);

/* Rotates x[0..d) in place: radix-2 butterflies h = 1, 2, ..., d/2 in fp32,
 * then a multiply by the fp32 constant 1/sqrt(d). */
void mxa_hadamard(float *x, int d);

/* The fp32 constant 1/sqrt(d) used by mxa_hadamard. */
float mxa_hadamard_norm(int d);

#endif
