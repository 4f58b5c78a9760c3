// Values computed per node and kept while neither the node nor the scorer's state changes: an
// entry is valid for the node's version (Cluster::version) and an epoch of the scorer (bumped
// when what it computes from changes, e.g. a new target workload).
#pragma once

#include <cstdint>
#include <vector>

#include "sched/cluster.h"

namespace vgpu::sched {

// The stamp of node `n` of `c` at `epoch`: (node version << 32) | (epoch + 1), never 0 (0 is an
// empty entry).
inline uint64_t NodeStamp(const Cluster& c, NodeId n, uint64_t epoch) {
  return (uint64_t{c.version(n)} << 32) | ((epoch + 1) & 0xffffffffu);
}

// One cached T per node of a cluster.
template <typename T>
class NodeCache {
 public:
  // The value of node `n` at `epoch`: the cached one when its stamp still holds, else
  // `compute()`, stored. `hit`, when given, tells which.
  template <typename Compute>
  T Get(const Cluster& c, NodeId n, uint64_t epoch, Compute compute, bool* hit = nullptr) {
    if (entries_.size() < c.num_nodes()) entries_.resize(c.num_nodes());
    const uint64_t stamp = NodeStamp(c, n, epoch);
    Entry& e = entries_[n];
    if (hit != nullptr) *hit = e.stamp == stamp;
    if (e.stamp != stamp) {
      e.value = compute();
      e.stamp = stamp;
    }
    return e.value;
  }

 private:
  struct Entry {
    uint64_t stamp = 0;
    T value{};
  };
  std::vector<Entry> entries_;
};

}  // namespace vgpu::sched
