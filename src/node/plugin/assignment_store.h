// AssignmentStore: the scheduler's assignments of the pods bound to this node, and which unit
// of each GPU every assigned container holds. It answers the two questions kubelet's device
// plugin calls raise, which carry only unit IDs:
//
//   Prefer(available, must_include, size)  which units should kubelet give the container it is
//       admitting? The pending container (assigned, not yet allocated, no promise younger than
//       the promise TTL) that needs `size` GPUs, all with a free unit in `available`, created
//       first (kubelet admits pods in creation order, and calls Allocate right after
//       GetPreferredAllocation); it is promised one free unit on each of its GPUs, and those
//       units are returned. A promise that was not followed by an Allocate within the TTL
//       lapses (the pod's admission failed or kubelet chose otherwise).
//   Resolve(units)  which container do these units belong to? The container they were promised
//       to (exact set match). Units nobody was promised (kubelet did not ask for, or did not
//       follow, a preference) go to the pending container whose GPU set they cover, oldest
//       first.
//
// Holdings: a unit is held by at most one container (except that an app container may take
// over units of an init container of the same pod, as kubelet reuses them). Holdings survive
// Update() for containers that persist; Restore() re-establishes them from the slices on disk
// after a daemon restart.
//
// Concurrency: a reader-writer lock guards the maps; Resolve() for promised units (the normal
// path) needs only the shared lock, so Allocate calls for different pods run in parallel.
// Prefer() and the fallback of Resolve() take the exclusive lock for a map update of a few
// microseconds; no lock is held across I/O, RPCs or the API server.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "node/cluster/cluster.h"
#include "node/plugin/assignment.h"

namespace vgpu::node {

struct AssignmentEntry {
  std::string pod_ns;
  std::string pod_name;
  std::string pod_uid;
  int64_t pod_created_unix = 0;
  int64_t assigned_at_ms = 0;
  ContainerAssignment container;
  std::vector<std::string> gpus;  // sorted UUIDs
  // Guarded by the store's lock: the units promised or allocated to this container (sorted).
  std::vector<std::string> units;
  int64_t promised_at_ms = 0;  // when Prefer() last promised `units`; 0: never
  std::atomic<bool> allocated{false};

  std::string Describe() const { return pod_ns + "/" + pod_name + " container " + container.name; }
};

class AssignmentStore {
 public:
  static constexpr int64_t kDefaultPromiseTtlMs = 30'000;
  explicit AssignmentStore(int64_t promise_ttl_ms = kDefaultPromiseTtlMs)
      : promise_ttl_ms_(promise_ttl_ms) {}

  // Replaces the assignments with those found on `pods` (vgpu's or HAMi's annotations;
  // terminated pods are skipped); containers that persist keep their units. Returns (pod,
  // reason) for annotations that did not parse (such pods cannot be allocated; Resolve's
  // kNotFound error names them).
  std::vector<std::pair<std::string, std::string>> Update(const std::vector<PodInfo>& pods);

  // Records that `container` of pod `pod_uid` holds `units` and is allocated (a slice on disk).
  void Restore(const std::string& pod_uid, const std::string& container,
               const std::vector<std::string>& units);

  // `now_ms`: a monotonic clock in milliseconds (for promise ages).
  std::optional<std::vector<std::string>> Prefer(const std::vector<std::string>& available,
                                                 const std::vector<std::string>& must_include,
                                                 int size, int64_t now_ms);

  // The container `units` belong to, marked allocated. Errors:
  //   kInvalidArgument    malformed unit IDs, or two units of one GPU;
  //   kNotFound           no assigned container matches;
  //   kFailedPrecondition the units are promised to different containers, or only partly.
  Result<std::shared_ptr<const AssignmentEntry>> Resolve(const std::vector<std::string>& units);

  // The allocated containers that hold exactly `units` (two when an app container took over
  // its init container's units). Empty when none.
  std::vector<std::shared_ptr<const AssignmentEntry>> Holders(
      const std::vector<std::string>& units) const;

  // NVIDIA's MIG resources (nvidia.com/mig-<profile>, static layouts): kubelet names MIG
  // instances by their UUID, and those UUIDs are the units of the containers that get them
  // (assignment_store_mig.cc). Only containers whose every assigned GPU names a MIG instance
  // ("mig") take part.
  //   PreferMig: the instances of `available` assigned to the oldest pending container that
  //       needs `size` of them, promised to it as Prefer() does; nullopt when none.
  //   ResolveMig: the container `devices` belong to, marked allocated: the one they were
  //       promised to, else the oldest pending container assigned exactly these instances, else
  //       (kubelet chose other instances) the oldest pending container assigned existing
  //       instances of the same profiles, which then runs in the instances kubelet gave. Errors
  //       as Resolve's.
  struct MigDeviceRef {
    std::string uuid;      // "MIG-..."
    std::string gpu_uuid;  // its parent GPU
    std::string profile;   // "1g.18gb"
    int start = 0;
  };
  std::optional<std::vector<std::string>> PreferMig(const std::vector<MigDeviceRef>& available,
                                                    int size, int64_t now_ms);
  Result<std::shared_ptr<const AssignmentEntry>> ResolveMig(
      const std::vector<MigDeviceRef>& devices);

  size_t size() const;
  std::set<std::string> PodUids() const;

 private:
  using EntryPtr = std::shared_ptr<AssignmentEntry>;
  static std::string Key(const std::string& uid, const std::string& container) {
    return uid + "/" + container;
  }
  // Kubelet admits pods in creation order, and a pod's init containers before its app containers.
  static bool Older(const AssignmentEntry& a, const AssignmentEntry& b);
  void SetUnitsLocked(const EntryPtr& e, std::vector<std::string> units);
  // True when `unit` is held by someone other than `e` (an init container of e's own pod does
  // not count).
  bool HeldByOtherLocked(const std::string& unit, const AssignmentEntry& e) const;

  const int64_t promise_ttl_ms_;
  mutable std::shared_mutex mu_;
  std::map<std::string, EntryPtr> entries_;                    // by Key()
  std::map<std::string, std::vector<EntryPtr>> holders_;       // unit ID -> holders
  std::map<std::string, std::vector<std::string>> restored_;   // Key() -> units, until seen
  std::vector<std::pair<std::string, std::string>> rejected_;  // of the last Update()
};

}  // namespace vgpu::node
