#!/usr/bin/env bash
# Runs a CUDA runtime program (tests/simgpu/cudart_program.cu, built by nvcc) on the simulated
# GPU: without libvgpu, where it must see the whole device, and with libvgpu preloaded and a
# memory limit, where it must see the slice and be refused one allocation past it.
#
#   cudart_check.sh --program PROG --simgpu DIR [--libvgpu LIB] [--request-log FILE]
#                   [--known-unserved "TABLE SLOT"]...
#
# DIR holds the simulated libcuda.so.1 and libnvidia-ml.so.1. --request-log keeps the driver's
# request log (export tables, their slots, cuGetProcAddress lookups) of the run without libvgpu.
# --known-unserved: a private-table slot that PROG calls, that the simulated driver does not
# serve, and without which PROG is known to run (reported as a note, not a failure).
# Exit status: 0 every check passed, 1 a check failed, 2 bad usage, 77 skipped (PROG missing:
# nvcc was not found when the project was configured).
set -u
program="" simgpu="" libvgpu="" request_log="" known_unserved=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --program) program=$2; shift 2 ;;
    --simgpu) simgpu=$2; shift 2 ;;
    --libvgpu) libvgpu=$2; shift 2 ;;
    --request-log) request_log=$2; shift 2 ;;
    --known-unserved) known_unserved+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "cudart_check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n $program && -n $simgpu ]] || { echo "cudart_check.sh: --program and --simgpu are required" >&2; exit 2; }
if [[ ! -x $program ]]; then
  echo "SKIP: $program was not built (no nvcc, or no cuBLAS for the cuBLAS program, when the project was configured)"
  exit 77
fi
[[ -r $simgpu/libcuda.so.1 ]] || { echo "cudart_check.sh: no libcuda.so.1 in $simgpu" >&2; exit 2; }

work=$(mktemp -d /tmp/vgpu-cudart-check-XXXXXX)
trap 'rm -rf "$work"' EXIT
# Two devices: the program checks device 0 (8 GiB) and that device 2 does not exist.
cat > "$work/devices.conf" <<'CONF'
model=h100 memory=8GiB
model=a100 memory=1GiB name="vgpu simulated small"
CONF
GiB=$((1 << 30))
export LD_LIBRARY_PATH=$simgpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VGPU_SIMGPU_CONFIG=$work/devices.conf VGPU_SIMGPU_STATE=$work/state VGPU_SIMGPU_LOG_LEVEL=2
failures=0

echo "== $(basename "$program") on the simulated GPU, without libvgpu"
log=${request_log:-$work/requests.log}
rm -f "$log"
VGPU_SIMGPU_REQUEST_LOG=$log "$program" --total $((8 * GiB)) --devices 2 || failures=$((failures + 1))
# What the runtime asked the driver for: its interface table, a passed integrity check, and no
# slot that the simulated driver does not serve.
if grep -q '^export-table 6bd5fb6c-5bf4-e74a-8987-d93912fd9df9 CUDART_INTERFACE served$' "$log" &&
   grep -q '^export-call INTEGRITY_CHECK 1 0 ' "$log"; then
  echo "ok: the runtime took the driver's interface table and its integrity check"
else
  echo "FAIL: the request log lacks the runtime's interface table or integrity check"
  failures=$((failures + 1))
fi
unserved=""
while read -r table slot; do
  [[ -n $table ]] || continue
  if printf '%s\n' "${known_unserved[@]}" | grep -qxF "$table $slot"; then
    echo "note: called $table slot $slot, known to be unserved and not needed"
  else
    unserved+=$(awk -v t="$table" -v s="$slot" '$1 == "export-call" && $2 == t && $3 == s && $4 == 801' \
      "$log" | head -1)$'\n'
  fi
done < <(awk '$1 == "export-call" && $4 == 801 {print $2, $3}' "$log" | sort -u)
unserved=${unserved%$'\n'}
if [[ -n $unserved ]]; then
  echo "FAIL: the runtime called slots the simulated driver does not serve:"
  echo "$unserved"
  failures=$((failures + 1))
fi
awk '$1 == "export-table" && $3 == "unknown" {print "note: the runtime asked for table " $2 " (not served)"}' \
  "$log" | sort -u

if [[ -n $libvgpu ]]; then
  echo "== $(basename "$program") under libvgpu, 1 GiB slice"
  LD_PRELOAD=$libvgpu CUDA_DEVICE_MEMORY_LIMIT=1g CUDA_DEVICE_MEMORY_SHARED_CACHE=$work/slice.region \
    VGPU_CONTEXT_OVERHEAD=0 LIBCUDA_LOG_LEVEL=1 \
    "$program" --total $GiB --devices 2 --slice || failures=$((failures + 1))
fi
[[ $failures -eq 0 ]] && echo "PASS" || echo "FAIL: $failures run(s) failed"
[[ $failures -eq 0 ]]
