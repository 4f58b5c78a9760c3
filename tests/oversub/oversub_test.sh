#!/usr/bin/env bash
# Memory oversubscription on the simulated GPU, with real processes under libvgpu.so:
#   1. a high-priority tenant (half the GPU, all of it device memory) runs beside a low-priority
#      tenant whose working set fits, then beside one that spills twice its share: the spilling
#      neighbour costs the high tenant at most 5% of its throughput and none of its memory (all
#      of it stays device memory); alone, the low tenant's spilled pages slow it down (chunks
#      touched per second, fitting against spilling);
#   2. admission refuses a spill that the host's memory cannot cover, naming the numbers (exit 1);
#   3. bad input: an unknown --memory-mode exits 2 naming the flag, and spill without --memory.
# Usage: oversub_test.sh PATH/TO/vgpu [SECONDS per phase, default 1]
set -uo pipefail
VGPU=${1:?usage: oversub_test.sh VGPU [SECONDS]}
SECONDS_PER_PHASE=${2:-1}
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

# Runs phase `$1`: the high tenant (2 GiB slice, 1.5 GiB touched; unless $2 is "no") and a low
# tenant touching `$3` bytes in a `$4` slice ("" for none) side by side from a common start.
phase() {
  local name=$1 with_high=$2 low_bytes=$3 low_limit=$4 high=
  local start=$(( $(date +%s%N) + 2000000000 ))
  if [[ $with_high == yes ]]; then
    "$VGPU" run --sim --priority high --memory 2GiB --memory-mode spill --name "high-$name" -- \
      "$VGPU" bench oversub-tenant --bytes $((1536 * MiB)) --chunk $((192 * MiB)) \
      --kernel-ns 200000 --start-at-ns "$start" --seconds "$SECONDS_PER_PHASE" \
      >"$work/high-$name.out" 2>"$work/high-$name.err" &
    high=$!
    wait_slice "high-$name"  # the high slice exists before the low one is admitted
  fi
  if [[ -n $low_bytes ]]; then
    "$VGPU" run --sim --priority low --memory "$low_limit" --memory-mode spill --name "low-$name" \
      -- "$VGPU" bench oversub-tenant --bytes "$low_bytes" --chunk $((64 * MiB)) \
      --kernel-ns 200000 --start-at-ns "$start" --seconds "$SECONDS_PER_PHASE" \
      >"$work/low-$name.out" 2>"$work/low-$name.err" ||
      fail "low tenant ($name): $(cat "$work/low-$name.err")"
  fi
  if [[ -n $high ]]; then
    wait "$high" || fail "high tenant ($name): $(cat "$work/high-$name.err")"
  fi
}
# Waits (up to 20 s) until the registry lists a slice named $1.
wait_slice() {
  for _ in $(seq 200); do
    compgen -G "$VGPU_STATE_DIR/slices/$1-*" >/dev/null && return 0
    sleep 0.1
  done
  fail "the slice $1 did not appear"
}
field() { sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1"; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }

phase lowfit no $((1 * GiB)) 1GiB      # the low tenant alone, fitting (16 chunks)
phase lowspill no $((6 * GiB)) 6GiB    # alone, spilling 2 GiB (96 chunks, 32 of them managed)
phase fit yes $((1 * GiB)) 1GiB        # beside the high tenant, fitting
phase spill yes $((4 * GiB)) 4GiB      # beside it, spilling twice its share (2 GiB)
for n in fit spill; do echo "high ($n): $(cat "$work/high-$n.out")"; done
for n in lowfit lowspill fit spill; do echo "low ($n): $(cat "$work/low-$n.out")"; done

[[ $(field "$work/high-spill.out" managed_bytes) == 0 ]] || fail "the high tenant's memory was spilled"
[[ $(field "$work/high-spill.out" device_bytes) == $((1536 * MiB)) ]] || fail "high device bytes"
(( $(field "$work/low-spill.out" managed_bytes) >= 1 * GiB )) || fail "the low tenant did not spill"
[[ $(field "$work/low-fit.out" managed_bytes) == 0 ]] || fail "the fitting low tenant spilled"
[[ $(field "$work/low-lowspill.out" managed_bytes) == $((2 * GiB)) ]] || fail "lowspill managed"
# Spilled pages slow the low tenant down: chunks touched per second, alone.
fit_chunks=$(awk -v r="$(field "$work/low-lowfit.out" rate)" 'BEGIN { print r * 16 }')
spill_chunks=$(awk -v r="$(field "$work/low-lowspill.out" rate)" 'BEGIN { print r * 96 }')
echo "low tenant alone: $fit_chunks chunks/s fitting, $spill_chunks chunks/s spilling"
ge "$(awk -v a="$fit_chunks" 'BEGIN { print a / 2 }')" "$spill_chunks" ||
  fail "spilling did not slow the low tenant ($spill_chunks vs $fit_chunks chunks/s)"
ratio=$(awk -v a="$(field "$work/high-spill.out" rate)" -v b="$(field "$work/high-fit.out" rate)" \
  'BEGIN { printf "%.4f", a / b }')
echo "high tenant throughput beside the spilling neighbour / beside the fitting one: $ratio"
ge "$ratio" 0.95 || fail "the high tenant lost more than 5% ($ratio)"

# 2. Admission: the host cannot cover the spill (5 GiB available - 4 GiB headroom < the 2 GiB spill).
"$VGPU" run --sim --priority high --memory 2GiB --name holder -- sleep 3 &
holder=$!
wait_slice holder
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
