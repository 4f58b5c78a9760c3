#!/usr/bin/env bash
# Installs vgpu out of a build tree and runs it from there, the way a user would:
#
#   install_test.sh prefix BUILD_DIR [WORKER]   cmake --install into a temporary prefix: the
#                                               production install alone (no simulated GPU, and
#                                               vgpu run --sim says what to install), then the
#                                               simgpu component, then vgpu run --sim from there
#   install_test.sh deb BUILD_DIR [WORKER]      cpack's two packages: their contents
#                                               (dpkg-deb -c), metadata and dependencies; then both
#                                               unpacked into a temporary root and run from it
#
# WORKER: a CUDA driver API program (tests/intercept/intercept_worker); with it, a slice's memory
# limit is checked from the installed copy. Exit 0 pass, 1 fail, 77 skipped.
# VGPU_TEST_SANITIZER_RUNTIME (asan builds): the sanitizer runtime that must come first in every
# process that loads the instrumented libvgpu.so; it is preloaded into the vgpu commands only.
set -euo pipefail
mode=$1
build=$(cd "$2" && pwd)
worker=${3:-}
[[ -x $worker ]] || worker=""
tmp=$(mktemp -d /tmp/vgpu-install-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export VGPU_STATE_DIR=$tmp/state VGPU_SIMGPU_STATE=$tmp/simgpu.state VGPU_SIMGPU_LOG_LEVEL=1
export LIBCUDA_LOG_LEVEL=1

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
has_simgpu() { [[ -f $build/lib/simgpu/libcuda.so.1 ]]; }
runtime=${VGPU_TEST_SANITIZER_RUNTIME:-}
# Runs an installed vgpu command, with the sanitizer runtime ahead of everything in an asan build.
vgpu_cmd() {
  if [[ -n $runtime ]]; then LD_PRELOAD=$runtime "$@"; else "$@"; fi
}

# The production files under PREFIX, found by the installed vgpu; no simulated GPU.
check_production() {
  local p=$1
  [[ -x $p/bin/vgpu ]] || fail "$p/bin/vgpu missing"
  [[ -f $p/lib/vgpu/libvgpu.so ]] || fail "$p/lib/vgpu/libvgpu.so missing"
  [[ -f $p/share/vgpu/data/alibaba-gpu-v2023/openb_pod_list_default.csv ]] || fail "data missing"
  [[ ! -e $p/lib/vgpu/simgpu ]] || fail "the simulated GPU is in the production install"
  local found
  found=$(find "$p" -name 'libcuda*' -o -name 'libnvidia-ml*')
  [[ -z $found ]] || fail "a CUDA or NVML library is in the production install: $found"
  local out
  out=$(vgpu_cmd "$p/bin/vgpu" version)
  [[ $out == *$'\ncommit: '* ]] || fail "vgpu version prints no commit: $out"
  # vgpu sim's default trace is the installed one.
  out=$(vgpu_cmd "$p/bin/vgpu" sim --help)
  [[ $out == *"=$p/share/vgpu/data/alibaba-gpu-v2023/openb_node_list"* ]] ||
    fail "vgpu sim does not default to $p/share/vgpu/data"
}

# vgpu run --sim from PREFIX: the installed libvgpu.so and simulated GPU, a slice that holds.
check_run_sim() {
  local p=$1 out
  out=$(vgpu_cmd "$p/bin/vgpu" run --sim --memory 256MiB -- \
    sh -c 'echo "$LD_PRELOAD|$VGPU_REAL_LIBCUDA"')
  [[ $out == "${runtime:+$runtime }$p/lib/vgpu/libvgpu.so|$p/lib/vgpu/simgpu/libcuda.so.1" ]] ||
    fail "vgpu run --sim from $p set up: $out"
  if [[ -n $worker ]]; then
    out=$(vgpu_cmd "$p/bin/vgpu" run --sim --memory 256MiB -- "$worker" fill alloc $((256 << 20)))
    [[ $out == *"first CUDA_SUCCESS"*"extra CUDA_ERROR_OUT_OF_MEMORY"* ]] ||
      fail "the slice's limit did not hold from $p: $out"
  fi
  out=$(vgpu_cmd "$p/bin/vgpu" top --sim --once)
  [[ $out == *"vgpu simulated"* ]] || fail "vgpu top --sim from $p: $out"
}

case $mode in
  prefix)
    p=$tmp/prefix
    cmake --install "$build" --prefix "$p" >/dev/null
    check_production "$p"
    set +e
    err=$(vgpu_cmd "$p/bin/vgpu" run --sim -- true 2>&1)
    rc=$?
    set -e
    [[ $rc == 1 && $err == *"vgpu-simgpu"*"--component simgpu"* ]] ||
      fail "vgpu run --sim without the simulated GPU: exit $rc: $err"
    has_simgpu || { echo "SKIP: the simulated GPU is not built"; exit 77; }
    cmake --install "$build" --prefix "$p" --component simgpu >/dev/null
    check_run_sim "$p"
    ;;
  deb)
    command -v dpkg-deb >/dev/null || { echo "SKIP: no dpkg-deb"; exit 77; }
    cpack --config "$build/CPackConfig.cmake" -B "$tmp/packages" >/dev/null
    version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
    deb=$(ls "$tmp"/packages/vgpu_"$version"_*.deb)
    files=$(dpkg-deb -c "$deb" | awk '{print $6}')
    for f in ./usr/bin/vgpu ./usr/lib/vgpu/libvgpu.so ./usr/share/doc/vgpu/README.md \
             ./usr/share/vgpu/data/alibaba-gpu-v2023/NOTICE.md \
             ./usr/share/vgpu/data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv; do
      grep -qx -- "$f" <<<"$files" || fail "$deb lacks $f"
    done
    if grep -q 'simgpu\|libcuda\|libnvidia-ml' <<<"$files"; then
      fail "$deb holds the simulated GPU"
    fi
    [[ $(dpkg-deb -f "$deb" Package) == vgpu ]] || fail "package name"
    depends=$(dpkg-deb -f "$deb" Depends)
    for d in libc6 libstdc++6 libssl3 libyaml-cpp0.7; do
      [[ $depends == *"$d "* || $depends == *"$d," || $depends == *"$d" ]] ||
        fail "Depends lacks $d: $depends"
    done
    dpkg-deb -x "$deb" "$tmp/root"
    check_production "$tmp/root/usr"
    if has_simgpu; then
      sim=$(ls "$tmp"/packages/vgpu-simgpu_"$version"_*.deb)
      sim_files=$(dpkg-deb -c "$sim" | awk '{print $6}' | grep -v '/$')
      [[ -z $(grep -v '^\./usr/lib/vgpu/simgpu/' <<<"$sim_files") ]] ||
        fail "$sim holds files outside /usr/lib/vgpu/simgpu: $sim_files"
      grep -qx './usr/lib/vgpu/simgpu/libcuda.so.1' <<<"$sim_files" || fail "$sim lacks libcuda"
      [[ $(dpkg-deb -f "$sim" Depends) == *"vgpu (= $version)"* ]] || fail "vgpu-simgpu Depends"
      dpkg-deb -x "$sim" "$tmp/root"
      check_run_sim "$tmp/root/usr"
    fi
    ;;
  *)
    fail "unknown mode $mode"
    ;;
esac
echo "PASS: $mode"
