// PlacementState's side of the policy's Observe extension point: every pod is shown once, and
// the specs seen are kept so that a rebuilt engine's policy learns the same workload again.
#include <queue>

#include "k8s/extender/placement_state.h"

namespace vgpu::k8s {
namespace {

constexpr size_t kMaxObservedUids = size_t{1} << 20;
constexpr uint64_t kMaxReplayedPods = uint64_t{1} << 20;

std::string SpecKey(const sched::PodRequest& r, const std::vector<std::string>& use,
                    const std::vector<std::string>& nouse) {
  std::string k = std::to_string(r.cpu_milli) + "/" + std::to_string(r.memory_mib) + "/" +
                  std::to_string(r.num_gpus) + "/" + std::to_string(r.gpu_milli) + "/" +
                  std::to_string(r.gpu_memory_mib);
  for (const std::string& t : use) k += "/+" + t;
  for (const std::string& t : nouse) k += "/-" + t;
  return k;
}

}  // namespace

sched::ModelSet PlacementState::ModelsOf(const std::vector<std::string>& use_types,
                                         const std::vector<std::string>& nouse_types) const {
  if (use_types.empty() && nouse_types.empty()) return sched::ModelSet();
  PodGpuRequest probe;
  probe.use_types = use_types;
  probe.nouse_types = nouse_types;
  sched::ModelSet set;
  bool all = true;
  for (size_t m = 0; m < engine_.model_name.size(); ++m) {
    if (probe.AllowsModel(engine_.model_name[m])) {
      set.Add(static_cast<sched::ModelId>(m));
    } else {
      all = false;
    }
  }
  return all ? sched::ModelSet() : set;
}

void PlacementState::ObserveOnce(const std::string& uid, const sched::PodRequest& r,
                                 const std::vector<std::string>& use_types,
                                 const std::vector<std::string>& nouse_types) {
  if (uid.empty()) return;  // a question about no pod in particular is no arrival
  if (observed_.count(uid) != 0) return;
  if (observed_.size() >= kMaxObservedUids) observed_.clear();
  observed_.emplace(uid, 1);
  if (engine_.scheduler) {
    const uint64_t epoch = engine_.scheduler->policy().score->Epoch();
    engine_.scheduler->ObservePod(r);
    if (engine_.scheduler->policy().score->Epoch() != epoch) Changed();
  }
  sched::PodRequest plain = r;
  plain.models = sched::ModelSet();
  const std::string key = SpecKey(plain, use_types, nouse_types);
  auto [it, inserted] = observation_index_.emplace(key, observations_.size());
  if (inserted) observations_.push_back(ObservedSpec{plain, use_types, nouse_types, 0});
  ++observations_[it->second].count;
}

void PlacementState::ObserveRequest(const std::string& uid, const PodGpuRequest& r) {
  if (r.TakesNothing() || uid.empty() || observed_.count(uid) != 0) return;
  std::vector<Variant> variants = Variants(r, nullptr);
  if (variants.empty()) return;  // fits no GPU of the cluster
  sched::PodRequest req = variants.front().request;
  // The models of every memory class the pod may use.
  req.models = ModelsOf(r.use_types, r.nouse_types);
  ObserveOnce(uid, req, r.use_types, r.nouse_types);
}

void PlacementState::ReplayObservations() {
  if (!engine_.scheduler || observations_.empty()) return;
  // Interleaved in proportion to the counts (stride scheduling), so the policy's periodic
  // re-learning sees the mix it saw, not one spec after another.
  uint64_t total = 0;
  for (const ObservedSpec& o : observations_) total += o.count;
  const double scale = total > kMaxReplayedPods ? double(kMaxReplayedPods) / double(total) : 1.0;
  struct Next {
    double pass;
    size_t spec;
    bool operator>(const Next& o) const { return pass != o.pass ? pass > o.pass : spec > o.spec; }
  };
  std::priority_queue<Next, std::vector<Next>, std::greater<>> queue;
  std::vector<uint64_t> left(observations_.size());
  std::vector<double> stride(observations_.size());
  std::vector<sched::PodRequest> requests(observations_.size());
  for (size_t i = 0; i < observations_.size(); ++i) {
    const ObservedSpec& o = observations_[i];
    left[i] = std::max<uint64_t>(1, static_cast<uint64_t>(double(o.count) * scale + 0.5));
    stride[i] = 1.0 / double(left[i]);
    requests[i] = o.request;
    requests[i].models = ModelsOf(o.use_types, o.nouse_types);
    queue.push(Next{stride[i] / 2, i});
  }
  while (!queue.empty()) {
    Next n = queue.top();
    queue.pop();
    engine_.scheduler->ObservePod(requests[n.spec]);
    if (--left[n.spec] > 0) queue.push(Next{n.pass + stride[n.spec], n.spec});
  }
  Changed();
}

}  // namespace vgpu::k8s
