// AssignmentStore: the scheduler's assignments of the pods bound to this node, indexed by unit
// ID, so that a device-plugin request (which carries only unit IDs) finds its pod and container.
//
// Concurrency without a node-wide lock: lookups take a shared (reader) lock on the index for the
// time of a map search; many Allocate calls run in parallel and never wait for each other. Only
// Update() (the periodic pod refresh) takes the exclusive lock, for the time of swapping maps.
// Per-container state (allocated or not) is an atomic in the entry.
//
// Correctness of the mapping rests on one invariant that the scheduler keeps: among the live
// pods of a node no two containers are assigned the same unit. A set of unit IDs therefore
// names at most one container; FindByUnits() checks that the set is exactly that container's.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "node/assignment.h"
#include "node/cluster.h"

namespace vgpu::node {

struct AssignmentEntry {
  std::string pod_ns;
  std::string pod_name;
  std::string pod_uid;
  int64_t pod_created_unix = 0;
  ContainerAssignment container;
  std::vector<std::string> unit_ids;  // sorted
  mutable std::atomic<bool> allocated{false};

  std::string Describe() const { return pod_ns + "/" + pod_name + " container " + container.name; }
};

class AssignmentStore {
 public:
  // Replaces the store's content with the assignments found on `pods`. Terminated pods are
  // skipped; entries that persist keep their allocated mark. Returns the pods whose annotation
  // did not parse, with the reason (for logs; such pods cannot be allocated).
  std::vector<std::pair<std::string, std::string>> Update(const std::vector<PodInfo>& pods);

  // Adds or replaces one pod's assignments (tests; pods seen by an on-demand lookup).
  Status Upsert(const PodInfo& pod);

  // The container whose assigned units are exactly `unit_ids`. Errors:
  //   kNotFound          no live assignment names any of these units;
  //   kFailedPrecondition the units belong to an assignment but are not exactly its units, or
  //                       belong to two different containers (kubelet chose differently from
  //                       the scheduler).
  Result<std::shared_ptr<const AssignmentEntry>> FindByUnits(
      std::vector<std::string> unit_ids) const;

  // The units to prefer for a container that needs `size` units: those of the pending
  // (not yet allocated) container assignment that fits in `available` and includes
  // `must_include`; among several, the pod created first (kubelet admits pods in creation
  // order). std::nullopt when no pending assignment fits.
  std::optional<std::vector<std::string>> Prefer(const std::vector<std::string>& available,
                                                 const std::vector<std::string>& must_include,
                                                 int size) const;

  // Marks a container's assignment as allocated (excluded from Prefer()).
  void MarkAllocated(const AssignmentEntry& entry) const;
  // Marks the containers whose slices already exist (after a daemon restart) as allocated.
  void MarkAllocatedByKey(const std::string& pod_uid, const std::string& container);

  size_t size() const;
  std::set<std::string> PodUids() const;

 private:
  using EntryPtr = std::shared_ptr<AssignmentEntry>;
  mutable std::shared_mutex mu_;
  std::map<std::string, EntryPtr> by_unit_;                  // unit ID -> entry
  std::map<std::string, std::vector<EntryPtr>> by_pod_uid_;  // pod uid -> its entries
};

}  // namespace vgpu::node
