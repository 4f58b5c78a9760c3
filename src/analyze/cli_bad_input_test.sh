#!/bin/sh
# vgpu analyze: bad input names file, line and column and exits 2; the scenarios run end to end.
# Usage: cli_bad_input_test.sh VGPU_BINARY SOURCE_DIR WORK_DIR
set -u
vgpu=$1 src=$2 work=$3
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
expect2() {  # expect2 PATTERN COMMAND...
  pattern=$1; shift
  "$@" >"$work/out" 2>"$work/err"; rc=$?
  [ $rc -eq 2 ] || fail "exit $rc (want 2): $*; $(cat "$work/err")"
  grep -q "$pattern" "$work/err" || fail "no '$pattern' in: $(cat "$work/err")"
}
printf 'rules:\n  - name: a\n    when:\n      - {signal: util, above: 1}\n    action: prefetch\n' >"$work/bad.yaml"
"$vgpu" analyze scenario quiet --out "$work/quiet.csv" >/dev/null || fail "scenario"
expect2 "bad.yaml:5:13: unknown action" "$vgpu" analyze rules --rules "$work/bad.yaml" --series "$work/quiet.csv" --dry-run
printf 'value,timestamp_anon,container_ip\n1,100,p\n2,1x7,p\n' >"$work/bad.csv"
expect2 "bad.csv:3: column 'timestamp_anon' (2)" "$vgpu" analyze anomalies --util "$work/bad.csv" --memory ''
expect2 "bad.csv:3" "$vgpu" analyze forecast --util "$work/bad.csv"
expect2 "leak-rate" "$vgpu" analyze anomalies --evaluate --leak-rate 0
expect2 "no such file" "$vgpu" analyze rightsize --memory "$work/none.csv"
printf 'value,timestamp_anon,container_ip\n1,100,p\n2,157,p\n' >"$work/ok.csv"
printf 'series,node\np,n1\nq,n1\n' >"$work/groups.csv"
expect2 "groups.csv:3: column 'series' (1): no series 'q'" "$vgpu" analyze forecast --util "$work/ok.csv" --groups "$work/groups.csv"
printf 'series,node\np,n1\n' >"$work/groups.csv"
"$vgpu" analyze forecast --util "$work/ok.csv" --groups "$work/groups.csv" | grep -q "^node:n1 " || fail "node line"
expect2 "unknown command" "$vgpu" analyze nope
for s in copy_hog leak xid_burst idle; do
  "$vgpu" analyze scenario $s --out "$work/$s.csv" >/dev/null || fail "scenario $s"
  "$vgpu" analyze rules --rules "$src/deploy/analyze/rules.yaml" --series "$work/$s.csv" --dry-run >"$work/out" || fail "rules $s"
  [ "$(grep -c fire "$work/out")" -eq 1 ] || fail "$s: $(cat "$work/out")"
done
"$vgpu" analyze rules --rules "$src/deploy/analyze/rules.yaml" --series "$work/quiet.csv" --dry-run | grep -q "no rule would have fired" || fail quiet
echo ok
