#!/usr/bin/env python3
"""Reproduction table: unallocated GPU % at 100% arrived workload, ours vs published, on every
bundled trace with published FGD results. Runs `vgpu sim --json` once per trace.

Usage: bench/sched/repro_table.py [--seeds 42-51] [--policy all] [--vgpu build/bin/vgpu]
Prints a Markdown table (mean±sd over seeds; published mean in parentheses for the six
baselines, with our mean minus it).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "data", "alibaba-gpu-v2023")
TRACES = ["default", "cpu050", "cpu100", "gpushare40", "gpuspec10", "multigpu20"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--policy", default="all")
    ap.add_argument("--vgpu", default=os.path.join(ROOT, "build", "bin", "vgpu"))
    ap.add_argument("--level", type=int, default=100)
    args = ap.parse_args()
    results = {}
    policies = []
    for trace in TRACES:
        cmd = [args.vgpu, "sim", "--quiet", "--json", "--seeds", args.seeds, "--policy", args.policy,
               "--nodes", os.path.join(DATA, "openb_node_list_gpu_node.csv"),
               "--pods", os.path.join(DATA, f"openb_pod_list_{trace}.csv")]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        for p in json.loads(out)["policies"]:
            if p["policy"] not in policies:
                policies.append(p["policy"])
            for level in p["levels"]:
                if level["arrived_pct"] == args.level:
                    results[(trace, p["policy"])] = level
        print(f"done: {trace}", file=sys.stderr)
    print(f"| policy | " + " | ".join(TRACES) + " |")
    print("|---" * (len(TRACES) + 1) + "|")
    worst = 0.0
    for policy in policies:
        cells = []
        for trace in TRACES:
            v = results.get((trace, policy))
            if v is None:
                cells.append("-")
                continue
            cell = f"{v['unallocated_mean']:.2f}±{v['unallocated_sd']:.2f}"
            if "published_unallocated_mean" in v:
                pub = v["published_unallocated_mean"]
                delta = v["unallocated_mean"] - pub
                worst = max(worst, abs(delta))
                cell += f" ({pub:.2f}, {delta:+.2f})"
            cells.append(cell)
        print(f"| {policy} | " + " | ".join(cells) + " |")
    print(f"\nlargest |ours - published| over the baselines: {worst:.2f} pp", file=sys.stderr)


if __name__ == "__main__":
    main()
