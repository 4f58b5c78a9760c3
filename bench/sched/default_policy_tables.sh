#!/usr/bin/env bash
# Regenerates every table of docs/default-policy.md into out/default-policy/*.md.
# Needs build/bin/vgpu (cmake --build build --target vgpu) and the synthetic variants
# (bench/sched/make_variants.py). Takes about an hour of CPU; runs two simulations at a time
# (JOBS=n to change). Results are cached in out/lab/, so a re-run only redoes what changed.
set -euo pipefail
cd "$(dirname "$0")/../.."
lab() { bench/sched/policy_lab.py --jobs "${JOBS:-2}" "$@"; }
out=out/default-policy
mkdir -p "$out"
[[ -f out/variants/syn_mix.csv ]] || bench/sched/make_variants.py >/dev/null

ideas=published,gpushare20,syn_cpu2x,syn_mix,syn_multi50,syn_share80,syn_spec33
base=cafgd:cpu_weight=0,scarcity=0   # fgd-online's mechanism with cafgd's learning schedule

# Final comparison, 10 seeds, the six traces with published results.
lab --traces published --variant default=default --variant fgd=fgd --variant fgd-online=fgd-online \
  >"$out/final.md"

# Robustness: 30 seeds on every bundled and synthetic trace.
lab --traces all --seeds 42-71 --variant fgd=fgd --variant fgd-online=fgd-online \
  --variant default=default --per-seed >"$out/robust30.md"

# Idea 1: CPU term, per-spec form (joint_frag.h), no model pressure.
lab --traces "$ideas" --variant fgd=fgd --variant "w0=$base" \
  --variant w0.01=cafgd:cpu_mix=0,scarcity=0,cpu_weight=0.01 \
  --variant w0.1=cafgd:cpu_mix=0,scarcity=0,cpu_weight=0.1 \
  --variant w0.3=cafgd:cpu_mix=0,scarcity=0,cpu_weight=0.3 \
  --variant w1=cafgd:cpu_mix=0,scarcity=0,cpu_weight=1 \
  --variant w2=cafgd:cpu_mix=0,scarcity=0,cpu_weight=2 >"$out/idea1_cpu_spec.md"

# Idea 2: CPU term, mix form, no model pressure.
lab --traces "$ideas" --variant fgd=fgd --variant "w0=$base" \
  --variant mix0.3=cafgd:scarcity=0,cpu_weight=0.3 \
  --variant mix1=cafgd:scarcity=0,cpu_weight=1 \
  --variant mix3=cafgd:scarcity=0,cpu_weight=3 >"$out/idea2_cpu_mix.md"

# Idea 3: model pressure, on top of the mix form.
lab --traces published,syn_mix,syn_spec25,syn_spec33,syn_spec40 --variant fgd=fgd \
  --variant fgd-online=fgd-online --variant none=cafgd:scarcity=0 \
  --variant p1=cafgd:scarcity_power=1 --variant p2=cafgd --variant p4=cafgd:scarcity_power=4 \
  --variant p8=cafgd:scarcity_power=8 --variant s0.3=cafgd:scarcity=0.3 \
  --variant s3=cafgd:scarcity=3 >"$out/idea3_pressure.md"

# Idea 4: a prior on the learned weights; idea 5: tie-break keys; idea 6: score resolution;
# idea 7: best-fit GPU for sharing pods; idea 10: memory in the mix term.
lab --traces "$ideas" --variant fgd=fgd --variant default=cafgd \
  --variant prior1=cafgd:prior=1 --variant prior10=cafgd:prior=10 \
  --variant prior100=cafgd:prior=100 \
  --variant tb1=cafgd:tiebreak=1 --variant tb2=cafgd:tiebreak=2 --variant tb3=cafgd:tiebreak=3 \
  --variant res1000=cafgd:resolution=1000 --variant res10k=cafgd:resolution=10000 \
  --variant sharing_bf=cafgd:sharing_best_fit=1 --variant memory=cafgd:memory=1 \
  >"$out/ideas4to10.md"

# Idea 8: re-learning schedule; idea 9: the cost of learning online (workload given in advance).
lab --traces "$ideas" --variant fgd=fgd --variant default=cafgd \
  --variant cg0.02t0.02=cafgd:check_growth=0.02,tolerance=0.02 \
  --variant cg0.25t0.1=cafgd:check_growth=0.25,tolerance=0.1 \
  --variant given=cafgd:given_workload=1 --variant fgd-online=fgd-online \
  --variant "given_w0=cafgd:cpu_weight=0,scarcity=0,given_workload=1" >"$out/ideas8to9.md"

echo "tables in $out/"
