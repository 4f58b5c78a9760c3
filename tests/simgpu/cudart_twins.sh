#!/usr/bin/env bash
# The runtime twins of the slice tests: tests/simgpu/cudart_tenant.cu (NVIDIA's CUDA runtime,
# built by nvcc) in `vgpu run --sim` slices, where the driver-API twins use intercept_worker and
# `vgpu bench`:
#   - compute caps: a tenant launching 1 ms kernels, two in flight, under --cores 30 and 70 gets
#     its cap within 3 points (the twin of tests/compute's caps);
#   - weights: two such tenants, elastic, of weights 1 and 3, started together, split the time
#     they ran 25/75 within 3 points and keep the GPU at least 85% busy (the twin of
#     tests/compute's weights);
#   - copy QoS: host-to-device copies under --copy-bandwidth 200MB/s run within 5% of the cap
#     (the twin of tests/copyqos);
#   - races: 4 processes of one 512 MiB slice allocating 8 MiB blocks at once get at most the
#     slice and fill it to within a block each (the twin of tests/intercept's races);
#   - SIGKILL: a process holding 300 MiB of the slice is killed; another then gets the whole
#     slice (the twin of the kill tests);
#   - spill: on a 2 GiB GPU of which another slice holds 1.5 GiB, a 1 GiB slice with
#     --memory-mode spill gets its whole 1 GiB from cudaMalloc and its kernels touch it, slower
#     than a working set that fits; a strict slice is refused past the GPU's 512 MiB (the twin of
#     tests/oversub).
#
#   cudart_twins.sh --program PROG --vgpu VGPU
#
# Exit status: 0 every check passed, 1 a check failed, 2 bad usage, 77 skipped (PROG missing:
# nvcc was not found when the project was configured).
set -u
program="" vgpu=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --program) program=$2; shift 2 ;;
    --vgpu) vgpu=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "cudart_twins.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n $program && -n $vgpu ]] || { echo "cudart_twins.sh: --program and --vgpu are required" >&2; exit 2; }
if [[ ! -x $program ]]; then
  echo "SKIP: $program was not built (no nvcc when the project was configured)"
  exit 77
fi
work=$(mktemp -d /tmp/vgpu-cudart-twins-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
export VGPU_SIMGPU_LOG_LEVEL=1 LIBCUDA_LOG_LEVEL=1
failures=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
field() { awk -v k="$1" '$1 == k {print $2; exit}'; }
# within VALUE TARGET TOLERANCE: |VALUE - TARGET| <= TOLERANCE
within() { awk -v v="$1" -v t="$2" -v d="$3" 'BEGIN {exit !(v != "" && v - t <= d && t - v <= d)}'; }
MiB=$((1 << 20))

# ---- compute caps ----------------------------------------------------------------------------
for cap in 30 70; do
  out=$("$vgpu" run --sim --cores "$cap" --name "rt-cap-$cap" -- "$program" kernels 2 2>&1)
  share=$(echo "$out" | field share)
  within "$share" "$cap" 3 && pass "runtime kernels under --cores $cap: $share%" ||
    fail "runtime kernels under --cores $cap: '$share' (output: $(echo "$out" | tr '\n' ' '))"
done

# ---- weights ---------------------------------------------------------------------------------
start=$(( $(date +%s%N) + 2000000000 ))  # both tenants start their 3 s together, past start-up
"$vgpu" run --sim --elastic --weight 1 --name rt-weight-1 -- "$program" kernels 3 "$start" \
  > "$work/weight-1" 2>&1 &
pids+=($!)
"$vgpu" run --sim --elastic --weight 3 --name rt-weight-3 -- "$program" kernels 3 "$start" \
  > "$work/weight-3" 2>&1
wait "${pids[-1]}"
w1=$(field share < "$work/weight-1") w3=$(field share < "$work/weight-3")
split=$(awk -v a="$w1" -v b="$w3" 'BEGIN {if (a + b > 0) printf "%.2f", 100 * b / (a + b)}')
if within "$split" 75 3 && awk -v a="$w1" -v b="$w3" 'BEGIN {exit !(a + b >= 85)}'; then
  pass "runtime tenants of weights 1 and 3 side by side: $w1% and $w3% of the GPU, a $split% split"
else
  fail "runtime weights 1:3: '$w1' and '$w3' (output: $(cat "$work/weight-1" "$work/weight-3" | tr '\n' ' '))"
fi

# ---- copy QoS --------------------------------------------------------------------------------
out=$("$vgpu" run --sim --copy-bandwidth 200MB/s,unlimited --name rt-copy -- \
  "$program" copies 2 $((4 * MiB)) 2>&1)
rate=$(echo "$out" | field h2d)
within "$rate" 200000000 10000000 && pass "runtime H2D copies under a 200 MB/s cap: $rate B/s" ||
  fail "runtime H2D copies under a 200 MB/s cap: '$rate' (output: $(echo "$out" | tr '\n' ' '))"

# ---- races and SIGKILL in one slice ----------------------------------------------------------
limit=$((512 * MiB)) chunk=$((8 * MiB))
cat > "$work/race.sh" <<'SCRIPT'
#!/usr/bin/env bash
# Inside the slice: $1 program, $2 chunk, $3 work dir.
prog=$1 chunk=$2 work=$3
for i in 1 2 3 4; do
  mkfifo "$work/go.$i"
  "$prog" race "$chunk" < "$work/go.$i" > "$work/race.$i" 2>&1 &
  exec {fd}> "$work/go.$i"
  eval "go_$i=$fd"
done
for i in 1 2 3 4; do
  for _ in $(seq 200); do grep -q ready "$work/race.$i" && break; sleep 0.05; done
done
for i in 1 2 3 4; do eval "echo go >&\$go_$i"; done
for i in 1 2 3 4; do
  for _ in $(seq 200); do grep -q granted "$work/race.$i" && break; sleep 0.05; done
done
total=0
for i in 1 2 3 4; do
  g=$(awk '$1 == "granted" {print $2}' "$work/race.$i")
  total=$((total + ${g:-0}))
done
echo "granted_total $total"
for i in 1 2 3 4; do eval "exec {go_$i}>&-"; done
wait
# SIGKILL: a holder of 300 MiB is killed, then the whole slice can be allocated.
"$prog" hold $((300 << 20)) > "$work/hold" 2>&1 &
holder=$!
for _ in $(seq 200); do grep -q ready "$work/hold" && break; sleep 0.05; done
"$prog" fill | sed 's/^/before_kill_/'
kill -9 "$holder"
wait "$holder" 2>/dev/null
"$prog" fill | sed 's/^/after_kill_/'
SCRIPT
out=$("$vgpu" run --sim --memory $limit --name rt-race -- bash "$work/race.sh" "$program" $chunk "$work" 2>&1)
total=$(echo "$out" | field granted_total)
if [[ -n $total ]] && ((total <= limit && total > limit - 4 * chunk)); then
  pass "4 runtime processes racing for a 512 MiB slice got $total bytes (at most the slice, filled to within a block each)"
else
  fail "runtime race: '$total' of $limit (output: $(echo "$out" | tr '\n' ' '))"
fi
before=$(echo "$out" | awk '$1 == "before_kill_filled" {print $2}')
after=$(echo "$out" | awk '$1 == "after_kill_filled" {print $2}')
if [[ -n $before && -n $after ]] && ((before <= limit - 300 * MiB && after > limit - 8 * MiB &&
                                      after <= limit)); then
  pass "a SIGKILLed runtime process's 300 MiB returned: $before bytes before the kill, $after after"
else
  fail "runtime SIGKILL: before '$before', after '$after' (output: $(echo "$out" | tr '\n' ' '))"
fi

# ---- spill -----------------------------------------------------------------------------------
echo "model=a100 memory=2GiB" > "$work/spill.conf"
printf 'MemTotal: 67108864 kB\nMemAvailable: 67108864 kB\n' > "$work/meminfo"
# Its own simulated GPU and slice registry (the last section: the exports stay).
export VGPU_SIMGPU_STATE=$work/spill.state VGPU_STATE_DIR=$work/spill.registry VGPU_MEMINFO=$work/meminfo
spill_run() { "$vgpu" run --sim --sim-config "$work/spill.conf" "$@"; }
"$vgpu" run --sim --sim-config "$work/spill.conf" --memory 1536MiB --name rt-spill-holder -- \
  "$program" hold $((1536 * MiB)) > "$work/spill-holder" 2>&1 &
holder=$!
pids+=("$holder")
for _ in $(seq 200); do grep -q ready "$work/spill-holder" && break; sleep 0.05; done
fits=$(spill_run --memory 1GiB --memory-mode spill --name rt-spill-fits -- \
  "$program" touch 1 $((256 * MiB)) 2>&1)
spills=$(spill_run --memory 1GiB --memory-mode spill --name rt-spill -- \
  "$program" touch 1 $((1024 * MiB)) 2>&1)
strict=$(spill_run --memory 1GiB --name rt-spill-strict -- "$program" fill 2>&1)
granted=$(echo "$spills" | field granted)
fit_rate=$(echo "$fits" | field touch_rate) spill_rate=$(echo "$spills" | field touch_rate)
strict_filled=$(echo "$strict" | awk '$1 == "filled" {print $2}')
if [[ $granted == $((1024 * MiB)) ]] && awk -v f="$fit_rate" -v s="$spill_rate" \
     'BEGIN {exit !(f > 0 && s > 0 && s < f)}'; then
  pass "a spill slice got its 1 GiB beside a 1.5 GiB neighbour on a 2 GiB GPU; touched $spill_rate blocks/s (fitting: $fit_rate)"
else
  fail "runtime spill: granted '$granted', rates '$spill_rate' and '$fit_rate' (output: $(echo "$spills $fits" | tr '\n' ' '))"
fi
if [[ -n $strict_filled ]] && ((strict_filled <= 512 * MiB && strict_filled > 500 * MiB)); then
  pass "a strict slice beside it got $strict_filled bytes (the GPU's 512 MiB left, no more)"
else
  fail "runtime strict beside the holder: '$strict_filled' (output: $(echo "$strict" | tr '\n' ' '))"
fi

kill -TERM "$holder"  # vgpu run passes it on to the holder and removes the slice
wait "$holder" 2>/dev/null

[[ $failures -eq 0 ]] && echo "PASS" || echo "FAIL: $failures check(s) failed"
[[ $failures -eq 0 ]]
