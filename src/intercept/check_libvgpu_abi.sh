#!/usr/bin/env bash
# Checks what libvgpu.so asks of the system it is loaded into (docs/intercept.md, "Build and
# dependencies"): it needs libc.so.6, libdl.so.2 and libpthread.so.0 (and the dynamic loader)
# and nothing else, and references no glibc symbol version newer than 2.17, so that the library
# built here loads into containers with an older glibc and no C++ runtime.
# Usage: check_libvgpu_abi.sh LIBVGPU [--allow-sanitizer]
#   --allow-sanitizer: a sanitizer build; its runtime (libasan, libubsan, libtsan, libstdc++ and
#   libgcc_s, which the runtimes pull in) may be needed too, and symbol versions are not checked.
set -euo pipefail
lib=${1:?usage: check_libvgpu_abi.sh LIBVGPU [--allow-sanitizer]}
sanitizer=0
[[ "${2:-}" == "--allow-sanitizer" ]] && sanitizer=1
[[ -f "$lib" ]] || { echo "check_libvgpu_abi: $lib: no such file" >&2; exit 2; }

fail=0
allowed='^(libc\.so\.6|libdl\.so\.2|libpthread\.so\.0|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$'
sanitizer_allowed='^(libasan\.so\.[0-9]+|libclang_rt\.asan-[a-z0-9_]+\.so|libubsan\.so\.[0-9]+|libtsan\.so\.[0-9]+|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libm\.so\.6|librt\.so\.1)$'
while read -r needed; do
  [[ -z "$needed" ]] && continue
  if [[ "$needed" =~ $allowed ]]; then continue; fi
  if ((sanitizer)) && [[ "$needed" =~ $sanitizer_allowed ]]; then continue; fi
  echo "check_libvgpu_abi: $lib needs $needed (only libc, libdl and libpthread are allowed)" >&2
  fail=1
done < <(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')

if ((!sanitizer)); then
  # Every GLIBC_x.y version the library references, newest last.
  newest=$(objdump -T "$lib" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -u -V | tail -n 1)
  if [[ -z "$newest" ]]; then
    echo "check_libvgpu_abi: $lib references no glibc symbol version (objdump -T found none)" >&2
    fail=1
  elif [[ "$(printf '%s\n%s\n' "$newest" GLIBC_2.17 | sort -V | tail -n 1)" != GLIBC_2.17 ]]; then
    echo "check_libvgpu_abi: $lib references $newest, newer than GLIBC_2.17:" >&2
    objdump -T "$lib" | grep -E "GLIBC_(2\.(1[89]|[2-9][0-9])|[3-9])" | sed 's/^/  /' >&2
    fail=1
  fi
fi
if ((fail)); then exit 1; fi
echo "check_libvgpu_abi: $lib: dependencies and glibc symbol versions (<= 2.17) as documented"
