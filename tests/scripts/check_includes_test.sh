#!/bin/sh
# scripts/check-includes on a fake tree: a clean one passes; one bad include, an include of a
# folder the room table does not list, a bad argument and a bad table each fail with the right
# message and exit status (so the include_directions test can fail).
# Usage: check_includes_test.sh PYTHON CHECK_INCLUDES WORK_DIR
set -eu
python=$1
check=$2
work=$3
rm -rf "$work"
mkdir -p "$work/src/common" "$work/src/shm" "$work/src/node/sub"
cd "$work"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# Runs the check; its stdout in out.txt, stderr in err.txt, its exit status in $rc.
run() {
  rc=0
  "$python" "$check" "$@" >out.txt 2>err.txt || rc=$?
}
want_rc() {
  [ "$rc" = "$1" ] || fail "$2: exit $rc, want $1 (stdout: $(cat out.txt); stderr: $(cat err.txt))"
}

printf '# a comment\ncommon:\nshm: common\nnode: common  # node may not use shm\n' >rooms.txt
printf '#pragma once\n' >src/common/log.h
printf '#include "common/log.h"\n' >src/shm/region.h
printf '#include "common/log.h"\n#include "node/sub/b.h"\n#include <vector>\n#include "deviceplugin/v1beta1/api.pb.h"\n' \
  >src/node/a.cc
printf '#pragma once\n' >src/node/sub/b.h
printf '#include "common/log.h"\n' >src/node/a_test.cc
run --rooms rooms.txt --src src
want_rc 0 "a clean tree"
[ ! -s out.txt ] || fail "a clean tree printed: $(cat out.txt)"

# One bad include, in a header below the room's folder, on line 3.
printf '#pragma once\n\n  #  include "shm/region.h"  // not allowed\n' >src/node/sub/b.h
run --rooms rooms.txt --src src
want_rc 1 "a bad include"
echo 'src/node/sub/b.h:3: includes shm/region.h, but node may use only: common' >want.txt
diff want.txt out.txt || fail "a bad include: wrong message"
grep -q '1 include(s) against the room table' err.txt || fail "a bad include: no count on stderr"

# A test follows its room's rule.
printf '#pragma once\n' >src/node/sub/b.h
printf '#include "shm/region.h"\n' >src/node/a_test.cc
run --rooms rooms.txt --src src
want_rc 1 "a test's bad include"
echo 'src/node/a_test.cc:1: includes shm/region.h, but node may use only: common' >want.txt
diff want.txt out.txt || fail "a test's bad include: wrong message"
printf '#include "common/log.h"\n' >src/node/a_test.cc

# A new folder under src/ that the table does not list, and an include of it.
mkdir -p src/hw
printf '#include "common/log.h"\n' >src/hw/gpus.h
printf '#include "hw/gpus.h"\n' >src/shm/region.h
run --rooms rooms.txt --src src
want_rc 1 "an unlisted room"
cat >want.txt <<'WANT'
src/hw: hw is a folder under src/ that the room table does not list (add its line to cmake/rooms.cmake)
src/shm/region.h:1: includes hw/gpus.h, but hw is not in the room table (cmake/rooms.cmake)
WANT
diff want.txt out.txt || fail "an unlisted room: wrong message"
printf 'common:\nhw: common\nshm: common hw\nnode: common\n' >rooms2.txt
run --rooms rooms2.txt --src src
want_rc 0 "the room, listed"

# A split folder: each subfolder of src/k8s is a room of its own.
rm -rf src/hw
printf '#include "common/log.h"\n' >src/shm/region.h
mkdir -p src/k8s/api src/k8s/wire
printf '#pragma once\n' >src/k8s/api/client.h
printf '#include "k8s/api/client.h"\n' >src/k8s/wire/pod.h
printf '#include "k8s/wire/pod.h"\n#include "k8s/api/client.h"\n' >src/node/c.cc
printf 'common:\nshm: common\nk8s/api: common\nk8s/wire: k8s/api\nnode: common k8s/wire\n' >rooms5.txt
run --rooms rooms5.txt --src src
want_rc 1 "a split room"
echo 'src/node/c.cc:2: includes k8s/api/client.h, but node may use only: common, k8s/wire' >want.txt
diff want.txt out.txt || fail "a split room: wrong message"
printf '#include "k8s/wire/pod.h"\n' >src/node/c.cc
printf '#pragma once\n' >src/k8s/stray.h
mkdir -p src/k8s/extra
printf '#include "k8s/api/client.h"\n' >src/k8s/extra/x.h
run --rooms rooms5.txt --src src
want_rc 1 "a file outside the split rooms"
cat >want.txt <<'WANT'
src/k8s/stray.h: k8s is split into rooms; this file is in none of them
src/k8s/extra: k8s/extra is a folder under src/ that the room table does not list (add its line to cmake/rooms.cmake)
WANT
diff want.txt out.txt || fail "a file outside the split rooms: wrong message"
rm -rf src/k8s/stray.h src/k8s/extra
run --rooms rooms5.txt --src src
want_rc 0 "split rooms, every include allowed"

# Bad arguments and bad tables: exit 2.
run --no-such-flag
want_rc 2 "an unknown flag"
run --rooms missing.txt --src src
want_rc 2 "a missing table"
printf 'common:\nnode: common shm\nshm: common\n' >rooms3.txt
run --rooms rooms3.txt --src src
want_rc 2 "a table out of dependency order"
grep -q 'node may use shm, which comes after it' err.txt || fail "out of order: $(cat err.txt)"
printf 'common:\nnode: common gpu\n' >rooms4.txt
run --rooms rooms4.txt --src src
want_rc 2 "a table naming an unknown room"
run --help
want_rc 0 "--help"
grep -q 'may use only' out.txt || fail "--help does not explain the message"
echo "check-includes: all cases pass"
