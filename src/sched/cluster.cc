#include "sched/cluster.h"

#include <algorithm>
#include <atomic>

namespace vgpu::sched {

uint64_t Cluster::NextStamp() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

Result<NodeId> Cluster::AddNode(const NodeSpec& spec) {
  if (spec.name.empty()) return Status::InvalidArgument("node name is empty");
  if (by_name_.count(spec.name) != 0) {
    return Status::AlreadyExists("node '" + spec.name + "' is already in the cluster");
  }
  if (spec.cpu_milli < 0 || spec.memory_mib < 0) {
    return Status::InvalidArgument("node '" + spec.name + "' has a negative capacity");
  }
  if (spec.gpus.size() > static_cast<size_t>(kMaxGpusPerNode)) {
    return Status::InvalidArgument("node '" + spec.name + "' has " +
                                   std::to_string(spec.gpus.size()) + " GPUs; at most " +
                                   std::to_string(kMaxGpusPerNode));
  }
  NodeState s;
  s.cpu_capacity = s.cpu_free = spec.cpu_milli;
  s.memory_capacity = s.memory_free = spec.memory_mib;
  s.gpu_begin = static_cast<uint32_t>(gpus_.size());
  s.gpu_count = static_cast<int32_t>(spec.gpus.size());
  s.full_free_gpus = s.gpu_count;
  s.max_gpu_free = s.gpu_count > 0 ? kGpuMilli : 0;
  for (const GpuSpec& g : spec.gpus) {
    if (g.memory_mib < 0) {
      return Status::InvalidArgument("node '" + spec.name + "' has a GPU with negative memory");
    }
    GpuState gs;
    gs.model = g.model;
    gs.memory_capacity_mib = gs.memory_free_mib = g.memory_mib;
    gpus_.push_back(gs);
    s.model_bits |= uint64_t{1} << g.model;
    s.gpu_free_milli += kGpuMilli;
  }
  total_gpu_milli_ += s.gpu_free_milli;
  const NodeId id = static_cast<NodeId>(nodes_.size());
  nodes_.push_back(s);
  names_.push_back(spec.name);
  classes_.emplace_back();
  by_name_.emplace(spec.name, id);
  stamp_ = NextStamp();
  return id;
}

std::optional<NodeId> Cluster::FindNode(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

int Cluster::PodsOfClass(NodeId n, int cls) const {
  for (const auto& [c, count] : classes_[n]) {
    if (c == cls) return count;
  }
  return 0;
}

void Cluster::AddClass(NodeId n, int cls, int delta) {
  if (cls < 0) return;  // CPU-only pods have no GPU class
  auto& v = classes_[n];
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].first != cls) continue;
    v[i].second += delta;
    if (v[i].second <= 0) v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
  if (delta > 0) v.emplace_back(cls, delta);
}

void Cluster::UpdateMaxFree(NodeState& s) {
  s.max_gpu_free = 0;
  for (int32_t i = 0; i < s.gpu_count; ++i) {
    s.max_gpu_free =
        std::max(s.max_gpu_free, gpus_[s.gpu_begin + static_cast<uint32_t>(i)].free_milli);
  }
}

int64_t Cluster::ChargedGpuMemory(const PodRequest& r, const GpuState& g) {
  if (r.gpu_memory_mib > 0) return r.gpu_memory_mib;
  return g.memory_capacity_mib * r.gpu_milli / kGpuMilli;
}

int Cluster::CountFittingGpus(const PodRequest& r, NodeId n, const FitOptions& opt) const {
  int count = 0;
  for (const GpuState& g : gpus(n)) count += GpuFits(r, g, opt) ? 1 : 0;
  return count;
}

Status Cluster::Reserve(PodKey key, const PodRequest& r, const Placement& p,
                        const FitOptions& opt) {
  VGPU_RETURN_IF_ERROR(ValidateRequest(r));
  if (p.node >= nodes_.size()) {
    return Status::InvalidArgument("placement names node " + std::to_string(p.node) +
                                   " but the cluster has " + std::to_string(nodes_.size()));
  }
  if (reservations_.count(key) != 0) {
    return Status::AlreadyExists("pod " + std::to_string(key) + " is already reserved");
  }
  NodeState& s = nodes_[p.node];
  const std::string& node_name = names_[p.node];
  if (GpuCount(p.gpus) != r.num_gpus) {
    return Status::InvalidArgument("placement on '" + node_name + "' names " +
                                   std::to_string(GpuCount(p.gpus)) + " GPUs, pod asks for " +
                                   std::to_string(r.num_gpus));
  }
  if (s.gpu_count < kMaxGpusPerNode && (p.gpus >> s.gpu_count) != 0) {
    return Status::InvalidArgument("placement names a GPU index beyond the " +
                                   std::to_string(s.gpu_count) + " GPUs of '" + node_name + "'");
  }
  if (s.cpu_free < r.cpu_milli || s.memory_free < r.memory_mib) {
    return Status::ResourceExhausted("node '" + node_name + "' lacks CPU or memory for the pod");
  }
  int bad_gpu = -1;
  ForEachGpu(p.gpus, [&](int i) {
    if (bad_gpu < 0 && !GpuFits(r, gpus_[s.gpu_begin + i], opt)) bad_gpu = i;
  });
  if (bad_gpu >= 0) {
    return Status::ResourceExhausted("GPU " + std::to_string(bad_gpu) + " of '" + node_name +
                                     "' cannot take the pod (model, share, memory or slot)");
  }
  s.cpu_free -= r.cpu_milli;
  s.memory_free -= r.memory_mib;
  ForEachGpu(p.gpus, [&](int i) {
    GpuState& g = gpus_[s.gpu_begin + i];
    if (g.free_milli == kGpuMilli) --s.full_free_gpus;
    g.free_milli -= r.gpu_milli;
    g.memory_free_mib -= g.memory_capacity_mib > 0 ? ChargedGpuMemory(r, g) : 0;
    ++g.pods;
  });
  s.gpu_free_milli -= r.TotalGpuMilli();
  UpdateMaxFree(s);
  allocated_gpu_milli_ += r.TotalGpuMilli();
  AddClass(p.node, GpuClassOf(r), 1);
  ++s.version;
  stamp_ = NextStamp();
  reservations_.emplace(key, Reservation{r, p});
  return Status::Ok();
}

bool Cluster::Unreserve(PodKey key) {
  auto it = reservations_.find(key);
  if (it == reservations_.end()) return false;
  const PodRequest& r = it->second.request;
  const Placement& p = it->second.placement;
  NodeState& s = nodes_[p.node];
  s.cpu_free += r.cpu_milli;
  s.memory_free += r.memory_mib;
  ForEachGpu(p.gpus, [&](int i) {
    GpuState& g = gpus_[s.gpu_begin + i];
    g.free_milli += r.gpu_milli;
    if (g.free_milli == kGpuMilli) ++s.full_free_gpus;
    g.memory_free_mib += g.memory_capacity_mib > 0 ? ChargedGpuMemory(r, g) : 0;
    --g.pods;
  });
  s.gpu_free_milli += r.TotalGpuMilli();
  UpdateMaxFree(s);
  allocated_gpu_milli_ -= r.TotalGpuMilli();
  AddClass(p.node, GpuClassOf(r), -1);
  ++s.version;
  stamp_ = NextStamp();
  reservations_.erase(it);
  return true;
}

const Cluster::Reservation* Cluster::FindReservation(PodKey key) const {
  auto it = reservations_.find(key);
  return it == reservations_.end() ? nullptr : &it->second;
}

}  // namespace vgpu::sched
