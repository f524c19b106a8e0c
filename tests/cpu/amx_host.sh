#!/bin/bash
# On a machine with AMX (the H200's host): (1) the AMX path against the reference,
# (2) its speed at B1 H40 N4096 D128 with the measured AMX peak, the AVX-512 path beside
# it, and one worker's time per stage. CPU-only Release build in $B (default
# build-amx-host), then a few minutes. BEFORE=<commit> also builds and times that
# commit's amx-int8 in the same run (e.g. BEFORE=2c9ff2a, the kernels before bb752e5).
set -u
cd "$(dirname "$0")/../.."
grep -qw amx_int8 /proc/cpuinfo || { echo "amx_host: no amx_int8 in /proc/cpuinfo"; exit 1; }
B=${B:-build-amx-host}
J=$(nproc)
opts="-DCMAKE_BUILD_TYPE=Release -DMXA_WITH_VULKAN=OFF -DMXA_WITH_OPENCL=OFF -DMXA_WITH_HIP=OFF -DMXA_BENCH_OPENBLAS=OFF"
tests=1
if ! cmake -S . -B "$B" $opts >/dev/null 2>&1; then # no cmocka: conform alone checks the path
  tests=0
  cmake -S . -B "$B" $opts -DMXA_BUILD_TESTS=OFF >/dev/null || exit 1
fi
targets="mxa_cli"
[ $tests = 1 ] && targets="mxa_cli test_cpu_attention test_kv test_extras cpu_stages"
cmake --build "$B" -j"$J" --target $targets >/dev/null || exit 1
M=$B/bin/mxa
$M probe | grep -E "^  cpu:|variant +amx|capabilities.*threads"

echo "== (1) correctness (MXA_CPU_ISA=amx; the tests also loop over every ISA themselves)"
if [ $tests = 1 ]; then
  for t in tests/cpu/test_cpu_attention tests/test_kv tests/test_extras; do
    MXA_CPU_ISA=amx "$B/$t" >/tmp/amx_host_$$.log 2>&1 && echo "$t: passed" || { echo "$t: FAILED"; tail -20 /tmp/amx_host_$$.log; }
  done
  rm -f /tmp/amx_host_$$.log
fi
MXA_CPU_ISA=amx $M conform -b cpu --require | tail -4

echo "== (2) speed: B1 H40 N4096 D128 mxattention, $J threads (the %peak column is of the AMX peak for amx)"
for isa in amx avx512; do
  echo "-- MXA_CPU_ISA=$isa"
  MXA_CPU_ISA=$isa $M bench --device cpu --shape 1,40,4096,128 --reps 5 --no-blas --no-fp32 | grep -E "mxattention|peak"
done
if [ -n "${BEFORE:-}" ]; then
  old=/tmp/mxa-before-$$
  mkdir -p $old && git archive "$BEFORE" | tar -x -C $old &&
    cmake -S $old -B $old/build $opts -DMXA_BUILD_TESTS=OFF >/dev/null && cmake --build $old/build -j"$J" --target mxa_cli >/dev/null &&
    { echo "-- $BEFORE, MXA_CPU_ISA=amx"; MXA_CPU_ISA=amx $old/build/bin/mxa bench --device cpu --shape 1,40,4096,128 --reps 5 --no-blas --no-fp32 | grep -E "mxattention|peak"; }
  rm -rf $old
fi
if [ $tests = 1 ]; then
  echo "== one worker's stages"
  for isa in amx avx512; do "$B/tests/cpu/cpu_stages" $isa; done
  "$B/tests/cpu/cpu_stages" amx 4096 256 # AMX's default tile
fi
