#!/usr/bin/env bash
# The interception layer's coverage of what NVIDIA's CUDA runtime asks the driver for: runs each
# runtime program on the simulated GPU with the driver's request log on, then lists with
# simgpu_proc_coverage every entry point the runtime resolved through cuGetProcAddress that
# allocates, frees, launches, copies over the host link or reports memory, and whether libvgpu
# hooks it. Fails when one of those is not hooked.
#
#   proc_coverage_check.sh --tool TOOL --libvgpu LIB --simgpu DIR PROGRAM...
#
# Exit status: 0 all covered, 1 an entry point is not hooked (or a program failed), 2 bad usage,
# 77 skipped (no program was built: nvcc was not found).
set -u
tool="" libvgpu="" simgpu="" programs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --tool) tool=$2; shift 2 ;;
    --libvgpu) libvgpu=$2; shift 2 ;;
    --simgpu) simgpu=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "proc_coverage_check.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) programs+=("$1"); shift ;;
  esac
done
[[ -n $tool && -n $libvgpu && -n $simgpu && ${#programs[@]} -gt 0 ]] ||
  { echo "proc_coverage_check.sh: --tool, --libvgpu, --simgpu and a program are required" >&2; exit 2; }
work=$(mktemp -d /tmp/vgpu-proc-coverage-XXXXXX)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$simgpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VGPU_SIMGPU_STATE=$work/state VGPU_SIMGPU_LOG_LEVEL=1
logs=()
for p in "${programs[@]}"; do
  [[ -x $p ]] || continue
  log=$work/$(basename "$p").log
  VGPU_SIMGPU_REQUEST_LOG=$log "$p" --total $((80 << 30)) >/dev/null ||
    { echo "FAIL: $p failed on the simulated GPU"; exit 1; }
  logs+=("$log")
done
[[ ${#logs[@]} -gt 0 ]] || { echo "SKIP: no runtime program was built (no nvcc)"; exit 77; }
"$tool" --libvgpu "$libvgpu" --simgpu "$simgpu" --fail-unhooked "${logs[@]}"
