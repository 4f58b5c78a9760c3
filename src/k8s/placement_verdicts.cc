// PlacementState's answers to filter and prioritize, with the per-shape verdicts they remember
// until the state changes (see the contract in placement_state.h).
#include <algorithm>

#include "k8s/placement_state.h"

namespace vgpu::k8s {
namespace {

// Whether two requests place alike: container names and priorities do not matter.
bool SamePlacement(const PodGpuRequest& a, const PodGpuRequest& b) {
  if (a.containers.size() != b.containers.size() || a.use_types != b.use_types ||
      a.nouse_types != b.nouse_types || a.use_uuids != b.use_uuids ||
      a.nouse_uuids != b.nouse_uuids) {
    return false;
  }
  for (size_t i = 0; i < a.containers.size(); ++i) {
    const ContainerGpuRequest& x = a.containers[i];
    const ContainerGpuRequest& y = b.containers[i];
    if (x.init != y.init || x.count != y.count || x.memory_mib != y.memory_mib ||
        x.memory_percent != y.memory_percent || x.cores != y.cores) {
      return false;
    }
  }
  return true;
}

// Reason slots of NodeVerdicts::reasons.
enum Reason : uint8_t { kNoInventory, kHami, kNoVariant, kCould, kNever, kNumReasons };

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
    return;
  }
  ctx_.pod = &r;
  for (size_t v = 0; v < m.variants.size(); ++v) {
    for (sched::NodeId id : engine_.scheduler->FilterNodes(m.variants[v].request, todo)) {
      m.fits[v][id] = 1;
    }
  }
  for (sched::NodeId id : todo) {
    bool fits = false;
    for (const auto& f : m.fits) fits = fits || f[id] != 0;
    m.state[id] = fits                              ? Memo::kFits
                  : CouldEverFit(r, m.variants, id) ? Memo::kCould
                                                    : Memo::kNever;
  }
  ctx_.pod = nullptr;
}

void PlacementState::FilterVerdicts(const PodGpuRequest& request,
                                    std::span<const std::string_view> nodes, NodeVerdicts* out) {
  out->kind.assign(nodes.size(), NodeVerdicts::kFeasible);
  out->reason.assign(nodes.size(), 0);
  out->reasons.assign(kNumReasons, std::string());
  out->counts[0] = out->counts[1] = out->counts[2] = 0;
  const auto mark = [out](size_t i, NodeVerdicts::Kind kind, Reason reason) {
    out->kind[i] = kind;
    out->reason[i] = reason;
    ++out->counts[kind];
  };
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  if (!request.HasGpus()) {
    out->counts[NodeVerdicts::kFeasible] = nodes.size();
    return;
  }
  Memo& m = MemoFor(request);
  std::vector<sched::NodeId> ids(nodes.size(), 0), todo;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto id = engine_.by_name.Find(nodes[i]);
    if (!id) {
      mark(i, NodeVerdicts::kUnresolvable, kNoInventory);
    } else if (engine_.schedulable[*id] == 0) {
      mark(i, NodeVerdicts::kUnresolvable, kHami);
    } else {
      ids[i] = *id;
      out->kind[i] = 255;  // decided below
      if (m.state[*id] == Memo::kUnknown) todo.push_back(*id);
    }
  }
  Resolve(m, request, todo);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (out->kind[i] != 255) continue;
    switch (m.state[ids[i]]) {
      case Memo::kFits:
        out->kind[i] = NodeVerdicts::kFeasible;
        ++out->counts[NodeVerdicts::kFeasible];
        break;
      case Memo::kCould:
        mark(i, NodeVerdicts::kFailed, kCould);
        break;
      default:
        mark(i, NodeVerdicts::kUnresolvable, m.variants.empty() ? kNoVariant : kNever);
        break;
    }
  }
  std::vector<std::string>& texts = out->reasons;
  texts[kNoInventory] =
      "vgpu: node publishes no GPU inventory (" + std::string(kInventoryAnnotation) + ")";
  texts[kHami] =
      "vgpu: node runs HAMi's device plugin; vgpu schedules nodes whose vgpu node daemon "
      "publishes " +
      std::string(kInventoryAnnotation);
  if (m.variants.empty()) {
    texts[kNoVariant] = "vgpu: " + m.why_none;
  } else {
    if (out->counts[NodeVerdicts::kFailed] > 0) texts[kCould] = ReasonText(m.variants, true);
    texts[kNever] = ReasonText(m.variants, false);
  }
}

std::vector<int64_t> PlacementState::ScoreViews(const PodGpuRequest& request,
                                                std::span<const std::string_view> nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  std::vector<int64_t> out(nodes.size(), 0);
  if (!request.HasGpus() || !engine_.scheduler) return out;
  Memo& m = MemoFor(request);
  std::vector<sched::NodeId> ids, todo;
  std::vector<size_t> pos;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto id = engine_.by_name.Find(nodes[i]);
    if (id && engine_.schedulable[*id] != 0) {
      ids.push_back(*id);
      pos.push_back(i);
      if (m.state[*id] == Memo::kUnknown) todo.push_back(*id);
    }
  }
  if (!m.scored || m.scored_ids != ids) {
    Resolve(m, request, todo);
    std::vector<int64_t> scores(ids.size(), 0);
    ctx_.pod = &request;
    for (size_t v = 0; v < m.variants.size(); ++v) {
      std::vector<sched::NodeId> feasible;
      std::vector<size_t> at;  // index into ids
      for (size_t k = 0; k < ids.size(); ++k) {
        if (m.fits[v][ids[k]] != 0) {
          feasible.push_back(ids[k]);
          at.push_back(k);
        }
      }
      if (feasible.empty()) continue;
      const std::vector<int64_t> s =
          engine_.scheduler->ScoreNodes(m.variants[v].request, feasible, rng_);
      for (size_t k = 0; k < s.size(); ++k) {
        const int64_t score = std::clamp<int64_t>(s[k], 0, 100) / 10;  // MaxExtenderPriority
        scores[at[k]] = std::max(scores[at[k]], score);
      }
    }
    ctx_.pod = nullptr;
    m.scored = true;
    m.scored_ids = std::move(ids);
    m.scores = std::move(scores);
  }
  for (size_t k = 0; k < pos.size(); ++k) out[pos[k]] = m.scores[k];
  return out;
}

}  // namespace vgpu::k8s
