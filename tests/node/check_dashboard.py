#!/usr/bin/env python3
"""Checks that a Grafana dashboard is valid JSON and that every vgpu_* metric its queries use is
one the node daemon exports (a VGPU_METRIC entry of src/node/metrics/metrics_catalog.def)."""
import json
import re
import sys


def main(dashboard_path, source_paths):
    with open(dashboard_path, encoding="utf-8") as f:
        dashboard = json.load(f)
    exported = set()
    for source_path in source_paths:
        with open(source_path, encoding="utf-8") as f:
            exported |= set(re.findall(r"^VGPU_METRIC\((vgpu_[a-z_]+),", f.read(), re.M))
    problems = []
    if not exported:
        problems.append("no VGPU_METRIC entries in " + ", ".join(source_paths))
    panels = dashboard.get("panels", [])
    if not panels:
        problems.append("the dashboard has no panels")
    for panel in panels:
        for target in panel.get("targets", []):
            for name in re.findall(r"\b(vgpu_[a-z_]+)", target.get("expr", "")):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                if name not in exported and base not in exported:
                    problems.append(f'panel "{panel.get("title")}": {name} is not exported')
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
