#!/usr/bin/env python3
"""Sweep tables of the time-based replay (docs/replay.md): shared vs whole-GPU allocation per load
point, queue discipline, trace and policy. Runs `vgpu sim --mode replay --json` and prints Markdown.

Usage: bench/sim/replay_sweep.py [--seeds 42-51] [--vgpu build/bin/vgpu] [--only A,B,...]
Tables: A real pace, cluster scale sweep; B full cluster, time compression sweep; C compression
and scale together; D other bundled traces; E policies; F the large pods that wait for weeks
(docs/replay.md section 5). About two minutes on 2 cores.
The ratio column is mean±sd over seeds of shared / whole completed pods, (min–max) over seeds.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "data", "alibaba-gpu-v2023")


def span(s):
    a = abs(s)
    if a < 60:
        return f"{s:.0f} s"
    if a < 3600:
        return f"{s / 60:.1f} m"
    if a < 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def run(args, extra, trace="default"):
    cmd = [args.vgpu, "sim", "--mode", "replay", "--quiet", "--json", "--seeds", args.seeds,
           "--nodes", os.path.join(DATA, "openb_node_list_gpu_node.csv"),
           "--pods", os.path.join(DATA, f"openb_pod_list_{trace}.csv")] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def rows(j, label=None):
    """One row per (policy, queue, load): shared and whole side by side."""
    cells = {(c["policy"], c["queue"], c["load"], c["allocation"]): c for c in j["cells"]}
    out = []
    for r in j["shared_over_whole"]:
        s = cells[(r["policy"], r["queue"], r["load"], "shared")]
        w = cells[(r["policy"], r["queue"], r["load"], "whole")]
        load = j["loads"][r["load"]]
        sd = ""
        if len(j["seeds"]) > 1:
            sd = f"±{r['completed_sd']:.2f} ({r['completed_min']:.2f}–{r['completed_max']:.2f})"
        out.append([label or r["policy"], r["queue"], f"{load['time_compress']:g}",
                    f"{load['cluster_scale']:g}", f"{s['gpus']:.0f}",
                    f"{s['offered_pct']:.1f}%", f"{s['peak_demand_pct']:.0f}%",
                    f"{s['offered_whole_pct'] / max(s['offered_pct'], 1e-9):.2f}",
                    f"{s['completed']:.0f}", f"{w['completed']:.0f}",
                    f"{r['completed_mean']:.2f}{sd}", f"{r['gpu_hours_mean']:.2f}",
                    span(s["wait_mean_s"]), span(w["wait_mean_s"]),
                    span(s["wait_p99_s"]), span(w["wait_p99_s"]),
                    f"{s['mean_allocated_pct']:.1f}", f"{w['mean_allocated_pct']:.1f}",
                    f"{w['mean_used_pct']:.1f}"])
    return out


HEAD = ["policy", "queue", "compress", "scale", "GPUs", "offered", "peak", "ceiling", "done shared",
        "done whole", "ratio", "GPU-h ratio", "wait shared", "wait whole", "p99 shared",
        "p99 whole", "alloc % shared", "alloc % whole", "used % whole"]


def table(title, body, head=HEAD):
    print(f"\n### {title}\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in body:
        print("| " + " | ".join(r) + " |")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--vgpu", default=os.path.join(ROOT, "build", "bin", "vgpu"))
    ap.add_argument("--only", default="A,B,C,D,E,F")
    args = ap.parse_args()
    only = args.only.split(",")
    both = ["--queue", "fifo,backfill"]
    if "A" in only:
        j = run(args, both + ["--cluster-scale", "0.003,0.004,0.005,0.0075,0.01,0.015,0.02"])
        table("A. Real pace (time-compress 1), cluster scale sweep, policy default", rows(j))
    if "B" in only:
        j = run(args, both + ["--time-compress", "1,100,1000,10000,100000"])
        table("B. Full cluster (6212 GPUs), time compression sweep, policy default", rows(j))
    if "C" in only:
        body = []
        for k, scales in (("10", "0.02,0.03,0.05"), ("100", "0.1,0.15,0.2")):
            body += rows(run(args, both + ["--time-compress", k, "--cluster-scale", scales]))
        table("C. Compression and scale together, policy default", body)
    if "D" in only:
        body = []
        for trace in ("default", "gpushare20", "gpushare40", "cpu050", "cpu100", "gpuspec10"):
            j = run(args, ["--queue", "backfill", "--cluster-scale", "0.004,0.005,0.0075"], trace)
            body += rows(j, label=trace)
        head = ["trace"] + HEAD[1:]
        table("D. Bundled traces, backfill, real pace, policy default", body, head)
    if "E" in only:
        j = run(args, ["--queue", "backfill", "--cluster-scale", "0.005",
                       "--policy", "default,fgd,bestfit,hami-binpack,hami-spread,random"])
        table("E. Policies, backfill, real pace, cluster scale 0.005", rows(j))
    if "F" in only:
        policies = ["default", "fgd", "hami-binpack", "random", "bestfit"]
        j = run(args, ["--queue", "backfill", "--cluster-scale", "0.02",
                       "--policy", ",".join(policies)])
        body = []
        for c in j["cells"]:
            if c["allocation"] == "shared":
                body.append([c["policy"], f"{c['waited']:.1f}", span(c["wait_mean_s"]),
                             span(c["wait_max_s"])])
        table("F1. Waits, backfill, real pace, cluster scale 0.02 (122 GPUs), shared", body,
              ["policy", "pods that waited", "mean wait", "max wait"])
        j = run(args, ["--queue", "fifo", "--cluster-scale", "0.01,0.02",
                       "--policy", ",".join(policies)])
        cells = {(c["policy"], c["load"], c["allocation"]): c for c in j["cells"]}
        body = []
        for p in policies:
            row = [p]
            for load in range(len(j["loads"])):
                row.append(f"{cells[(p, load, 'shared')]['completed']:.0f} / "
                           f"{cells[(p, load, 'whole')]['completed']:.0f}")
            row.append(span(cells[(p, len(j["loads"]) - 1, "shared")]["wait_mean_s"]))
            body.append(row)
        table("F2. FIFO, real pace: completed pods shared / whole, and the mean shared wait", body,
              ["policy", "66 GPUs (0.01)", "122 GPUs (0.02)", "mean wait at 122 GPUs"])


if __name__ == "__main__":
    main()
