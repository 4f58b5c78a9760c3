#!/usr/bin/env bash
# The Done-when scenarios of compute sharing, with `vgpu bench share`, as a Markdown table
# (docs/compute.md reports its output).
#
#   bench/compute/share_scenarios.sh [--vgpu PATH] [--seconds S] [--real] [--json-dir DIR]
#
# Default: the simulated GPU (--sim), 12 s runs (three sliding 10 s windows). --real runs on this
# machine's GPU (with the calibrated kernel of tests/gpu/run.sh: pass --module/--cycles-per-us in
# VGPU_BENCH_ARGS). Needs python3 to format the results.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
vgpu=$root/build/bin/vgpu
seconds=12
sim=--sim
json_dir=
while [[ $# -gt 0 ]]; do
  case $1 in
    --vgpu) vgpu=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --real) sim=; shift ;;
    --json-dir) json_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "share_scenarios.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d /tmp/vgpu-share-scenarios-XXXXXX)
trap 'rm -rf "$work"' EXIT
half=$((seconds / 2))

run() {  # NAME ARGS...
  local name=$1
  shift
  # shellcheck disable=SC2086
  "$vgpu" bench share $sim --json ${VGPU_BENCH_ARGS:-} "$@" > "$work/$name.json"
  [[ -n $json_dir ]] && mkdir -p "$json_dir" && cp "$work/$name.json" "$json_dir/"
  echo "$name" >> "$work/order"
}

run caps-30-70 --seconds "$seconds" --tenant a:max=30 --tenant b:max=70
run caps-10-90 --seconds "$seconds" --tenant a:max=10 --tenant b:max=90
run caps-20-30-50 --seconds "$seconds" --tenant a:max=20 --tenant b:max=30 --tenant c:max=50
run caps-10-20-30-40 --seconds "$seconds" --tenant a:max=10 --tenant b:max=20 --tenant c:max=30 \
  --tenant d:max=40
run alone-10 --seconds "$seconds" --tenant a:max=10
run alone-50 --seconds "$seconds" --tenant a:max=50
run alone-90 --seconds "$seconds" --tenant a:max=90
run elastic --seconds "$seconds" --tenant a:guarantee=30 --tenant "b:guarantee=70,start=${half}s"
run priority-latency --seconds "$seconds" --baseline --baseline-seconds "$seconds" \
  --tenant hi:priority=high,gap=1ms --tenant lo:priority=low
run priority-saturating --seconds "$seconds" --baseline --baseline-seconds "$seconds" \
  --tenant hi:priority=high --tenant lo:priority=low
run priority-after-idle --seconds "$seconds" --tenant hi:priority=high,gap=50ms \
  --tenant lo:priority=low
run launch-paths --seconds "$seconds" --tenant ptsz:max=10,launch=ptsz \
  --tenant ex:max=20,launch=ex --tenant coop:max=30,launch=coop --tenant graph:max=40,launch=graph
run weights --seconds "$seconds" --tenant a:elastic --tenant b:elastic,weight=3
run short-kernels --seconds "$seconds" --kernel 100us --tenant a:max=30 --tenant b:max=70

python3 - "$work" <<'PY'
import json, sys, os
work = sys.argv[1]
print("| scenario | tenant | policy | target | achieved (events) | achieved (timeline) | worst 10 s window | converged | wait p50 / p99 (ms) | kernels/s | vs alone |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for name in open(os.path.join(work, "order")).read().split():
    r = json.load(open(os.path.join(work, name + ".json")))
    for t in r["tenants"]:
        pol = "max %d" % t["max"]
        if t["mode"] == "elastic":
            pol += ", guarantee %d, elastic" % t["guarantee"]
        if t["weight"] != 1:
            pol += ", weight %d" % t["weight"]
        if t["priority"] != "normal":
            pol += ", " + t["priority"]
        if t["gap_ms"] > 0:
            pol += ", gap %g ms" % t["gap_ms"]
        if t["start_s"] > 0:
            pol += ", starts at %g s" % t["start_s"]
        if t["launch"] != "kernel":
            pol += ", " + t["launch"]
        f = lambda v, d=2: "-" if v is None else ("%." + str(d) + "f") % v
        ratio = "-" if t["throughput_ratio"] is None else "%.1f%%" % (100 * t["throughput_ratio"])
        conv = "-" if t["converge_s"] is None else "%d s" % t["converge_s"]
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %.1f | %s |" % (
            name, t["name"], pol, f(t["target"], 1), f(t["share"]), f(t["share_timeline"]),
            "±" + f(t["worst_window_pp"]) if t["worst_window_pp"] is not None else "-", conv,
            f(t["wait_p50_ms"], 3), f(t["wait_p99_ms"], 3), t["throughput"], ratio))
        if name == "elastic" and t["name"] == "a":
            print("| | | a per second: %s | | | | | | | | |" % ", ".join("%.1f" % v for v in t["per_second"]))
PY
