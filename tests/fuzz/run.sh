#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time, starting from a copy of its
# seed corpus (the committed corpus is never modified). Builds nothing.
#
#   cmake --preset fuzz && cmake --build --preset fuzz -j2
#   tests/fuzz/run.sh build-fuzz [SECONDS_PER_TARGET]      (default 30)
#
# Exits non-zero if a target finds a crash, leak, sanitizer report or timeout;
# the reproducer is kept in BUILD_DIR/fuzz-artifacts/.
set -euo pipefail
build=${1:?usage: tests/fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET]}
seconds=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
artifacts="$build/fuzz-artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts"
status=0
for target in npy quantize vk_caps_json; do
  bin="$build/tests/fuzz/fuzz_$target"
  if [ "$target" = vk_caps_json ] && [ ! -x "$bin" ]; then echo "== fuzz_vk_caps_json: not built (no Vulkan backend): skipped"; continue; fi
  if [ ! -x "$bin" ]; then
    echo "run.sh: $bin is missing; build with: cmake --preset fuzz && cmake --build --preset fuzz" >&2
    exit 2
  fi
  mkdir -p "$work/$target"
  cp "$here/corpus/$target"/* "$work/$target"/
  dict=()
  if [ -f "$here/$target.dict" ]; then dict=("-dict=$here/$target.dict"); fi
  echo "== fuzz_$target: ${seconds}s"
  if ! "$bin" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
       -artifact_prefix="$artifacts/${target}-" -print_final_stats=1 "$work/$target" 2>"$work/$target.log"; then
    tail -n 60 "$work/$target.log" >&2
    echo "run.sh: fuzz_$target FAILED; reproducer in $artifacts/" >&2
    status=1
  else
    grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done )" "$work/$target.log" || true
  fi
done
exit $status
