#!/usr/bin/env bash
# Runs 10000 launches and 10000 cuMemAlloc/cuMemFree pairs through libvgpu.so under strace and
# fails if any system call happens between the two getppid() markers around them.
set -euo pipefail
strace=$1
bench=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$strace" -f -qq -e trace=all -o "$log" "$bench" --syscall-window 10000
between=$(awk '/getppid\(/ {n++; next} n == 1 {print}' "$log")
if [[ -n "$between" ]]; then
  echo "system calls on the hot paths:" >&2
  echo "$between" | head -20 >&2
  exit 1
fi
echo "no system call in 10000 launches and 10000 alloc/free pairs"
