#!/usr/bin/env bash
# Memory oversubscription on a real NVIDIA GPU (ctest label gpu): the scenario of
# tests/oversub/oversub_test.sh with tests/gpu/oversub.cu as the tenant.
#   1. a high-priority spill slice holding 40% of the GPU as device memory runs beside a
#      low-priority tenant that fits, then beside one that spills twice its share (--memory-mode
#      spill): the high tenant keeps >= 95% of its throughput and none of its memory is managed;
#      the low tenant's spilled memory is managed;
#   2. a bad --memory-mode exits 2.
#   tests/gpu/oversub.sh [--vgpu PATH] [--seconds S]
# Exit status: 0 passed, 1 a check failed, 77 skipped (no GPU, driver or nvcc).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
vgpu=$root/build/bin/vgpu
seconds=10
while [[ $# -gt 0 ]]; do
  case $1 in
    --vgpu) vgpu=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "oversub.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || { echo "no GPU: skipped"; exit 77; }
command -v nvcc >/dev/null || { echo "no nvcc: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export VGPU_STATE_DIR=$work/state
nvcc -O2 -o "$work/oversub" "$root/tests/gpu/oversub.cu" || exit 1
total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | head -1)
MiB=$((1 << 20))
share=$(( total_mib / 2 ))          # each tenant's share, MiB
high_bytes=$(( total_mib * 2 / 5 * MiB ))
fail() { echo "FAIL: $*"; exit 1; }
field() { sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1"; }
phase() {  # $1 name, $2 low bytes, $3 low limit (MiB)
  "$vgpu" run --priority high --memory "${share}MiB" --memory-mode spill -- \
    "$work/oversub" --bytes "$high_bytes" --seconds "$seconds" >"$work/high-$1" &
  local high=$!
  sleep 2
  "$vgpu" run --priority low --memory "${3}MiB" --memory-mode spill --spill-ratio 2 -- \
    "$work/oversub" --bytes "$2" --seconds "$seconds" >"$work/low-$1" || fail "low tenant ($1)"
  wait "$high" || fail "high tenant ($1)"
  echo "$1: high $(cat "$work/high-$1"); low $(cat "$work/low-$1")"
}
phase fit $(( share / 4 * MiB )) $(( share / 2 ))
phase spill $(( share * 2 * MiB )) $(( share * 2 ))
[[ $(field "$work/high-spill" managed_bytes) == 0 ]] || fail "the high tenant's memory is managed"
(( $(field "$work/low-spill" managed_bytes) > 0 )) || fail "the low tenant did not spill"
ratio=$(awk -v a="$(field "$work/high-spill" rounds)" -v b="$(field "$work/high-fit" rounds)" \
  'BEGIN { printf "%.4f", a / b }')
echo "high throughput beside the spilling tenant / beside the fitting one: $ratio"
awk -v r="$ratio" 'BEGIN { exit !(r >= 0.95) }' || fail "the high tenant lost more than 5%"
"$vgpu" run --memory 1GiB --memory-mode swap -- true 2>/dev/null
[[ $? == 2 ]] || fail "a bad --memory-mode did not exit 2"
echo PASS
