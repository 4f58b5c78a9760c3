#!/usr/bin/env bash
# Memory oversubscription on the simulated GPU, with real processes under libvgpu.so:
#   1. a high-priority tenant (half the GPU, all of it device memory) runs beside a low-priority
#      tenant whose working set fits, then beside one that spills twice its share: the spilling
#      neighbour costs the high tenant at most 5% of its throughput and none of its memory (all
#      of it stays device memory), while the low tenant's spilled pages slow it down;
#   2. admission refuses a spill that the host's memory cannot cover, naming the numbers (exit 1);
#   3. bad input: an unknown --memory-mode exits 2 naming the flag, and spill without --memory.
# Usage: oversub_test.sh PATH/TO/vgpu [SECONDS per phase, default 1.5]
set -uo pipefail
VGPU=${1:?usage: oversub_test.sh VGPU [SECONDS]}
SECONDS_PER_PHASE=${2:-1.5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

GiB=$((1 << 30))
MiB=$((1 << 20))
# A 4 GiB GPU with an A100's 25 GB/s host link and 20 us per fault.
echo "model=a100 memory=4GiB fault_latency=20us" >"$work/sim.conf"
export VGPU_SIMGPU_CONFIG=$work/sim.conf VGPU_SIMGPU_STATE=$work/sim.state
export VGPU_STATE_DIR=$work/state
printf 'MemTotal: 67108864 kB\nMemAvailable: 67108864 kB\n' >"$work/meminfo.64g"
printf 'MemTotal: 5242880 kB\nMemAvailable: 5242880 kB\n' >"$work/meminfo.5g"
export VGPU_MEMINFO=$work/meminfo.64g

# Runs the high tenant (2 GiB slice, 1.5 GiB touched) and a low tenant of `$1` bytes in a
# `$2` GiB slice side by side, from a common start; prints both result lines.
phase() {
  local low_bytes=$1 low_limit=$2 name=$3
  local start=$(( $(date +%s%N) + 2500000000 ))
  "$VGPU" run --sim --priority high --memory 2GiB --memory-mode spill --name "high-$name" -- \
    "$VGPU" bench oversub-tenant --bytes $((1536 * MiB)) --chunk $((192 * MiB)) \
    --kernel-ns 200000 --start-at-ns "$start" --seconds "$SECONDS_PER_PHASE" \
    >"$work/high-$name.out" 2>"$work/high-$name.err" &
  local high=$!
  sleep 0.3  # the high slice exists before the low one is admitted
  if [[ -n $low_bytes ]]; then
    "$VGPU" run --sim --priority low --memory "$low_limit" --memory-mode spill --name "low-$name" -- \
      "$VGPU" bench oversub-tenant --bytes "$low_bytes" --chunk $((64 * MiB)) \
      --kernel-ns 200000 --start-at-ns "$start" --seconds "$SECONDS_PER_PHASE" \
      >"$work/low-$name.out" 2>"$work/low-$name.err" || fail "low tenant ($name): $(cat "$work/low-$name.err")"
  fi
  wait "$high" || fail "high tenant ($name): $(cat "$work/high-$name.err")"
}
field() { sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1"; }

phase "" "" alone
phase $((1 * GiB)) 1GiB fit
phase $((4 * GiB)) 4GiB spill
for n in alone fit spill; do echo "high ($n): $(cat "$work/high-$n.out")"; done
for n in fit spill; do echo "low ($n): $(cat "$work/low-$n.out")"; done

high_fit=$(field "$work/high-fit.out" rounds)
high_spill=$(field "$work/high-spill.out" rounds)
[[ -n $high_fit && -n $high_spill && $high_fit -gt 0 ]] || fail "no rounds measured"
[[ $(field "$work/high-spill.out" managed_bytes) == 0 ]] || fail "the high tenant's memory was spilled"
[[ $(field "$work/high-spill.out" device_bytes) == $((1536 * MiB)) ]] || fail "high device bytes"
low_managed=$(field "$work/low-spill.out" managed_bytes)
(( low_managed >= 1 * GiB )) || fail "the low tenant spilled only $low_managed bytes"
[[ $(field "$work/low-fit.out" managed_bytes) == 0 ]] || fail "the fitting low tenant spilled"
low_fit=$(field "$work/low-fit.out" rounds)
low_spill=$(field "$work/low-spill.out" rounds)
# The low tenant's per-round work quadruples; beyond that, spilled pages slow it down.
(( low_spill * 4 < low_fit )) || fail "spilling did not slow the low tenant ($low_spill vs $low_fit rounds)"
ratio=$(awk -v a="$high_spill" -v b="$high_fit" 'BEGIN { printf "%.4f", a / b }')
echo "high tenant throughput beside the spilling neighbour / beside the fitting one: $ratio"
awk -v r="$ratio" 'BEGIN { exit !(r >= 0.95) }' || fail "the high tenant lost more than 5% ($ratio)"

# 2. Admission: the host cannot cover the spill (5 GiB available - 4 GiB headroom < the 2 GiB spill).
"$VGPU" run --sim --priority high --memory 2GiB --name holder -- sleep 2 &
holder=$!
sleep 0.5
VGPU_MEMINFO=$work/meminfo.5g "$VGPU" run --sim --priority low --memory 4GiB --memory-mode spill \
  -- true 2>"$work/refused.err"
rc=$?
wait "$holder"
[[ $rc == 1 ]] || fail "admission: exit $rc, expected 1 ($(cat "$work/refused.err"))"
grep -q "host memory cannot cover the spill" "$work/refused.err" || fail "no reason: $(cat "$work/refused.err")"
echo "refused: $(cat "$work/refused.err")"

# 3. Bad input.
"$VGPU" run --sim --memory 1GiB --memory-mode swap -- true 2>"$work/bad.err"
rc=$?
[[ $rc == 2 ]] && grep -q -- "--memory-mode" "$work/bad.err" || fail "bad mode: exit $rc: $(cat "$work/bad.err")"
"$VGPU" run --sim --memory-mode spill -- true 2>"$work/bad2.err"
rc=$?
[[ $rc == 2 ]] && grep -q "needs a memory limit" "$work/bad2.err" || fail "spill without --memory: exit $rc"
echo PASS
