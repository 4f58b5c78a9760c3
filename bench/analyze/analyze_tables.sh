#!/usr/bin/env bash
# The figures of docs/analyze.md (and README.md's analysis paragraph), each after the command
# that makes it: the anomaly scores on injected anomalies (seeds 1-5, the held-out seeds 101-105,
# leak rates), the detections of the untouched series, the steps of the bundled memory series,
# the load forecasts (per pod, cluster, and per node of a grouping), memory right-sizing, the
# rule scenarios' dry runs, and the online analyses' cost per round (bench_node_analysis).
#
#   bench/analyze/analyze_tables.sh [--vgpu PATH]
#
# Everything but the cost per round (CPU time of this machine) is deterministic (seeded).
# About a minute on 2 cores. Needs build/bin/bench_node_analysis for the last figure.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
vgpu=build/bin/vgpu
while (($# > 0)); do
  case $1 in
    --vgpu) vgpu=$(realpath "$2"); shift 2 ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "analyze_tables.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
cd "$root"
work=$(mktemp -d /tmp/vgpu-analyze-tables-XXXXXX)
trap 'rm -rf "$work"' EXIT
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
data=data/alibaba-genai-2026

echo "## Anomalies: scores on injected anomalies"
show "$vgpu" analyze anomalies --evaluate --seeds 1-5
show "$vgpu" analyze anomalies --evaluate --seeds 101-105
for rate in 0.25 0.3 0.5 1 2 4 8 16; do
  show "$vgpu" analyze anomalies --util '' --evaluate --seeds 1-5 --leak-rate "$rate"
done
echo
echo "## Anomalies: the detections that lower precision (seeds 1-5)"
show "$vgpu" analyze anomalies --evaluate --seeds 1-5 --unmatched
echo
echo "## Anomalies of the untouched series: memory (no leak at all), then utilization"
show "$vgpu" analyze anomalies --util ''
show "$vgpu" analyze anomalies --memory ''
echo
echo "## The steps of the bundled memory series"
# shellcheck disable=SC2016
show awk -F, 'NR>1{p=$3; if((p in t) && $1-t[p]==57){d=$2-v[p]; if(d<0)d=-d; n++; z+=(d==0);
  j+=(d>2^30); s+=(d>0&&d<=2^26)} t[p]=$1; v[p]=$2}
  END{printf "zero %.1f%%, over 1 GiB %.1f%%, 0 < |d| <= 64 MiB %.1f%%\n", 100*z/n, 100*j/n, 100*s/n}' \
  "$data/pod_gpu_memory_used_bytes_anon.csv"
echo
echo "## Load forecast (first half: per_series_first_half and first_half_mae_over_mean)"
show "$vgpu" analyze forecast
echo
echo "\$ $vgpu analyze forecast --json   (the summaries and the sum's series)"
"$vgpu" analyze forecast --json >"$work/forecast.json"
if command -v jq >/dev/null; then
  jq -c 'del(.series), (.series[] | select(.series == "(sum)"))' "$work/forecast.json"
else
  cat "$work/forecast.json"
fi
echo
echo "## Load forecast per node: the 76 pods dealt in order to 8 nodes"
echo "(groups.csv: the pods of $data/pod_gpu_duty_cycle_anon.csv, sorted, node(i mod 8) each)"
tr -d '\r' <"$data/pod_gpu_duty_cycle_anon.csv" | awk -F, 'NR>1{print $3}' |
  LC_ALL=C sort -u | awk 'BEGIN{print "series,node"}{print $0",node"(NR-1)%8}' >"$work/groups.csv"
show "$vgpu" analyze forecast --groups "$work/groups.csv"
echo
echo "## Memory right-sizing"
show "$vgpu" analyze rightsize
echo
echo "## Tuning rules: the scenarios on deploy/analyze/rules.yaml"
for scenario in copy_hog leak xid_burst idle quiet; do
  show "$vgpu" analyze scenario "$scenario" --out "$work/$scenario.csv"
  show "$vgpu" analyze rules --rules deploy/analyze/rules.yaml --series "$work/$scenario.csv" \
    --dry-run
done
echo
echo "## Online analyses: CPU time per round, 100 slices on 8 GPUs (4 h, then 12 h of history)"
show build/bin/bench_node_analysis
show build/bin/bench_node_analysis --hours 12 --rounds 240
