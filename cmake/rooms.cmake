# The rooms under src/ and the rooms each may include (its own always): one line per room, in
# dependency order (src/CMakeLists.txt adds the folders in this order). It is the "links
# against" column of docs/architecture.md; scripts/check-includes enforces it on every quoted
# `#include "room/..."` (ctest include_directions) and fails on a folder under src/ that is not
# listed here. A new room is one more line. A folder may be split into rooms ("k8s/api",
# "k8s/wire", ...): then each of its subfolders is a room, and the folder itself holds none.
# "common (headers)" in the docs (intercept, simgpu, topo) is enforced by the link
# (vgpu_common_headers, and libvgpu_abi_check for libvgpu.so), not here.
set(VGPU_ROOMS
  "common:"
  "hw: common"
  "mig: common hw"
  "topo: common"
  "shm: common"
  "slice: common shm"
  "intercept: common shm"
  "simgpu: common hw mig topo"
  "device: common topo"
  "sched: common"
  "estimate: common hw mig"
  "sim: common sched mig topo"
  # src/k8s is split by what each part serves: the API machinery, the formats on Kubernetes
  # objects, the scheduler extender, the admission webhook.
  "k8s/api: common"
  "k8s/wire: common sched mig topo k8s/api"
  "k8s/extender: common sched mig topo k8s/api k8s/wire"
  "k8s/webhook: common estimate k8s/api k8s/wire"
  "analyze: common"
  "node: common device k8s/api k8s/wire mig shm slice analyze"
  # TODO: docs/architecture.md says dra links against node and k8s; its code also includes
  # device, mig and common directly (types of node's public interface, linked through node).
  "dra: node k8s/api k8s/wire slice device mig common"
  "bench: common mig topo shm slice simgpu"
  "cli: common hw mig topo shm slice intercept device sched estimate sim k8s/api k8s/wire k8s/extender k8s/webhook analyze node dra bench"
)

# The room names alone, in order.
set(VGPU_ROOM_NAMES)
foreach(line ${VGPU_ROOMS})
  string(REGEX REPLACE ":.*" "" room "${line}")
  list(APPEND VGPU_ROOM_NAMES ${room})
endforeach()

# The table as scripts/check-includes reads it: one "ROOM: OTHER ..." line per room.
list(JOIN VGPU_ROOMS "\n" vgpu_rooms_text)
set(VGPU_ROOMS_FILE ${CMAKE_BINARY_DIR}/rooms.txt)
file(CONFIGURE OUTPUT ${VGPU_ROOMS_FILE} CONTENT
  "# Written by configure from cmake/rooms.cmake: the room table of scripts/check-includes.\n${vgpu_rooms_text}\n")
