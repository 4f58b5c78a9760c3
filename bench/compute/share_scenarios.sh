#!/usr/bin/env bash
# The compute-sharing scenarios, run with `vgpu bench share`, as a Markdown table
# (docs/compute.md reports its output).
#
#   bench/compute/share_scenarios.sh [--vgpu PATH] [--seconds S] [--real] [--json-dir DIR]
#                                    [--only REGEX] [--load N]
#
# Default: the simulated GPU (--sim), 12 s runs (three sliding 10 s windows). --real runs on this
# machine's GPU (with the calibrated kernel of tests/gpu/run.sh: pass --module/--cycles-per-us in
# VGPU_BENCH_ARGS). --only runs the scenarios whose name matches REGEX (bash =~). --load N keeps
# N busy processes (`yes >/dev/null`) running during the scenarios: a loaded host. About 15
# minutes for all of them. Needs python3 to format the results.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
vgpu=$root/build/bin/vgpu
seconds=12
sim=--sim
json_dir=
only=
load=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --vgpu) vgpu=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --real) sim=; shift ;;
    --json-dir) json_dir=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "share_scenarios.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d /tmp/vgpu-share-scenarios-XXXXXX)
hogs=()
trap 'for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
for ((i = 0; i < load; i++)); do
  yes >/dev/null &
  hogs+=($!)
done
half=$((seconds / 2))
touch "$work/order"

run() {  # NAME ARGS...
  local name=$1
  shift
  [[ -n $only && ! $name =~ $only ]] && return 0
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
run priority-after-idle --seconds "$seconds" --baseline --baseline-seconds "$seconds" \
  --tenant hi:priority=high,gap=50ms --tenant lo:priority=low
run launch-paths --seconds "$seconds" --tenant ptsz:max=10,launch=ptsz \
  --tenant ex:max=20,launch=ex --tenant coop:max=30,launch=coop --tenant graph:max=40,launch=graph
run weights --seconds "$seconds" --tenant a:elastic --tenant b:elastic,weight=3
run short-kernels --seconds "$seconds" --kernel 100us --tenant a:max=30 --tenant b:max=70
# Saturating tenants with few kernels in flight (launch, wait for the oldest, launch again).
for depth in 1 2 4 16; do
  run "guarantees-depth-$depth" --seconds "$seconds" --tenant "a:guarantee=30,max=100,depth=$depth" \
    --tenant "b:guarantee=70,max=100,depth=$depth"
  run "weights-depth-$depth" --seconds "$seconds" --tenant "a:elastic,depth=$depth" \
    --tenant "b:elastic,weight=3,depth=$depth"
done
# Launch-then-sync tenants (an inference loop): N kernels, cuStreamSynchronize, optionally 1 ms of
# host time, and again.
for sync in 1 4 20; do
  for host in 0 1ms; do
    extra= suffix=
    [[ $host != 0 ]] && extra=",gap=$host" suffix="-host-$host"
    run "weights-sync-$sync$suffix" --seconds "$seconds" --tenant "a:elastic,sync=$sync$extra" \
      --tenant "b:elastic,weight=3,sync=$sync$extra"
    run "guarantees-sync-$sync$suffix" --seconds "$seconds" \
      --tenant "a:guarantee=30,max=100,sync=$sync$extra" \
      --tenant "b:guarantee=70,max=100,sync=$sync$extra"
  done
done
run caps-depth-1 --seconds "$seconds" --tenant a:max=30,depth=1 --tenant b:max=60,depth=1
run caps-30-70-depth-1 --seconds "$seconds" --tenant a:max=30,depth=1 --tenant b:max=70,depth=1
run alone-30-depth-1 --seconds "$seconds" --tenant a:max=30,depth=1
# An idle tenant's share goes to the other: b stops half-way.
run idle-handover-depth-1 --seconds "$seconds" --tenant a:guarantee=30,max=100,depth=1 \
  --tenant "b:guarantee=70,max=100,depth=1,stop=${half}s"
run idle-handover-depth-4 --seconds "$seconds" --tenant a:guarantee=30,max=100,depth=4 \
  --tenant "b:guarantee=70,max=100,depth=4,stop=${half}s"
# Co-location: a latency-bound high tenant (host time between 1 ms kernels) and a saturating low one.
for gap in 2ms 10ms; do
  run "colocation-gap-$gap" --seconds "$seconds" --baseline --baseline-seconds "$seconds" \
    --tenant "hi:priority=high,gap=$gap,max=100" --tenant lo:priority=low,max=100
done
run colocation-gap-2ms-slack-1ms --seconds "$seconds" --baseline --baseline-seconds "$seconds" \
  --tenant hi:priority=high,gap=2ms,max=100,latency_slack=1ms --tenant lo:priority=low,max=100
run colocation-normal-gap-2ms --seconds "$seconds" --baseline --baseline-seconds "$seconds" \
  --tenant hi:priority=high,gap=2ms,max=100 --tenant mid:priority=normal,gap=5ms,max=100 \
  --tenant lo:priority=low,max=100

python3 - "$work" <<'PY'
import json, sys, os
work = sys.argv[1]
levels = ["realtime", "high", "normal", "low", "idle"]
print("| scenario | tenant | policy | target | achieved (events) | achieved (timeline) | all tenants | worst 10 s window | converged | wait p50 / p99 (ms) | alone p99 (ms) | kernels/s | vs alone | of idle |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for name in open(os.path.join(work, "order")).read().split():
    r = json.load(open(os.path.join(work, name + ".json")))
    busy = sum(t["share"] for t in r["tenants"])
    for t in r["tenants"]:
        pol = "max %d" % t["max"]
        if t["mode"] == "elastic":
            pol += ", guarantee %d, elastic" % t["guarantee"]
        if t["weight"] != 1:
            pol += ", weight %d" % t["weight"]
        if t["priority"] != "normal":
            pol += ", " + t["priority"]
        if t["gap_ms"] > 0 and t["sync"] == 0:
            pol += ", gap %g ms" % t["gap_ms"]
        if t["depth"] > 0:
            pol += ", depth %d" % t["depth"]
        if t["sync"] > 0:
            pol += ", sync %d" % t["sync"]
            if t["gap_ms"] > 0:
                pol += ", host %g ms" % t["gap_ms"]
            if t["demand"] is not None:
                pol += " (uses %.1f alone)" % t["demand"]
        if t["latency_slack_ms"] > 0:
            pol += ", slack %g ms" % t["latency_slack_ms"]
        if t["start_s"] > 0:
            pol += ", starts at %g s" % t["start_s"]
        if t["stop_s"] is not None:
            pol += ", stops at %g s" % t["stop_s"]
        if t["launch"] != "kernel":
            pol += ", " + t["launch"]
        f = lambda v, d=2: "-" if v is None else ("%." + str(d) + "f") % v
        ratio = "-" if t["throughput_ratio"] is None else "%.1f%%" % (100 * t["throughput_ratio"])
        conv = "-" if t["converge_s"] is None else "%d s" % t["converge_s"]
        # Next to more important tenants: the share of the GPU time they leave idle that it got.
        above = [o for o in r["tenants"] if levels.index(o["priority"]) < levels.index(t["priority"])]
        of_idle = "-"
        if above:
            idle = 100.0 - sum(o["share"] for o in above)
            of_idle = "%.0f%% of %.1f" % (100.0 * t["share"] / idle, idle) if idle >= 1 else "-"
        print("| %s | %s | %s | %s | %s | %s | %.2f | %s | %s | %s / %s | %s | %.1f | %s | %s |" % (
            name, t["name"], pol, f(t["target"], 1), f(t["share"]), f(t["share_timeline"]), busy,
            "±" + f(t["worst_window_pp"]) if t["worst_window_pp"] is not None else "-", conv,
            f(t["wait_p50_ms"], 3), f(t["wait_p99_ms"], 3), f(t["alone_wait_p99_ms"], 3),
            t["throughput"], ratio, of_idle))
        if (name == "elastic" and t["name"] == "a") or (name.startswith("idle-handover") and t["name"] == "a"):
            print("| | | a per second: %s | | | | | | | | | | | |" % ", ".join("%.1f" % v for v in t["per_second"]))
        if t["idle_after_stop_ms"] is not None:
            print("| | | GPU idle from %s's last kernel to the next: %.3f ms | | | | | | | | | | | |" % (t["name"], t["idle_after_stop_ms"]))
PY
