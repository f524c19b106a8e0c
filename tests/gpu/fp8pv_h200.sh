#!/bin/bash
# The MXFP8 P V (issue 20) on a GPU machine (the H200): conformance of the new recipe and
# format on every present device and variant, then its speed against mxattention in one
# bench command per GPU backend. Prints everything to stdout; exit status 1 if conform fails.
#   tests/gpu/fp8pv_h200.sh [BUILD_DIR]    (default: build; needs BUILD_DIR/bin/mxa)
# SHAPES=small runs bench's small preset instead of the shapes (a quick try).
# On the H200 today: Vulkan runs an MXFP8 P V on its scalar kernel (the cooperative-matrix and
# intdot variants step aside) and OpenCL on cl-tiled (cl-mma-ptx steps aside), so the speed
# ratio measures those fallbacks until the cooperative-matrix kernels take kind 2 (MXFP8).
set -u
build=${1:-build}
mxa=$build/bin/mxa
[ -x "$mxa" ] || { echo "fp8pv_h200.sh: $mxa not found (build first)" >&2; exit 2; }
"$mxa" probe | head -40
echo "== conform: the MXFP8 format and the mxattention-fp8pv recipe (every device, every variant)"
"$mxa" conform -o 'quantize-mxfp8,fp8pv'
rc=$?
for dev in vulkan:0 opencl:0; do
  echo "== bench $dev: mxattention vs mxattention-fp8pv"
  "$mxa" bench --device "$dev" --shapes "${SHAPES:-issue}" --recipe mxattention,mxattention-fp8pv --no-blas --no-fp32 --reps 5 ||
    echo "(bench on $dev failed or the device is absent)"
done
exit $rc
