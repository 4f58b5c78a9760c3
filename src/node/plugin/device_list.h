// How Allocate hands a container its GPUs, with the names of NVIDIA's device plugin
// (--device-list-strategy, --pass-device-specs):
//
//   envvar           NVIDIA_VISIBLE_DEVICES=<UUIDs>: the NVIDIA container runtime (its legacy
//                    mode, the default runtime or RuntimeClass `nvidia`) injects the GPUs and
//                    the driver's libraries. The default.
//   cdi-annotations  the container annotation cdi.k8s.io/vgpu_<pod UID> = "<kind>=<UUID>,...":
//                    a runtime that reads CDI annotations (the NVIDIA runtime in CDI mode,
//                    containerd and CRI-O with CDI enabled) injects the devices of the node's
//                    CDI spec (e.g. `nvidia-ctk cdi generate --device-name-strategy=uuid`).
//   cdi-cri          the same CDI names in the AllocateResponse's cdi_devices field (kubelet
//                    1.28 or later with a CRI runtime that has CDI enabled).
//
// Several may be combined ("envvar,cdi-cri"). Without envvar, NVIDIA_VISIBLE_DEVICES is "void",
// so that an image's own NVIDIA_VISIBLE_DEVICES=all cannot make a NVIDIA runtime in legacy mode
// give the container every GPU of the node. With pass_device_specs the device nodes are
// returned too: /dev/nvidia<minor> of each GPU and /dev/nvidiactl, plus /dev/nvidia-uvm,
// /dev/nvidia-uvm-tools and /dev/nvidia-modeset where they exist.
//
// A MIG device (a slice device whose UUID is "MIG-...") gets its parent GPU's /dev/nvidia<minor>
// and the /dev/nvidia-caps/nvidia-cap<N> nodes of its GPU instance's and compute instance's access
// capabilities, N read from <probe_root>/proc/driver/nvidia-caps/mig-minors (as NVIDIA documents:
// "gpu<minor>/gi<id>/access N", "gpu<minor>/gi<id>/ci<id>/access N").
//
// Pure logic apart from the existence checks of the optional device nodes and the mig-minors
// file (under probe_root).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "device/device_backend.h"
#include "node/slice.h"

namespace vgpu::node {

struct DeviceListOptions {
  bool envvar = true;
  bool cdi_annotations = false;
  bool cdi_cri = false;
  std::string cdi_kind = "nvidia.com/gpu";  // <vendor>/<class> of the CDI devices
  bool pass_device_specs = false;
  std::string dev_root = "/";  // the host's root as the runtime sees it (DeviceSpec host paths)
  std::string probe_root;      // where the daemon looks for the optional nodes ("": its own /)

  bool AnyCdi() const { return cdi_annotations || cdi_cri; }
};

// Parses a comma-separated list of envvar, cdi-annotations, cdi-cri into `options` (the other
// fields are kept). kInvalidArgument naming the unknown or repeated entry.
Status ParseDeviceListStrategy(const std::string& text, DeviceListOptions* options);

// kInvalidArgument unless `kind` is a CDI kind: <vendor>/<class>, the vendor a domain-like name
// (letters, digits, '-', '.'), the class letters, digits, '-', '_', '.'.
Status CheckCdiKind(const std::string& kind);

// The annotation key of cdi-annotations for a container of the pod `pod_uid`.
std::string CdiAnnotationKey(const std::string& pod_uid);

// The capability minors of MIG device (GPU minor, GPU instance, compute instance) in the text of
// mig-minors: {gi access, ci access}. kNotFound naming the missing line.
Result<std::pair<int, int>> MigCapMinors(const std::string& mig_minors, int gpu_minor, int gi_id,
                                         int ci_id);

// Adds the device list of `slice` to `allocation` (built by BuildAllocation). `gpus` are the
// node's GPUs (for the minor numbers). kFailedPrecondition when device specs are asked for and
// the driver did not tell a GPU's minor number.
Status ApplyDeviceList(const SliceRecord& slice, const std::vector<device::DeviceInfo>& gpus,
                       const DeviceListOptions& options, ContainerAllocation* allocation);

}  // namespace vgpu::node
