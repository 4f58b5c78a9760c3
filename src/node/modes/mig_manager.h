// MigManager: the MIG instances the node creates for pods on `mig-dynamic` GPUs, made at the
// (profile, placement) the scheduler chose and destroyed when the pod is gone, crash-safe.
//
// Crash safety: a journal file (one line per claim, rewritten atomically) records a claim's
// intent before the instance is created and its UUID once it exists; a claim is dropped from the
// journal only after its instance is destroyed. Recover() reconciles the journal with what the
// driver reports, by placement and UUID:
//   - a claim with a UUID whose instance exists is kept;
//   - a claim without a UUID (killed during create) adopts the complete instance at exactly its
//     (GPU, profile, start), if there is one; a half-made one (a GPU instance without a compute
//     instance) is destroyed and the claim stays an intent, created again at the next Acquire;
//   - a claim whose instance is gone becomes an intent again (its UUID is forgotten);
//   - an instance on a managed GPU that no claim names is destroyed (leaked by a crash).
// So after Recover no instance is leaked and none is claimed twice: claims never overlap (an
// Acquire that would overlap another claim's placement is refused before anything is made).
// Pods whose assignments name the same (GPU, profile, start) share that instance's claim (software
// slices inside one instance, e.g. two 30 GiB tenants in a 3g.71gb); it is destroyed when the
// last of them is gone.
//
// Thread safety: all methods may be called from any thread; calls are serialised.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "device/device_backend.h"

namespace vgpu::node {

struct MigClaim {
  std::vector<std::string> pods;  // pod UIDs using the instance, sorted
  int gpu_index = 0;
  int profile_id = 0;
  int start = 0;
  int size = 0;      // memory slices
  std::string uuid;  // "MIG-..."; empty while only intended
};

class MigManager {
 public:
  // `backend` is not owned. `journal_path`: where claims are kept (its directory must exist);
  // empty: in memory only (tests).
  MigManager(device::DeviceBackend* backend, std::string journal_path);

  // Reads the journal and reconciles it with the driver on `managed_gpus` (their instances are
  // this manager's to destroy). Errors: an unreadable or malformed journal (names the line), or
  // a driver that fails.
  Status Recover(const std::vector<int>& managed_gpus);

  // The instance of `pod_uid` on `gpu_index` at (profile_id, start): the existing one, or one
  // created now. kResourceExhausted when another claim or instance occupies the placement.
  Result<device::MigInstance> Acquire(const std::string& pod_uid, int gpu_index, int profile_id,
                                      int start);

  // Destroys the instances of every claim whose pod is not in `live_pods`. Returns how many
  // were destroyed; a destroy that fails (a process still on it) is retried next time.
  int ReleaseGone(const std::set<std::string>& live_pods);

  std::vector<MigClaim> Claims() const;

 private:
  Status SaveLocked();
  Status LoadLocked();

  device::DeviceBackend* backend_;
  std::string journal_path_;
  mutable std::mutex mu_;
  std::vector<MigClaim> claims_;
  std::set<int> managed_;
};

// The journal's text form (exposed for tests): "pod_uid[,pod_uid...] gpu profile_id start size
// uuid|-".
std::string FormatMigJournal(const std::vector<MigClaim>& claims);
Result<std::vector<MigClaim>> ParseMigJournal(const std::string& text, const std::string& where);

}  // namespace vgpu::node
