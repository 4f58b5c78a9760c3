#!/usr/bin/env bash
# The figures of docs/topology.md (and README.md's topology paragraph), each after the command
# that makes it: `vgpu bench topo` on the 8-GPU and the 16-GPU presets and with communication
# patterns (section 4 and 3), and the trace replays with server shapes (section 7: job completion
# times; requiring NVLink).
#
#   bench/topo/topo_tables.sh [--vgpu PATH]
#
# The bandwidth, best-set and NUMA columns and the replays are deterministic (seeded); the
# decision times are CPU times of this machine. About 30 s on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
vgpu=build/bin/vgpu
while (($# > 0)); do
  case $1 in
    --vgpu) vgpu=$(realpath "$2"); shift 2 ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "topo_tables.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
cd "$root"
# Prints the command (quoted where it needs to be), then runs it; a non-zero exit status is
# printed and the figures go on.
show() {
  local a line=
  for a; do
    if [[ $a =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then line+=" $a"; else line+=" ${a@Q}"; fi
  done
  printf '\n$%s\n' "$line"
  "$@" || echo "(exit status $?)"
}

echo "## vgpu bench topo (section 4)"
show "$vgpu" bench topo --seeds 1-3 --jobs 300
show "$vgpu" bench topo --preset dgx2,pcie16-switch --seeds 1-3 --jobs 300
echo
echo "## Communication patterns: decision time (section 3)"
show "$vgpu" bench topo --patterns --preset dgx1-volta,pcie4-nvbridge,pcie8-switch,hgx-h200
echo
echo "## Trace replay with topology: job completion times (section 7)"
for shape in hgx-h200 dgx-a100 dgx1-volta pcie8-2socket pcie8-switch; do
  show "$vgpu" sim --mode replay --quiet --alloc whole --topology "$shape,pcie4-nvbridge"
  show "$vgpu" sim --mode replay --quiet --alloc whole --topology "$shape,pcie4-nvbridge" \
    --cluster-scale 0.01 --queue backfill --seeds 42-44
done
show "$vgpu" sim --mode replay --quiet --alloc whole --topology dgx1-volta,pcie4-nvbridge \
  --cluster-scale 0.005 --queue backfill --seeds 42-44
show "$vgpu" sim --mode replay --quiet --alloc whole --topology dgx1-volta,pcie4-nvbridge \
  --comm-share 0.6 --cluster-scale 0.05 --gpu-choice vgpu,lowest-index,besteffort,policy \
  --queue backfill --seeds 42-44
echo
echo "## Requiring NVLink in the replay (section 7)"
for nvlink in "" --require-nvlink; do
  show "$vgpu" sim --mode replay --quiet --alloc whole --topology dgx1-volta,pcie4-nvbridge \
    --gpu-choice vgpu,lowest-index ${nvlink:+"$nvlink"} --json
  show "$vgpu" sim --mode replay --quiet --alloc whole --topology dgx1-volta,pcie4-nvbridge \
    --gpu-choice vgpu,lowest-index ${nvlink:+"$nvlink"} --json --cluster-scale 0.01 --queue backfill \
    --seeds 42-44
done
