#!/usr/bin/env python3
"""Derives synthetic pod lists from the bundled Alibaba traces, for robustness checks of placement
policies on workload mixes that are not bundled.

Each variant starts from openb_pod_list_default.csv and changes one property of the mix, drawing
with a fixed seed (so the files are reproducible):

  syn_cpu0        no CPU-only pods
  syn_cpu2x/3x    CPU-only pods resampled to 2x / 3x their count in default
  syn_share60/80  GPU pods redrawn so that sharing pods carry 60% / 80% of the GPU request
  syn_spec25/33/40  25% / 33% / 40% of GPU pods get a gpu_spec, drawn from gpuspec10's specs for pods of
                  the same GPU count and sharing class
  syn_multi35/50  multi-GPU pods (multigpu20's pool) appended until they carry 35% / 50% of the
                  GPU request
  syn_mix         sharing 50%, gpu_spec on 20%, CPU-only pods 2x, multi-GPU 15%, all at once

Usage: bench/sched/make_variants.py [--out out/variants] [--seed 7]
"""
import argparse
import csv
import os
import random

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data",
                    "alibaba-gpu-v2023")
FIELDS = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"]


def load(name):
    with open(os.path.join(DATA, f"openb_pod_list_{name}.csv")) as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        out.append({k: r.get(k) or "" for k in FIELDS})
        out[-1]["gpu_spec"] = r.get("gpu_spec") or ""
    return out


def gpu(r):
    return int(r["num_gpu"]) * int(r["gpu_milli"])


def is_cpu(r):
    return int(r["num_gpu"]) == 0


def is_share(r):
    return int(r["num_gpu"]) == 1 and int(r["gpu_milli"]) < 1000


def is_multi(r):
    return int(r["num_gpu"]) > 1


def write(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for i, r in enumerate(rows):
            r = dict(r)
            r["name"] = f"syn-pod-{i:05d}"
            w.writerow(r)


def cpu_scaled(base, factor, rng):
    cpu = [r for r in base if is_cpu(r)]
    gpus = [r for r in base if not is_cpu(r)]
    extra = [dict(rng.choice(cpu)) for _ in range(int(round(len(cpu) * factor)))]
    return gpus + extra


def share_target(base, share, rng):
    cpu = [r for r in base if is_cpu(r)]
    sh = [r for r in base if is_share(r)]
    ns = [r for r in base if not is_cpu(r) and not is_share(r)]
    es = sum(map(gpu, sh)) / len(sh)
    en = sum(map(gpu, ns)) / len(ns)
    # share = q*es / (q*es + (1-q)*en)  =>  q = share*en / (es - share*es + share*en)
    q = share * en / (es - share * es + share * en)
    n = len(sh) + len(ns)
    gpus = [dict(rng.choice(sh) if rng.random() < q else rng.choice(ns)) for _ in range(n)]
    return cpu + gpus


def spec_pool():
    pool = {}
    for r in load("gpuspec10"):
        if r["gpu_spec"] and not is_cpu(r):
            pool.setdefault((int(r["num_gpu"]), is_share(r)), []).append(r["gpu_spec"])
    return pool


def spec_fraction(base, fraction, rng):
    pool = spec_pool()
    out = [dict(r) for r in base]
    for r in out:
        if is_cpu(r) or rng.random() >= fraction:
            continue
        choices = pool.get((int(r["num_gpu"]), is_share(r)))
        if choices:
            r["gpu_spec"] = rng.choice(choices)
    return out


def multi_target(base, share, rng):
    multi_pool = [r for r in load("multigpu20") if is_multi(r)]
    out = [dict(r) for r in base]
    total = sum(map(gpu, out))
    multi = sum(gpu(r) for r in out if is_multi(r))
    while multi < share * total:
        r = dict(rng.choice(multi_pool))
        out.append(r)
        multi += gpu(r)
        total += gpu(r)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/variants")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    base = load("default")
    rng = random.Random()
    variants = {
        "syn_cpu0": lambda: cpu_scaled(base, 0, rng),
        "syn_cpu2x": lambda: cpu_scaled(base, 2, rng),
        "syn_cpu3x": lambda: cpu_scaled(base, 3, rng),
        "syn_share60": lambda: share_target(base, 0.60, rng),
        "syn_share80": lambda: share_target(base, 0.80, rng),
        "syn_spec25": lambda: spec_fraction(base, 0.25, rng),
        "syn_spec33": lambda: spec_fraction(base, 0.33, rng),
        "syn_spec40": lambda: spec_fraction(base, 0.40, rng),
        "syn_multi35": lambda: multi_target(base, 0.35, rng),
        "syn_multi50": lambda: multi_target(base, 0.50, rng),
        "syn_mix": lambda: multi_target(
            spec_fraction(cpu_scaled(share_target(base, 0.50, rng), 2, rng), 0.20, rng), 0.15,
            rng),
    }
    for name, make in variants.items():
        rng.seed(f"{a.seed}-{name}")  # each variant draws its own stream
        rows = make()
        path = os.path.join(a.out, f"{name}.csv")
        write(rows, path)
        cpu = sum(1 for r in rows if is_cpu(r))
        total = sum(map(gpu, rows))
        sh = sum(gpu(r) for r in rows if is_share(r))
        mg = sum(gpu(r) for r in rows if is_multi(r))
        spec = sum(1 for r in rows if r["gpu_spec"])
        print(f"{path}: {len(rows)} pods, {cpu} CPU-only, sharing {100 * sh / total:.1f}% and "
              f"multi-GPU {100 * mg / total:.1f}% of GPU request, {spec} with gpu_spec")


if __name__ == "__main__":
    main()
