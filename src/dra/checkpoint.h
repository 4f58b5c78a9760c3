// The DRA driver's checkpoint: the claims it prepared and what it answered, so that a repeated
// NodePrepareResources, a daemon restart and an Unprepare after a restart give the same answer
// and clean up what was made. One JSON file, rewritten atomically (common/atomic_file.h) after
// every change:
//
//   {"version": 1, "claims": {"<uid>": {"namespace", "name", "slice",
//        "devices": [{"requests": [...], "pool", "device", "uuid", "parentUUID" (MIG devices),
//                     "cdiDeviceIDs": [...]}]}}}
//
// A missing file is an empty checkpoint; a file that does not parse is an error (the daemon
// does not start rather than forget what it prepared).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "dra/claim.h"

namespace vgpu::dra {

struct PreparedDevice {
  std::vector<std::string> requests;
  std::string pool;
  std::string device;
  std::string uuid;         // the GPU's, or the MIG device's ("MIG-...")
  std::string parent_uuid;  // a MIG device's GPU; "" for a whole GPU
  std::vector<std::string> cdi_ids;
  // The UUID of the GPU the device is on (its health is the GPU's).
  const std::string& gpu_uuid() const { return parent_uuid.empty() ? uuid : parent_uuid; }
  bool operator==(const PreparedDevice&) const = default;
};

struct PreparedClaim {
  ClaimRef ref;
  std::string slice;  // the slice's name (node::SliceRecord::name)
  std::vector<PreparedDevice> devices;
};

using PreparedClaims = std::map<std::string, PreparedClaim>;  // by claim UID

Result<PreparedClaims> LoadCheckpoint(const std::string& path);
Status SaveCheckpoint(const std::string& path, const PreparedClaims& claims);

}  // namespace vgpu::dra
