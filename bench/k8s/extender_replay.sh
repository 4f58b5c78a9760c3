#!/usr/bin/env bash
# The extender replay figures of README.md and docs/scheduler.md: the bundled default trace (seed
# 42, up to 100% arrived) through a real `vgpu scheduler` process against the tests' API server
# (bench_extender_replay), on the trace's nodes and on the mixed-model variant
# (bench/k8s/openb_node_list_mixed.csv: 9 models, 7 memory sizes; also with the gpuspec10 pods,
# which name models), for each policy and filter mode; a markdown table.
# About 15 s a row on the 2-core development machine.
# Usage: bench/k8s/extender_replay.sh [POLICY...]   (default: default bestfit)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/bin/bench_extender_replay
[[ -x $bin ]] || { echo "build first: cmake --build build --target bench_extender_replay" >&2; exit 1; }
policies=("$@")
[[ ${#policies[@]} -gt 0 ]] || policies=(default bestfit)
d=data/alibaba-gpu-v2023
# label;nodes;pods
clusters=("default trace;$d/openb_node_list_gpu_node.csv;$d/openb_pod_list_default.csv"
          "mixed models;bench/k8s/openb_node_list_mixed.csv;$d/openb_pod_list_default.csv"
          "mixed models, gpuspec10 pods;bench/k8s/openb_node_list_mixed.csv;bench/k8s/openb_pod_list_gpuspec10_mixed.csv")
modes=("narrow:--filter-mode narrow"
       "narrow, kube-scheduler scores:--filter-mode narrow --kube-scores"
       "all:--filter-mode all"
       "all, kube-scheduler scores:--filter-mode all --kube-scores")
echo "| cluster and pods | policy | filter mode | vgpu sim | replay | replay - sim | engine, extender's tie order | decisions = engine | pods (CPU-only) | time |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for c in "${clusters[@]}"; do
  IFS=';' read -r label nodes pods <<<"$c"
  for p in "${policies[@]}"; do
    for m in "${modes[@]}"; do
      # shellcheck disable=SC2086
      "$bin" --json --nodes "$nodes" --pods "$pods" --policy "$p" ${m#*:} |
        python3 -c '
import json, sys
r = json.load(sys.stdin)
print("| %s | %s | %s | %.2f | %.2f | %+.2f | %.2f | %d of %d | %d (%d) | %.0f s |" % (
    sys.argv[1], r["policy"], sys.argv[2], r["sim_unallocated"], r["replay_unallocated"],
    r["delta"], r["engine_unallocated"], r["same_as_engine"], r["pods_replayed"],
    r["pods_replayed"], r["cpu_only"], r["seconds"]))' "$label" "${m%%:*}"
    done
  done
done
