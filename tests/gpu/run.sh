#!/usr/bin/env bash
# libvgpu.so on a real NVIDIA GPU: the checks of tests/intercept (simulated GPU) against the real
# driver, plus a CUDA runtime (cudaMalloc) program, then the compute-sharing checks of
# tests/compute (caps, elastic give-back, priority, every launch path) with `vgpu bench share`,
# and the copy-QoS checks of tests/copyqos with `vgpu bench copy` and tests/gpu/copy_qos.cu.
#
#   tests/gpu/run.sh [--libvgpu PATH] [--vgpu PATH] [--races N] [--compute-seconds S]
#                    [--only memory|compute|copy|cublas|torch[,...]] [--simulated-driver DIR]
#                    [--sanitizer-runtime PATH]
#
# --only runs the named parts only (a comma-separated list; default all five). cublas:
# tests/simgpu/cublas_program.cu (handles, GEMMs, the workspace charged and refused) in a 1 GiB
# slice, skipped without cuBLAS in the toolkit. torch: PyTorch (tests/gpu/torch_slice.py) in a
# 4 GiB, 30% slice, skipped without PyTorch or a real GPU.
# --simulated-driver DIR runs the checks against the simulated GPU in DIR (build/lib/simgpu)
# instead, to test this script on a machine without a GPU (NVIDIA's CUDA runtime runs on it;
# its kernels take time and compute nothing, so the runtime program's kernels count as launched). --sanitizer-runtime PATH is
# for a sanitizer build of libvgpu.so and vgpu: the runtime is preloaded ahead of libvgpu.so.
#
# Builds its test programs here with nvcc (tests/intercept/intercept_worker.cc, a driver API
# program; tests/gpu/runtime_fill.cu, a runtime program; tests/gpu/spin_kernel.cu, the calibrated
# clock64 busy kernel of the compute checks), so it needs only the CUDA toolkit, the driver,
# python3 (to read the bench's JSON) and the build outputs: build/lib/libvgpu.so and
# build/bin/vgpu next to this checkout (or --libvgpu / --vgpu).
# Exit status: 0 every check passed, 1 a check failed, 77 skipped (no GPU, driver or nvcc).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
libvgpu=$root/build/lib/libvgpu.so
vgpu=$root/build/bin/vgpu
races=30
compute_seconds=10
only=
simulated=
sanitizer_runtime=
while [[ $# -gt 0 ]]; do
  case $1 in
    --libvgpu) libvgpu=$2; shift 2 ;;
    --vgpu) vgpu=$2; shift 2 ;;
    --races) races=$2; shift 2 ;;
    --compute-seconds) compute_seconds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --simulated-driver) simulated=$(cd "$2" && pwd); shift 2 ;;
    --sanitizer-runtime) sanitizer_runtime=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

for part in ${only//,/ }; do
  case $part in
    memory|compute|copy|cublas|torch) ;;
    *) echo "run.sh: --only: unknown part '$part' (known: memory, compute, copy, cublas, torch)" >&2
       exit 2 ;;
  esac
done
# wants PART: whether --only names PART (or is not given).
wants() { [[ -z $only || ,$only, == *,$1,* ]]; }

skip() { echo "SKIPPED: $*"; exit 77; }
find_lib() { ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n {print $NF; exit}'; }
if [[ -n $simulated ]]; then
  libcuda=$simulated/libcuda.so.1
  libnvml=$simulated/libnvidia-ml.so.1
  export LD_LIBRARY_PATH=$simulated${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export VGPU_SIMGPU_STATE=/tmp/vgpu-gpu-test-sim-$$.state VGPU_SIMGPU_LOG_LEVEL=1
else
  [[ -e /dev/nvidia0 || -e /dev/nvidiactl ]] || skip "no NVIDIA GPU (/dev/nvidia0 missing)"
  libcuda=$(find_lib libcuda.so.1)
  libnvml=$(find_lib libnvidia-ml.so.1)
  [[ -n $libcuda ]] || skip "no NVIDIA driver (libcuda.so.1 not in the loader cache)"
  if grep -q "vgpu's simulation" "$libcuda" 2>/dev/null; then
    skip "libcuda.so.1 is vgpu's simulated GPU, not a driver"
  fi
fi
nvcc=$(command -v nvcc || true)
[[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
[[ -n $nvcc ]] || skip "nvcc not found (install the CUDA toolkit)"
[[ -r $libvgpu ]] || { echo "run.sh: $libvgpu not found" >&2; exit 1; }

work=$(mktemp -d /tmp/vgpu-gpu-test-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$work"
  [[ -n $simulated ]] && rm -f "$VGPU_SIMGPU_STATE"
}
trap cleanup EXIT

echo "GPU test: ${simulated:+(simulated) }$(nvidia-smi --query-gpu=name,memory.total,driver_version \
  --format=csv,noheader 2>/dev/null | head -1)"
echo "libvgpu: $libvgpu   driver: $libcuda"

# ---- build -----------------------------------------------------------------------------------
mkdir -p "$work/lib"
ln -s "$libcuda" "$work/lib/libcuda.so"
[[ -n $libnvml ]] && ln -s "$libnvml" "$work/lib/libnvidia-ml.so"
"$nvcc" -O2 -std=c++17 -I"$root/src" -o "$work/worker" "$root/tests/intercept/intercept_worker.cc" \
  -L"$work/lib" -lcuda -lnvidia-ml -ldl || { echo "FAIL: cannot build the driver API worker"; exit 1; }
"$nvcc" -O2 -o "$work/runtime_fill" "$root/tests/gpu/runtime_fill.cu" ||
  { echo "FAIL: cannot build the runtime program"; exit 1; }

failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
MiB=$((1 << 20))

# The environment of slice $1 with a memory limit of $2 bytes, in the array SLICE_ENV. Background
# processes are started as `env "${SLICE_ENV[@]}" cmd &` so that $! is the process itself.
slice_env() {
  SLICE_ENV=(LD_PRELOAD="${sanitizer_runtime:+$sanitizer_runtime }$libvgpu"
             CUDA_DEVICE_MEMORY_LIMIT="$2" CUDA_DEVICE_MEMORY_SHARED_CACHE="$work/$1.region" VGPU_CONTEXT_OVERHEAD=0
             LIBCUDA_LOG_LEVEL=1)
}
# Runs a command (in the foreground) in slice $1 with a memory limit of $2 bytes.
in_slice() {
  slice_env "$1" "$2"
  shift 2
  env "${SLICE_ENV[@]}" "$@"
}
field() { awk -v k="$1" '$1 == k {sub(/^[^ ]+ /, ""); print; exit}'; }

if wants memory; then
# ---- 1. every allocation path holds N bytes and not one byte more ----------------------------
n=$((256 * MiB))
for spec in alloc:1 managed:1 pitch:512 vmm:$((2 * MiB)) async:1 async_ptsz:1 pool:1 \
            array:1 array3d:1 mipmap:1 graph:1 procaddr:1 procaddr_ptsz:1 dlsym:1 legacy:1; do
  path=${spec%%:*}
  extra=${spec##*:}
  out=$(in_slice "fill-$path" $n "$work/worker" fill "$path" $n "$extra" 2>&1)
  first=$(echo "$out" | field first)
  more=$(echo "$out" | field extra)
  if [[ $path == legacy && $first != CUDA_SUCCESS ]]; then
    echo "NOTE: legacy 32-bit cuMemAlloc: the driver answers $first for $n bytes (not checked)"
  elif [[ $first == CUDA_SUCCESS && $more == CUDA_ERROR_OUT_OF_MEMORY ]]; then
    pass "$path: $n bytes fit, $extra more refused"
  else
    fail "$path: first=$first extra=$more (output: $(echo "$out" | tr '\n' ' '))"
  fi
done

# ---- 2. the CUDA runtime (cudaMalloc) is limited the same way ----------------------------------
# (On the simulated driver the kernels run but compute nothing: "launched" stands for "ok".)
ran=ok
[[ -n $simulated ]] && ran=launched
for path in malloc async managed pitch pool; do
  out=$(in_slice "rt-$path" $n "$work/runtime_fill" "$path" 2>&1)
  total=$(echo "$out" | awk '$1 == "free" {print $4}')
  first=$(echo "$out" | field first)
  more=$(echo "$out" | field extra)
  kernels=$(echo "$out" | field kernels)
  if [[ $total == "$n" && $first == cudaSuccess && $more == cudaErrorMemoryAllocation &&
        $kernels == "$ran" ]]; then
    pass "runtime $path: cudaMemGetInfo total $total, free filled, one more refused, kernels $kernels"
  else
    fail "runtime $path: $(echo "$out" | tr '\n' ' ')"
  fi
done

# ---- 3. cuMemGetInfo, NVML and nvidia-smi inside the slice report the slice -------------------
limit=$((1024 * MiB))
mkfifo "$work/hold.in"
slice_env info $limit
env "${SLICE_ENV[@]}" "$work/worker" hold $((100 * MiB)) < "$work/hold.in" > "$work/hold.out" 2>&1 &
pids+=($!)
exec {hold_fd}>"$work/hold.in"
for _ in $(seq 100); do grep -q ready "$work/hold.out" && break; sleep 0.1; done
holder=$(awk '$1 == "ready" {print $2}' "$work/hold.out")
out=$(in_slice info $limit "$work/worker" info 2>&1)
want_free=$((limit - 100 * MiB))
[[ $(echo "$out" | field cuMemGetInfo) == "$want_free $limit" ]] &&
  pass "cuMemGetInfo reports the slice" || fail "cuMemGetInfo: $(echo "$out" | field cuMemGetInfo)"
[[ $(echo "$out" | field totalmem) == "$limit" ]] && pass "cuDeviceTotalMem is the limit" ||
  fail "cuDeviceTotalMem: $(echo "$out" | field totalmem)"
[[ $(echo "$out" | field nvml) == "$limit $((100 * MiB)) $want_free" ]] &&
  pass "NVML memory info reports the slice" || fail "NVML: $(echo "$out" | field nvml)"
[[ $(echo "$out" | field proc) == "$holder $((100 * MiB))" ]] &&
  pass "NVML process list shows the slice's process" || fail "NVML processes: $out"
if [[ -z $simulated ]] && command -v nvidia-smi > /dev/null; then
  smi=$(in_slice info $limit nvidia-smi --query-gpu=memory.total,memory.used \
        --format=csv,noheader,nounits 2>&1 | head -1 | tr -d ' ')
  [[ $smi == "1024,100" ]] && pass "nvidia-smi in the slice shows 1024 MiB total, 100 used" ||
    fail "nvidia-smi in the slice: $smi"
  apps=$(in_slice info $limit nvidia-smi --query-compute-apps=pid,used_memory \
         --format=csv,noheader,nounits 2>&1 | tr -d ' ')
  [[ $apps == "$holder,100" ]] && pass "nvidia-smi lists the slice's process" ||
    fail "nvidia-smi processes: $apps"
fi
exec {hold_fd}>&-
wait "${pids[-1]}" 2>/dev/null

# ---- 4. racing processes never exceed the limit -------------------------------------------------
limit=$((512 * MiB))
chunk=$((6 * MiB + 4096))
exceeded=0
for race in $(seq "$races"); do
  fds=()
  for p in $(seq 8); do
    mkfifo "$work/race$p.in"
    slice_env "race$race" $limit
    env "${SLICE_ENV[@]}" "$work/worker" race $chunk < "$work/race$p.in" > "$work/race$p.out" 2>&1 &
    pids+=($!)
    exec {fd}>"$work/race$p.in"
    fds+=("$fd")
  done
  for p in $(seq 8); do
    for _ in $(seq 300); do grep -q ready "$work/race$p.out" && break; sleep 0.05; done
  done
  for fd in "${fds[@]}"; do echo go >&"$fd"; done
  total=0
  for p in $(seq 8); do
    for _ in $(seq 300); do grep -q granted "$work/race$p.out" && break; sleep 0.05; done
    total=$((total + $(awk '$1 == "granted" {print $2}' "$work/race$p.out")))
  done
  for fd in "${fds[@]}"; do exec {fd}>&-; done
  wait
  rm -f "$work"/race*.in "$work"/race*.out "$work/race$race.region"
  if ((total > limit || total <= limit - chunk)); then
    exceeded=$((exceeded + 1))
    echo "  race $race: granted $total of $limit"
  fi
done
((exceeded == 0)) && pass "$races races of 8 processes: never above the limit, always filled" ||
  fail "$exceeded of $races races went above the limit or did not fill it"

# ---- 5. SIGKILL: nobody wedges, memory comes back within a second -----------------------------
limit=$((1024 * MiB))
slice_env kill $limit
SLICE_ENV+=(VGPU_TEST_CRITICAL_SLEEP_US=500)
for p in 0 1 2 3; do
  env "${SLICE_ENV[@]}" "$work/worker" churn "$work/c$p" 4000 < /dev/null > /dev/null 2>&1 &
  churn[$p]=$!
done
sleep 1
counter() { od -An -tu8 "$work/c$1" 2>/dev/null | tr -d ' '; }
stuck=0
for k in $(seq 20); do
  v=$((RANDOM % 4))
  sleep "0.0$((RANDOM % 5 + 1))"
  kill -9 "${churn[$v]}"
  wait "${churn[$v]}" 2>/dev/null
  for p in 0 1 2 3; do
    [[ $p == "$v" ]] && continue
    before=$(counter $p)
    for _ in $(seq 60); do [[ $(counter $p) != "$before" ]] && break; sleep 0.05; done
    [[ $(counter $p) != "$before" ]] || stuck=$((stuck + 1))
  done
  env "${SLICE_ENV[@]}" "$work/worker" churn "$work/c$v" 4000 < /dev/null > /dev/null 2>&1 &
  churn[$v]=$!
done
((stuck == 0)) && pass "20 random SIGKILLs: the other processes never stopped" ||
  fail "$stuck times a process made no progress for 3 s after a kill"
for p in 0 1 2 3; do kill -9 "${churn[$p]}" 2>/dev/null; wait "${churn[$p]}" 2>/dev/null; done
# A process holding 700 MiB is killed; its memory must be back within a second for others.
mkfifo "$work/hog.in"
slice_env kill $limit
env "${SLICE_ENV[@]}" "$work/worker" hold $((700 * MiB)) < "$work/hog.in" > "$work/hog.out" 2>&1 &
hog=$!
exec {hog_fd}>"$work/hog.in"
for _ in $(seq 100); do grep -q ready "$work/hog.out" && break; sleep 0.1; done
kill -9 $hog
wait $hog 2>/dev/null
start=$(date +%s%N)
back=no
while (( ($(date +%s%N) - start) < 1000000000 )); do
  used=$(in_slice kill $limit "$work/worker" usage 2>/dev/null | field used)
  if [[ -n $used ]] && ((used < 100 * MiB)); then back=yes; break; fi
done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
exec {hog_fd}>&-
[[ $back == yes ]] && pass "a killed process's 700 MiB returned to the slice in $ms ms" ||
  fail "a killed process's memory was still charged after $ms ms"
out=$(in_slice kill $limit "$work/worker" fill alloc $((1000 * MiB)) 2>&1 | field first)
[[ $out == CUDA_SUCCESS ]] && pass "after the kills the whole slice can be allocated again" ||
  fail "after the kills: $out"

fi

# ---- 6. compute: caps, elastic give-back, priority, every launch path --------------------------
# `vgpu bench share` runs tenants of calibrated busy kernels, each a process in its own slice
# (libvgpu.so from vgpu's own build), on this GPU (or, with --simulated-driver, through the same
# real-GPU code path against the simulated driver). Shares and waits come from CUDA events in each
# tenant; the checks are those of tests/compute.
compute_checks() {
  if [[ ! -x $vgpu ]]; then fail "compute: $vgpu not found (--vgpu)"; return; fi
  if ! command -v python3 > /dev/null; then fail "compute: python3 is needed to read the results"; return; fi
  "$nvcc" -fatbin -arch=native -o "$work/spin.fatbin" "$root/tests/gpu/spin_kernel.cu" 2>/dev/null ||
    "$nvcc" -fatbin -o "$work/spin.fatbin" "$root/tests/gpu/spin_kernel.cu" ||
    { fail "compute: cannot build the spin kernel"; return; }
  local cycles=1000
  if [[ -z $simulated ]]; then
    cycles=$("$vgpu" bench tenant --calibrate --module "$work/spin.fatbin") ||
      { fail "compute: calibration failed"; return; }
    echo "spin kernel: $cycles cycles per microsecond"
  fi
  local s=$compute_seconds
  bench() {
    env ${sanitizer_runtime:+LD_PRELOAD="$sanitizer_runtime"} VGPU_STATE_DIR="$work/state" \
      LIBCUDA_LOG_LEVEL=1 "$vgpu" bench share --json \
      --module "$work/spin.fatbin" --cycles-per-us "$cycles" "$@"
  }
  # check MODE ARGS < json: prints one line per tenant and exits non-zero when a check fails.
  check() {
    python3 -c '
import json, sys
mode, args = sys.argv[1], sys.argv[2:]
r = json.load(sys.stdin)
t = {x["name"]: x for x in r["tenants"]}
ok = True
for x in r["tenants"]:
    print("    %-4s target %-6s share %6.2f worst window %-6s wait p50 %.3f ms p99 %.3f ms, %.1f kernels/s%s" % (
        x["name"], x["target"], x["share"], x["worst_window_pp"], x["wait_p50_ms"], x["wait_p99_ms"],
        x["throughput"], "" if x["throughput_ratio"] is None else ", %.1f%% of alone" % (100 * x["throughput_ratio"])))
if mode == "targets":
    tol = float(args[0])
    for x in r["tenants"]:
        ok &= abs(x["share"] - x["target"]) <= tol and x["worst_window_pp"] <= tol
elif mode == "elastic":
    a, b, start = t["a"], t["b"], int(args[0])
    print("    a per second:", a["per_second"])
    ok &= min(a["per_second"][1:start]) >= 95 and abs(a["per_second"][start + 1] - 30) <= 3
elif mode == "priority":
    hi = t["hi"]
    ok &= hi["wait_p99_ms"] <= r["time_slice_ms"] + hi["kernel_ms"] and hi["throughput_ratio"] >= 0.95
elif mode == "held":
    ok &= abs(t["t"]["share"] - float(args[0])) <= 3
sys.exit(0 if ok else 1)
' "$@"
  }
  local out
  out=$(bench --seconds "$s" --tenant a:max=30 --tenant b:max=70) &&
    echo "$out" | check targets 3 && pass "compute: caps 30/70 within 3 points over ${s} s" ||
    fail "compute: caps 30/70: $out"
  out=$(bench --seconds "$s" --tenant a:max=10 --tenant b:max=20 --tenant c:max=30 --tenant d:max=40) &&
    echo "$out" | check targets 3 && pass "compute: caps 10/20/30/40 within 3 points" ||
    fail "compute: caps 10/20/30/40: $out"
  out=$(bench --seconds "$s" --tenant a:max=50) && echo "$out" | check targets 3 &&
    pass "compute: a capped tenant alone stays at its cap" || fail "compute: alone at 50: $out"
  local start=$(( s < 4 ? 2 : s / 2 ))
  out=$(bench --seconds "$(( start + 2 ))" --tenant a:guarantee=30 --tenant "b:guarantee=70,start=${start}s") &&
    echo "$out" | check elastic "$start" &&
    pass "compute: elastic 30 alone >= 95%, back to 30 +- 3 within a second of a 70 guarantee" ||
    fail "compute: elastic: $out"
  out=$(bench --seconds "$s" --baseline --baseline-seconds "$s" --tenant hi:priority=high,gap=1ms \
        --tenant lo:priority=low) && echo "$out" | check priority &&
    pass "compute: high priority waits <= slice + kernel (p99), keeps >= 95% of its throughput" ||
    fail "compute: priority: $out"
  for launch in graph coop ex ptsz; do
    out=$(bench --seconds "$(( s < 3 ? s : 3 ))" --tenant "t:max=25,launch=$launch") &&
      echo "$out" | check held 25 && pass "compute: $launch launches are held like plain launches" ||
      fail "compute: $launch launches: $out"
  done
}
wants compute && compute_checks

# ---- 7. copy QoS: caps per tenant, stream order under chunked pacing ----------------------------
# `vgpu bench copy` runs tenants of host-device copies, each in its own slice with its caps, on
# this GPU; tests/gpu/copy_qos.cu checks stream order and the rate in one slice (runtime API, so
# not with --simulated-driver).
copy_checks() {
  if [[ ! -x $vgpu ]]; then fail "copy: $vgpu not found (--vgpu)"; return; fi
  if ! command -v python3 > /dev/null; then fail "copy: python3 is needed to read the results"; return; fi
  # On the simulated driver every copied byte is a memmove on this host: rates in MB/s.
  local s=$compute_seconds out u=GB
  [[ -n $simulated ]] && u=00MB
  copy_bench() {
    env ${sanitizer_runtime:+LD_PRELOAD="$sanitizer_runtime"} VGPU_STATE_DIR="$work/state" \
      LIBCUDA_LOG_LEVEL=1 "$vgpu" bench copy --json "$@"
  }
  copy_check() {
    python3 -c '
import json, sys
tol = float(sys.argv[1])
r = json.load(sys.stdin)
ok = True
for t in r["tenants"]:
    for d in ("h2d", "d2h"):
        if d in t and t[d]["target"] is not None:
            x = t[d]
            print("    %-4s %s target %.3f GB/s achieved %.3f GB/s worst window %.1f%%" % (
                t["name"], d, x["target"] / 1e9, x["achieved"] / 1e9, x["worst_window_pct"]))
            ok &= x["worst_window_pct"] <= tol
sys.exit(0 if ok else 1)
' "$@"
  }
  out=$(copy_bench --seconds "$s" --tenant a:h2d=2$u/s --tenant b:h2d=4$u/s) &&
    echo "$out" | copy_check 5 && pass "copy: H2D caps 2/4 ($u/s) within 5% in every second" ||
    fail "copy: caps 2/4 $u/s: $out"
  out=$(copy_bench --seconds "$s" --tenant a:h2d=1$u/s --tenant b:d2h=3$u/s \
        --tenant c:h2d=2$u/s,d2h=2$u/s) && echo "$out" | copy_check 5 &&
    pass "copy: three tenants in both directions within 5% in every second" ||
    fail "copy: both directions: $out"
  if [[ -z $simulated ]]; then
    "$nvcc" -o "$work/copy_qos" "$root/tests/gpu/copy_qos.cu" ||
      { fail "copy: cannot build copy_qos.cu"; return; }
    out=$(env LD_PRELOAD="$libvgpu" VGPU_COPY_H2D=3GB/s VGPU_COPY_CHUNK=4MiB \
          "$work/copy_qos" 3000000000 2>&1) && pass "copy: stream order kept, rate at the cap" ||
      fail "copy: copy_qos: $out"
    echo "$out" | sed 's/^/    /'
    # Two tenants at once under libvgpu.so, each in its own region with its own H2D cap (2 and
    # 4 GB/s): every 1 s window of each within 5% of its cap, printed.
    local caps=(2GB/s 4GB/s) bytes=(2000000000 4000000000) pids=() rc=0
    for i in 0 1; do
      env LD_PRELOAD="$libvgpu" VGPU_REGION="$work/copy-tenant-$i.region" \
        VGPU_COPY_H2D="${caps[$i]}" "$work/copy_qos" --windows "$s" "${bytes[$i]}" \
        > "$work/copy-tenant-$i.out" 2>&1 &
      pids+=($!)
    done
    for i in 0 1; do wait "${pids[$i]}" || rc=1; done
    for i in 0 1; do
      echo "    tenant $i (cap ${caps[$i]}):"
      sed 's/^/      /' "$work/copy-tenant-$i.out"
    done
    ((rc == 0)) && pass "copy: two tenants under libvgpu.so, every 1 s window within 5% of its cap" ||
      fail "copy: two tenants under libvgpu.so (windows above)"
  fi
}
wants copy && copy_checks

# ---- cuBLAS in a 1 GiB slice ------------------------------------------------------------------
# tests/simgpu/cublas_program.cu under libvgpu.so: the handle's workspace is charged to the slice,
# its GEMMs run, and in the filled slice a new handle is refused (CUBLAS_STATUS_ALLOC_FAILED).
cublas_checks() {
  echo
  echo "== cuBLAS in a 1 GiB slice"
  local cuda_lib
  cuda_lib=$(cd "$(dirname "$nvcc")/.." && pwd)/lib64
  if ! "$nvcc" -O1 -std=c++17 -o "$work/cublas_program" "$root/tests/simgpu/cublas_program.cu" \
       -lcublas -Xlinker -rpath="$cuda_lib" > "$work/cublas.build" 2>&1; then
    echo "SKIPPED: cannot build the cuBLAS program (no cuBLAS in the toolkit?):"
    sed 's/^/    /' "$work/cublas.build" | tail -5
    return
  fi
  local out rc
  out=$(in_slice cublas $((1 << 30)) "$work/cublas_program" --total $((1 << 30)) --slice 2>&1)
  rc=$?
  echo "$out" | sed 's/^/    /'
  ((rc == 0)) && pass "cuBLAS in a 1 GiB slice: handle, GEMMs, workspace charged and refused" ||
    fail "cuBLAS in a 1 GiB slice (exit $rc, output above)"
}
wants cublas && cublas_checks

# ---- PyTorch in a 4 GiB, 30% slice (real GPU only) --------------------------------------------
# tests/gpu/torch_slice.py under `vgpu run --memory 4GiB --cores 30`: mem_get_info shows the slice,
# a transformer's forward and backward run, allocating past the slice raises PyTorch's own OOM;
# and its matmul throughput is 30% (25-35%) of the same loop outside the slice.
torch_checks() {
  echo
  echo "== PyTorch in a 4 GiB, 30% slice"
  if [[ -n $simulated ]]; then
    echo "SKIPPED: PyTorch needs a real GPU (its kernels compute)"
    return
  fi
  if ! python3 -c 'import torch' 2> /dev/null; then
    echo "SKIPPED: PyTorch is not importable by python3"
    return
  fi
  local script=$root/tests/gpu/torch_slice.py seconds=$compute_seconds
  local base out rc
  base=$(python3 "$script" --throughput-only --seconds "$seconds" 2>&1 | field throughput)
  out=$("$vgpu" run --memory 4GiB --cores 30 -- python3 "$script" --expect-total $((4 << 30))     --seconds "$seconds" 2>&1)
  rc=$?
  echo "$out" | sed 's/^/    /'
  ((rc == 0)) && pass "PyTorch in the slice: memory, training step and OOM as expected" ||
    fail "PyTorch in the slice (exit $rc, output above)"
  local sliced
  sliced=$(echo "$out" | field throughput)
  if [[ -n $base && -n $sliced ]]; then
    local share
    share=$(python3 -c "print('%.1f' % (100 * $sliced / $base))")
    echo "    matmul throughput: $sliced/s in the slice, $base/s outside: $share%"
    python3 -c "import sys; sys.exit(0 if 25 <= 100 * $sliced / $base <= 35 else 1)" &&
      pass "PyTorch's matmul loop gets $share% of the GPU under --cores 30" ||
      fail "PyTorch's matmul loop got $share% of the GPU under --cores 30 (want 25-35)"
  else
    fail "PyTorch throughput missing (outside: '$base', in the slice: '$sliced')"
  fi
}
wants torch && torch_checks

echo
if ((failures == 0)); then
  echo "ALL GPU CHECKS PASSED"
  exit 0
fi
echo "$failures GPU CHECK(S) FAILED"
exit 1
