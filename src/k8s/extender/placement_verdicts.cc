// PlacementState's answers to filter and prioritize, with the per-shape verdicts and ranking they
// remember until the state changes (see the contract in placement_state.h).
#include <algorithm>
#include <cstdio>

#include "k8s/extender/placement_state.h"
#include "k8s/extender/placement_topology.h"

namespace vgpu::k8s {
namespace {

// Whether two requests place alike: container names and priorities do not matter.
bool SamePlacement(const PodGpuRequest& a, const PodGpuRequest& b) {
  if (a.containers.size() != b.containers.size() || a.host != b.host ||
      a.use_types != b.use_types || a.nouse_types != b.nouse_types || a.use_uuids != b.use_uuids ||
      a.nouse_uuids != b.nouse_uuids || a.require_nvlink != b.require_nvlink) {
    return false;
  }
  for (size_t i = 0; i < a.containers.size(); ++i) {
    const ContainerGpuRequest& x = a.containers[i];
    const ContainerGpuRequest& y = b.containers[i];
    if (x.init != y.init || x.count != y.count || x.memory_mib != y.memory_mib ||
        x.memory_percent != y.memory_percent || x.cores != y.cores ||
        x.mig_profile != y.mig_profile) {
      return false;
    }
  }
  return true;
}

std::string HostText(const HostResources& h, bool ever) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                ever ? "vgpu: the node's allocatable CPU or memory is below the pod's requests "
                       "(%lld millicores, %lld MiB)"
                     : "vgpu: insufficient free CPU or memory: needs %lld millicores and %lld MiB",
                static_cast<long long>(h.cpu_milli), static_cast<long long>(h.memory_mib));
  return buf;
}

}  // namespace

uint64_t PlacementState::version() {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

PlacementState::Memo& PlacementState::MemoFor(const PodGpuRequest& r) {
  if (memo_version_ != version_) {
    memos_.clear();
    memo_next_ = 0;
    memo_version_ = version_;
  }
  for (auto& m : memos_) {
    if (SamePlacement(m->request, r)) return *m;
  }
  auto fresh = std::make_unique<Memo>();
  fresh->request = r;
  fresh->variants = Variants(r, &fresh->why_none);
  const size_t n = engine_.node_names.size();
  fresh->state.assign(n, Memo::kUnknown);
  fresh->fits.assign(fresh->variants.size(), std::vector<uint8_t>(n, 0));
  fresh->mig.assign(n, 0);
  fresh->mig_raw.assign(n, 0);
  fresh->mig_why.assign(n, std::string());
  const size_t cap = std::max<size_t>(1, options_.memo_shapes);
  if (options_.memo_shapes == 0) memos_.clear();  // kept for this call only
  if (memos_.size() < cap) {
    memos_.push_back(std::move(fresh));
    return *memos_.back();
  }
  memos_[memo_next_] = std::move(fresh);
  Memo& m = *memos_[memo_next_];
  memo_next_ = (memo_next_ + 1) % cap;
  return m;
}

void PlacementState::Resolve(Memo& m, const PodGpuRequest& r,
                             const std::vector<sched::NodeId>& todo) {
  if (todo.empty()) return;
  if (m.variants.empty()) {
    for (sched::NodeId id : todo) m.state[id] = Memo::kNever;
    ResolveMig(m, r, todo);
    return;
  }
  ctx_.pod = &r;
  for (size_t v = 0; v < m.variants.size(); ++v) {
    for (sched::NodeId id : engine_.scheduler->FilterNodes(m.variants[v].request, todo)) {
      m.fits[v][id] = 1;
    }
  }
  const sched::Cluster& c = *engine_.cluster;
  for (sched::NodeId id : todo) {
    bool fits = false;
    for (const auto& f : m.fits) fits = fits || f[id] != 0;
    if (fits) {
      m.state[id] = Memo::kFits;
    } else if (!c.FitsHost(m.variants.front().request, id)) {
      const bool ever =
          c.cpu_capacity(id) < r.host.cpu_milli || c.memory_capacity(id) < r.host.memory_mib;
      m.state[id] = ever ? Memo::kHostNever : Memo::kHost;
    } else {
      m.state[id] = CouldEverFit(r, m.variants, id) ? Memo::kCould : Memo::kNever;
    }
  }
  ctx_.pod = nullptr;
  ResolveMig(m, r, todo);
}

void PlacementState::Rank(Memo& m, const PodGpuRequest& r, const std::vector<sched::NodeId>& ids) {
  if (m.scored && m.scored_ids == ids) return;
  std::vector<sched::NodeId> todo;
  for (sched::NodeId id : ids) {
    if (m.state[id] == Memo::kUnknown) todo.push_back(id);
  }
  Resolve(m, r, todo);
  const size_t n = ids.size();
  m.raw.assign(n, 0);
  m.feasible.assign(n, 0);
  m.variant.assign(n, -1);
  ctx_.pod = &r;
  for (size_t v = 0; v < m.variants.size(); ++v) {
    std::vector<sched::NodeId> feasible;
    std::vector<size_t> at;  // index into ids
    for (size_t k = 0; k < n; ++k) {
      if (m.fits[v][ids[k]] != 0) {
        feasible.push_back(ids[k]);
        at.push_back(k);
      }
    }
    if (feasible.empty()) continue;
    const std::vector<int64_t> s =
        engine_.scheduler->RawScores(m.variants[v].request, feasible, rng_);
    for (size_t j = 0; j < s.size(); ++j) {
      const size_t k = at[j];
      if (m.feasible[k] == 0 || s[j] > m.raw[k]) {  // the smallest class wins ties
        m.raw[k] = s[j];
        m.feasible[k] = 1;
        m.variant[k] = static_cast<int>(v);
      }
    }
  }
  ctx_.pod = nullptr;
  // Multi-GPU pods: nodes ranked by the best GPU set each offers first (placement_topology.h).
  std::vector<double> bandwidth(n, 0.0);
  bool multi = false;
  for (size_t k = 0; k < n; ++k) {
    if (m.feasible[k] == 0 || m.variant[k] < 0) continue;
    const sched::PodRequest& req = m.variants[m.variant[k]].request;
    if (req.num_gpus < 2) continue;
    multi = true;
    bandwidth[k] = BestSetBandwidth(*engine_.topology[ids[k]], *engine_.cluster, ids[k], req);
  }
  if (multi) RankByTopology(&m.raw, m.feasible, bandwidth);
  RankMig(m, ids);
  std::vector<uint32_t> rank(n);
  for (size_t k = 0; k < n; ++k) rank[k] = engine_.scheduler->TieRank(ids[k]);
  m.choice = EngineChoice(m.raw, m.feasible, rank);
  m.scores = ExtenderPriorities(m.raw, m.feasible, m.choice);
  m.scored = true;
  m.scored_ids = ids;
}

void PlacementState::FilterVerdicts(const PodRef& pod, const PodGpuRequest& request,
                                    std::span<const std::string_view> nodes, NodeVerdicts* out) {
  out->kind.assign(nodes.size(), NodeVerdicts::kFeasible);
  out->reason.assign(nodes.size(), 0);
  out->reasons.assign(kNumReasons, std::string());
  for (size_t& c : out->counts) c = 0;
  bool used[kNumReasons] = {};  // reasons some node got: only their texts are written
  const auto mark = [out, &used](size_t i, NodeVerdicts::Kind kind, uint8_t reason) {
    out->kind[i] = kind;
    out->reason[i] = reason;
    used[reason] = true;
    ++out->counts[kind];
  };
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  if (request.TakesNothing() || !engine_.scheduler) {
    out->counts[NodeVerdicts::kFeasible] = nodes.size();
    return;
  }
  const std::string uid(pod.uid);
  ObserveRequest(uid, request);
  if (!uid.empty()) ReleaseHold(uid);  // kube-scheduler's retry: the last choice was rejected
  const bool gpus = request.HasGpus();
  Memo& m = MemoFor(request);
  std::vector<sched::NodeId> ids(nodes.size(), 0), todo;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto id = engine_.by_name.Find(nodes[i]);
    if (!id) {
      if (gpus) {
        mark(i, NodeVerdicts::kUnresolvable, kNoInventory);
      } else {
        ++out->counts[NodeVerdicts::kFeasible];  // not a GPU node: kube-scheduler's to judge
      }
    } else if (gpus && engine_.schedulable[*id] == 0) {
      mark(i, NodeVerdicts::kUnresolvable, kHami);
    } else {
      ids[i] = *id;
      out->kind[i] = 255;  // decided below
      if (m.state[*id] == Memo::kUnknown) todo.push_back(*id);
    }
  }
  Resolve(m, request, todo);
  const bool narrow = options_.filter_mode == FilterMode::kNarrow;
  std::vector<size_t> pos;  // narrow mode: feasible engine nodes, in request order
  if (narrow) pos.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (out->kind[i] != 255) continue;
    switch (m.state[ids[i]]) {
      case Memo::kFits:
        out->kind[i] = NodeVerdicts::kFeasible;
        ++out->counts[NodeVerdicts::kFeasible];
        if (narrow) pos.push_back(i);
        break;
      case Memo::kCould:
        mark(i, NodeVerdicts::kFailed, kCould);
        break;
      case Memo::kHost:
        mark(i, NodeVerdicts::kFailed, kHostShort);
        break;
      case Memo::kHostNever:
        mark(i, NodeVerdicts::kUnresolvable, kHostNever);
        break;
      default:
        mark(i, NodeVerdicts::kUnresolvable, m.variants.empty() ? kNoVariant : kNever);
        break;
    }
  }
  std::vector<std::string>& texts = out->reasons;
  if (used[kNoInventory]) {
    texts[kNoInventory] =
        "vgpu: node publishes no GPU inventory (" + std::string(kInventoryAnnotation) + ")";
  }
  if (used[kHami]) {
    texts[kHami] =
        "vgpu: node runs HAMi's device plugin; vgpu schedules nodes whose vgpu node daemon "
        "publishes " +
        std::string(kInventoryAnnotation);
  }
  if (m.variants.empty()) {
    texts[kNoVariant] = "vgpu: " + m.why_none;
  } else if (gpus) {
    if (used[kCould]) texts[kCould] = ReasonText(m.variants, true);
    if (used[kNever]) texts[kNever] = ReasonText(m.variants, false);
  }
  if (used[kHostShort]) texts[kHostShort] = HostText(request.host, false);
  if (used[kHostNever]) texts[kHostNever] = HostText(request.host, true);
  texts[kNarrowedOut] = "vgpu: another node fits the pod better (filter mode narrow)";
  MigReasons(m, ids, out);
  if (narrow && !pos.empty()) {
    std::vector<sched::NodeId> feasible_ids;
    feasible_ids.reserve(pos.size());
    for (size_t i : pos) feasible_ids.push_back(ids[i]);
    Narrow(pod, request, m, feasible_ids, pos, out);
  }
}

std::vector<int64_t> PlacementState::ScoreViews(const PodRef& pod, const PodGpuRequest& request,
                                                std::span<const std::string_view> nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  std::vector<int64_t> out(nodes.size(), 0);
  if (request.TakesNothing() || !engine_.scheduler) return out;
  const std::string uid(pod.uid);
  ObserveRequest(uid, request);
  if (auto it = pods_.find(uid); !uid.empty() && it != pods_.end() && it->second.held) {
    // The filter narrowed to one node and holds the pod there.
    for (size_t i = 0; i < nodes.size(); ++i) {
      out[i] = nodes[i] == it->second.node ? kMaxExtenderPriority : 0;
    }
    return out;
  }
  const bool gpus = request.HasGpus();
  Memo& m = MemoFor(request);
  std::vector<sched::NodeId> ids;
  std::vector<size_t> pos;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto id = engine_.by_name.Find(nodes[i]);
    if (!id) {
      if (!gpus) out[i] = kMaxExtenderPriority;  // strands no GPU
    } else if (!gpus || engine_.schedulable[*id] != 0) {
      ids.push_back(*id);
      pos.push_back(i);
    }
  }
  Rank(m, request, ids);
  for (size_t k = 0; k < pos.size(); ++k) out[pos[k]] = m.scores[k];
  return out;
}

}  // namespace vgpu::k8s
