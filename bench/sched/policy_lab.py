#!/usr/bin/env python3
"""Runs placement policies (with options) over many traces and seeds and prints the unallocated GPU
% at 100% arrived, mean±sd per trace, as a markdown table. The experiments of
docs/default-policy.md are made with it.

A variant is `label=policy` or `label=policy:key=value,key=value`; each variant runs as its own
`vgpu sim` process, several at a time. Results are cached in out/lab/ (keyed by the binary's
mtime, the trace, the policy, its options and the seeds), so re-running a table only runs what
changed.

  bench/sched/policy_lab.py --variant fgd=fgd --variant def=default --seeds 42-51
  bench/sched/policy_lab.py --traces published --variant x=default:knob=1
  bench/sched/policy_lab.py --traces synthetic ...   (run bench/sched/make_variants.py first)

Trace sets: published (the six traces with published FGD results), bundled (those and
gpushare20), synthetic (out/variants/*.csv), all; or a comma-separated list of names/paths.
Columns: each trace's mean±sd, then `avg` (mean over traces) and, when a variant labelled `fgd`
is present, `vs fgd` (mean over traces of the difference).
"""
import argparse
import concurrent.futures as cf
import csv
import glob
import hashlib
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DATA = os.path.join(ROOT, "data", "alibaba-gpu-v2023")
PUBLISHED = ["default", "cpu050", "cpu100", "gpushare40", "gpuspec10", "multigpu20"]


def trace_paths(spec):
    if spec == "published":
        names = PUBLISHED
    elif spec == "bundled":
        names = PUBLISHED + ["gpushare20"]
    elif spec == "synthetic":
        return sorted(glob.glob(os.path.join(ROOT, "out", "variants", "*.csv")))
    elif spec == "all":
        return trace_paths("bundled") + trace_paths("synthetic")
    elif "," in spec:
        return [p for part in spec.split(",") for p in trace_paths(part)]
    else:
        names = [spec]
    out = []
    for n in names:
        if os.path.exists(n):
            out.append(os.path.abspath(n))
        elif os.path.exists(os.path.join(DATA, f"openb_pod_list_{n}.csv")):
            out.append(os.path.join(DATA, f"openb_pod_list_{n}.csv"))
        elif os.path.exists(os.path.join(ROOT, "out", "variants", f"{n}.csv")):
            out.append(os.path.join(ROOT, "out", "variants", f"{n}.csv"))
        else:
            sys.exit(f"unknown trace '{n}'")
    return out


def short(path):
    base = os.path.basename(path)[:-4]
    return base.replace("openb_pod_list_", "")


def published_fgd():
    out = {}
    with open(os.path.join(DATA, "fgd_published_unallocated_pct.csv")) as f:
        for r in csv.DictReader(f):
            if r["policy"] == "06-FGD" and r["stat_over_10_seeds"] == "mean":
                out[r["workload"].replace("openb_pod_list_", "")] = float(r["arrived_100pct"])
    return out


def run_one(binary, trace, policy, options, seeds, level):
    key = json.dumps([os.path.getmtime(binary), trace, os.path.getmtime(trace), policy, options,
                      seeds, level])
    digest = hashlib.sha1(key.encode()).hexdigest()[:16]
    cache = os.path.join(ROOT, "out", "lab", digest + ".json")
    if os.path.exists(cache):
        with open(cache) as f:
            return json.load(f)
    csv_path = cache[:-5] + ".csv"
    cmd = [binary, "sim", "--pods", trace, "--policy", policy, "--seeds", seeds, "--csv", csv_path,
           "--quiet", "--threads", "1"]
    for kv in options:
        cmd += ["--option", f"{policy}:{kv}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    values = []
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            if int(r["arrived_pct"]) == level:
                values.append(float(r["unallocated_pct"]))
    os.remove(csv_path)
    with open(cache, "w") as f:
        json.dump(values, f)
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", action="append", required=True,
                    help="label=policy[:key=value,...] (repeatable)")
    ap.add_argument("--traces", default="published")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--level", type=int, default=100, help="arrived %% to report")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "bin", "vgpu"))
    ap.add_argument("--per-seed", action="store_true", help="also print every seed's value")
    a = ap.parse_args()
    os.makedirs(os.path.join(ROOT, "out", "lab"), exist_ok=True)
    variants = []
    for v in a.variant:
        label, _, rest = v.partition("=")
        policy, _, opts = (rest or label).partition(":")
        variants.append((label, policy, [o for o in opts.split(",") if o]))
    traces = trace_paths(a.traces)
    jobs = {}
    with cf.ThreadPoolExecutor(a.jobs) as pool:
        for label, policy, opts in variants:
            for t in traces:
                jobs[(label, t)] = pool.submit(run_one, a.binary, t, policy, opts, a.seeds,
                                               a.level)
    results = {k: f.result() for k, f in jobs.items()}
    pub = published_fgd()
    labels = [v[0] for v in variants]
    head = ["variant"] + [short(t) for t in traces] + ["avg"]
    if "fgd" in labels:
        head.append("vs fgd")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    if a.level == 100 and any(short(t) in pub for t in traces):
        row = ["published FGD"] + [f"{pub[short(t)]:.2f}" if short(t) in pub else "" for t in
                                   traces] + [""] * (len(head) - 1 - len(traces))
        print("| " + " | ".join(row) + " |")
    for label in labels:
        row = [label]
        means = []
        diffs = []
        for t in traces:
            v = results[(label, t)]
            m = statistics.mean(v)
            sd = statistics.stdev(v) if len(v) > 1 else 0.0
            means.append(m)
            row.append(f"{m:.2f}±{sd:.2f}")
            if "fgd" in labels:
                diffs.append(m - statistics.mean(results[("fgd", t)]))
        row.append(f"{statistics.mean(means):.3f}")
        if "fgd" in labels:
            row.append(f"{statistics.mean(diffs):+.3f}")
        print("| " + " | ".join(row) + " |")
    if a.per_seed:
        for label in labels:
            for t in traces:
                print(label, short(t), " ".join(f"{x:.2f}" for x in results[(label, t)]))


if __name__ == "__main__":
    main()
