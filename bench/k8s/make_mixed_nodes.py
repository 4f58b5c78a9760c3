#!/usr/bin/env python3
"""Writes the mixed-model variant of the bundled node list (bench/k8s/openb_node_list_mixed.csv)
and of the pod list whose pods name GPU models (bench/k8s/openb_pod_list_gpuspec10_mixed.csv).

The trace's nodes keep their CPU, memory and GPU counts; their GPUs get sizes, and the anonymous
G2 / G3 models become named models of several sizes, so the cluster mixes 9 GPU models and 7 memory
sizes (15, 16, 24, 32, 40, 48 and 80 GiB):

  P100 16384, T4 15360, V100M16 16384, V100M32 32768, A10 24576 MiB;
  G2 nodes in turn H100-80G 81920, A800-40G 40960, L40S-48G 49152 MiB; G3 nodes H800-80G 81920 MiB.

In the pod list, a gpu_spec naming G2 names, pod after pod, H100-80G, A800-40G, L40S-48G, or all
three; G3 becomes H800-80G. No model name is a part of another (use-gputype matches parts).

Usage: bench/k8s/make_mixed_nodes.py   (run from the repository root)
"""
import csv
import sys

SIZES = {"P100": 16384, "T4": 15360, "V100M16": 16384, "V100M32": 32768, "A10": 24576}
G2 = [("H100-80G", 81920), ("A800-40G", 40960), ("L40S-48G", 49152)]
G3 = ("H800-80G", 81920)


def mixed_pods(src, dst):
    with open(src, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    spec = header.index("gpu_spec")
    g2_choices = [m for m, _ in G2] + ["|".join(m for m, _ in G2)]
    g2 = 0
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            models = []
            for m in r[spec].split("|") if r[spec] else []:
                if m == "G2":
                    models.extend(g2_choices[g2 % len(g2_choices)].split("|"))
                    g2 += 1
                elif m == "G3":
                    models.append(G3[0])
                else:
                    models.append(m)
            r[spec] = "|".join(dict.fromkeys(models))
            w.writerow(r)


def main():
    src = "data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv"
    dst = "bench/k8s/openb_node_list_mixed.csv"
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    g2 = 0
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["sn", "cpu_milli", "memory_mib", "gpu", "model", "gpu_memory_mib"])
        for r in rows:
            model = r["model"]
            if model == "G2":
                model, size = G2[g2 % len(G2)]
                g2 += 1
            elif model == "G3":
                model, size = G3
            elif model in SIZES:
                size = SIZES[model]
            else:
                sys.exit(f"{src}: unknown model {model!r} on {r['sn']}")
            w.writerow([r["sn"], r["cpu_milli"], r["memory_mib"], r["gpu"], model, size])
    mixed_pods("data/alibaba-gpu-v2023/openb_pod_list_gpuspec10.csv",
               "bench/k8s/openb_pod_list_gpuspec10_mixed.csv")


if __name__ == "__main__":
    main()
