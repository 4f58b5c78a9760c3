// The extender's state under kube-scheduler's interleavings, as a property over random schedules:
// many pods go through filter, prioritize and bind (each bind in flight for a while, as
// kube-scheduler binds in the background while it filters the next pods), are rejected after
// the filter by something else, are deleted, are echoed by the watch, and the clock moves on
// so decisions and holds expire. Checked after every step and at the end:
// - no GPU ever carries more than its units, compute or memory (nor a node more CPU or memory
//   than it has), by the state's own check and by the decisions handed out;
// - a bind is refused for lack of room only when the node has no room, counting what is bound
//   or being bound there (filter holds of other pods never refuse a bind);
// - once kube-scheduler has retried every pod, exactly as many pods are bound as fit.
// Every schedule is one seed; a failure names it, so it can be replayed alone.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/rng.h"
#include "k8s/extender/placement_state.h"

namespace vgpu::k8s {
namespace {

using namespace std::chrono_literals;

// One schedule's cluster and pods: every node has GPUs of one size, every pod one shape, so the
// number of pods that fit is known exactly.
struct Scenario {
  int nodes = 1, gpus = 2, units = 10;
  int64_t gpu_mib = 81920;
  HostResources allocatable;
  int cores = 10;
  int64_t pod_mib = 3000;
  HostResources pod_host;
  int pods = 40;
  FilterMode mode = FilterMode::kNarrow;
  int tolerance = 0;
  std::string policy = "default";

  int PerGpu() const { return std::min<int64_t>({units, 100 / cores, gpu_mib / pod_mib}); }
  int PerNode() const {
    int64_t n = int64_t{PerGpu()} * gpus;
    if (pod_host.cpu_milli > 0) n = std::min(n, allocatable.cpu_milli / pod_host.cpu_milli);
    if (pod_host.memory_mib > 0) n = std::min(n, allocatable.memory_mib / pod_host.memory_mib);
    return static_cast<int>(n);
  }
};

Scenario RandomScenario(Rng& rng) {
  Scenario s;
  s.nodes = 1 + static_cast<int>(rng.UniformInt(4));
  s.gpus = 1 + static_cast<int>(rng.UniformInt(4));
  s.units = 1 + static_cast<int>(rng.UniformInt(10));
  const int64_t sizes[] = {23034, 40960, 81920};
  s.gpu_mib = sizes[rng.UniformInt(3)];
  const int cores[] = {5, 10, 20, 25, 30, 50, 100};
  s.cores = cores[rng.UniformInt(7)];
  s.pod_mib = 1000 + static_cast<int64_t>(rng.UniformInt(20)) * 1000;
  if (rng.UniformInt(3) == 0) {
    s.pod_host = {1000, 4096};
    s.allocatable = {static_cast<int64_t>(2 + rng.UniformInt(30)) * 1000, 262144};
  } else {
    s.allocatable = {64000, 524288};
  }
  s.pods = 5 + static_cast<int>(rng.UniformInt(40));
  s.mode = rng.UniformInt(3) == 0 ? FilterMode::kAll : FilterMode::kNarrow;
  s.tolerance = s.mode == FilterMode::kNarrow && rng.UniformInt(4) == 0 ? 2 : 0;
  const char* policies[] = {"default", "bestfit", "hami-spread", "random"};
  s.policy = policies[rng.UniformInt(4)];
  return s;
}

// kube-scheduler's view of one pod, and what the API server holds about it.
struct ModelPod {
  enum Stage {
    kPending,   // in the scheduling queue
    kCycle,     // filtered: `feasible` answered, the node not chosen yet
    kChosen,    // `node` chosen (kube-scheduler assumed it there), its bind not started
    kInFlight,  // Assume done: the decision is being written and the binding created
    kBound,     // bound to ticket's node
    kDeleted,
  };
  std::string uid;
  Stage stage = kPending;
  std::vector<std::string> feasible;
  std::string node;
  AssumeTicket ticket;
  // The state should count ticket's decision (assumed or bound): from a successful Assume
  // until the bind fails, the decision expires or the pod is deleted.
  bool decided = false;
};

class Schedule {
 public:
  Schedule(uint64_t seed, const Scenario& sc) : seed_(seed), sc_(sc), rng_(seed) {
    StateOptions o;
    o.policy = sc.policy;
    o.filter_mode = sc.mode;
    o.narrow_tolerance = sc.tolerance;
    o.seed = seed;
    o.clock = [this] { return now_; };
    state_ = std::move(*PlacementState::Create(std::move(o)));
    for (int n = 0; n < sc.nodes; ++n) {
      const std::string name = "node-" + std::to_string(n);
      NodeInventory inv;
      for (int g = 0; g < sc.gpus; ++g) {
        inv.gpus.push_back({name + "-GPU-" + std::to_string(g),
                            g,
                            "NVIDIA H100 80GB HBM3",
                            sc.gpu_mib,
                            sc.units,
                            true,
                            0,
                            {}});
      }
      state_->UpsertNode(name, inv, sc.allocatable);
      names_.push_back(name);
    }
    pods_.resize(static_cast<size_t>(sc.pods));
    for (size_t p = 0; p < pods_.size(); ++p) pods_[p].uid = "pod-" + std::to_string(p);
    ContainerGpuRequest c;
    c.name = "main";
    c.count = 1;
    c.cores = sc.cores;
    c.memory_mib = sc.pod_mib;
    request_.containers.push_back(c);
    request_.host = sc.pod_host;
  }

  // Random steps, then kube-scheduler retries until nothing changes. Empty = every check held.
  std::string Run(int steps) {
    for (int i = 0; i < steps && failure_.empty(); ++i) {
      Step();
      Check();
    }
    if (failure_.empty()) Drain();
    return failure_;
  }

 private:
  void Fail(const std::string& why) {
    if (!failure_.empty()) return;
    // The scenario, and the last steps that led there.
    size_t from = log_.size(), lines = 0;
    while (from > 0 && lines < 60) lines += log_[--from] == '\n';
    failure_ = "seed " + std::to_string(seed_) + " step " + std::to_string(step_) + ": " + why +
               "\n  " + std::to_string(sc_.nodes) + " nodes x " + std::to_string(sc_.gpus) +
               " GPUs of " + std::to_string(sc_.gpu_mib) + " MiB, " + std::to_string(sc_.units) +
               " units, node CPU " + std::to_string(sc_.allocatable.cpu_milli) + "m; pods " +
               std::to_string(sc_.cores) + "% " + std::to_string(sc_.pod_mib) + " MiB CPU " +
               std::to_string(sc_.pod_host.cpu_milli) + "m; " +
               (sc_.mode == FilterMode::kAll ? "all" : "narrow") + " mode, tolerance " +
               std::to_string(sc_.tolerance) + ", policy " + sc_.policy + "\n" + log_.substr(from);
  }
  void Log(const std::string& line) { log_ += "  " + line + "\n"; }
  // A random pod in one of `stages`; null when there is none.
  ModelPod* Any(std::initializer_list<ModelPod::Stage> stages) {
    std::vector<size_t> at;
    for (size_t i = 0; i < pods_.size(); ++i) {
      if (std::find(stages.begin(), stages.end(), pods_[i].stage) != stages.end()) at.push_back(i);
    }
    return at.empty() ? nullptr : &pods_[at[rng_.UniformInt(at.size())]];
  }
  PodRef Ref(const ModelPod& p) const { return PodRef{p.uid, "ns", p.uid}; }

  // Pods other than `self` whose decision counts on `node`: what a bind there must respect.
  int Committed(const std::string& node, const ModelPod* self) const {
    int n = 0;
    for (const ModelPod& p : pods_)
      n += &p != self && p.decided && p.ticket.assignment.node == node;
    return n;
  }
  // kube-scheduler's own NodeResourcesFit (CPU and memory), over the pods its cache holds on a
  // node: those it chose a node for, bound or being bound.
  bool KubeFits(const std::string& node, const ModelPod& self) const {
    if (sc_.pod_host.IsZero()) return true;
    int n = 1;
    for (const ModelPod& p : pods_) {
      if (&p == &self) continue;
      const bool chosen = p.stage == ModelPod::kChosen || p.stage == ModelPod::kInFlight;
      n += (chosen && p.node == node) ||
           (p.stage == ModelPod::kBound && p.ticket.assignment.node == node);
    }
    return n * sc_.pod_host.cpu_milli <= sc_.allocatable.cpu_milli &&
           n * sc_.pod_host.memory_mib <= sc_.allocatable.memory_mib;
  }

  void Filter(ModelPod& p) {
    std::vector<std::string> nodes;  // what kube-scheduler's own filters pass
    for (const std::string& n : names_) {
      if (KubeFits(n, p)) nodes.push_back(n);
    }
    p.feasible.clear();
    if (!nodes.empty()) p.feasible = state_->Filter(request_, nodes, Ref(p)).feasible;
    Log("filter " + p.uid + " -> " + std::to_string(p.feasible.size()) + " feasible");
    p.stage = p.feasible.empty() ? ModelPod::kPending : ModelPod::kCycle;
  }

  void Choose(ModelPod& p) {
    // kube-scheduler's cycle is one step for it: its own filters see its cache as it is now.
    std::erase_if(p.feasible, [&](const std::string& n) { return !KubeFits(n, p); });
    if (p.feasible.empty()) {
      p.stage = ModelPod::kPending;
      return;
    }
    if (p.feasible.size() == 1 && rng_.UniformInt(2) == 0) {
      p.node = p.feasible[0];  // kube-scheduler does not ask about a single node
    } else {
      const std::vector<int64_t> scores = state_->Score(request_, p.feasible, Ref(p));
      // kube-scheduler's own scores may decide among the best (in all mode, among any).
      const int64_t best = *std::max_element(scores.begin(), scores.end());
      std::vector<size_t> top;
      for (size_t i = 0; i < scores.size(); ++i) {
        if (scores[i] == best || (sc_.mode == FilterMode::kAll && rng_.UniformInt(4) == 0)) {
          top.push_back(i);
        }
      }
      p.node = p.feasible[top[rng_.UniformInt(top.size())]];
    }
    Log("choose " + p.uid + " " + p.node);
    p.stage = ModelPod::kChosen;
  }

  void StartBind(ModelPod& p) {
    // The extender's bind settles an unsettled earlier decision first (extender.cc); the pod is
    // in kube-scheduler's queue, so it is not bound.
    if (auto old = state_->UnsettledElsewhere(p.uid, p.node)) {
      state_->ExpireIfUnbound(p.uid, old->generation);
      p.decided = false;
    }
    const int committed = Committed(p.node, &p);
    auto t = state_->Assume(p.uid, "ns", p.uid, request_, p.node);
    Log("assume " + p.uid + " " + p.node + (t ? " ok" : " refused: " + t.error().message()));
    if (!t) {
      if (t.error().code() == StatusCode::kResourceExhausted && committed < sc_.PerNode()) {
        Fail("bind of " + p.uid + " to " + p.node + " refused with room for " +
             std::to_string(sc_.PerNode() - committed) + " more: " + t.error().message());
      }
      p.decided = false;
      p.stage = ModelPod::kPending;  // kube-scheduler retries it after its backoff
      return;
    }
    p.ticket = *t;
    p.decided = true;
    p.stage = ModelPod::kInFlight;
  }

  void FinishBind(ModelPod& p, bool always_ok) {
    const uint64_t r = always_ok ? 0 : rng_.UniformInt(20);
    if (r < 16) {
      state_->BindSucceeded(p.uid, p.ticket.generation);
      p.stage = ModelPod::kBound;
      Log("bound " + p.uid);
    } else if (r < 18) {
      state_->BindFailed(p.uid, p.ticket.generation);
      p.decided = false;
      p.stage = ModelPod::kPending;
      Log("bind failed " + p.uid);
    } else {
      // The API server's answer was lost: the binding did or did not happen.
      state_->BindUnknown(p.uid, p.ticket.generation);
      p.stage = rng_.UniformInt(2) == 0 ? ModelPod::kBound : ModelPod::kPending;
      Log("bind unknown " + p.uid + (p.stage == ModelPod::kBound ? " (bound)" : " (not bound)"));
    }
  }

  // What the pod watch delivers for `p` now.
  PodInfo Echo(const ModelPod& p) const {
    PodInfo info;
    info.uid = p.uid;
    info.ns = "ns";
    info.name = p.uid;
    info.host = sc_.pod_host;
    info.scheduler_name = "vgpu-scheduler";
    if (p.decided) {
      info.assignment = p.ticket.assignment;
      info.assigned_at = now_;
    } else {
      info.requested = request_;
    }
    if (p.stage == ModelPod::kBound) info.node_name = p.ticket.assignment.node;
    return info;
  }

  // The service's expiry check, the model answering for the API server.
  void Expire() {
    for (const PlacementState::Expired& e : state_->ExpiredAssumptions()) {
      auto it = std::find_if(pods_.begin(), pods_.end(),
                             [&](const ModelPod& p) { return p.uid == e.uid; });
      if (it == pods_.end() || it->stage == ModelPod::kDeleted) {
        state_->RemovePod(e.uid);
      } else if (it->stage == ModelPod::kBound) {
        state_->ConfirmBound(e.uid, e.generation);
      } else if (state_->ExpireIfUnbound(e.uid, e.generation)) {
        it->decided = false;
      }
    }
  }

  void Step() {
    ++step_;
    const uint64_t op = rng_.UniformInt(100);
    ModelPod* p = nullptr;
    if (op < 30) {
      if ((p = Any({ModelPod::kPending})) != nullptr) Filter(*p);
    } else if (op < 45) {
      if ((p = Any({ModelPod::kCycle})) != nullptr) Choose(*p);
    } else if (op < 60) {
      if ((p = Any({ModelPod::kChosen})) != nullptr) StartBind(*p);
    } else if (op < 75) {
      if ((p = Any({ModelPod::kInFlight})) != nullptr) FinishBind(*p, false);
    } else if (op < 80) {
      // Something after the filter (another extender, a Permit plugin) rejects the pod.
      if ((p = Any({ModelPod::kCycle, ModelPod::kChosen})) != nullptr) {
        Log("rejected " + p->uid);
        p->stage = ModelPod::kPending;
      }
    } else if (op < 84) {
      p = Any({ModelPod::kPending, ModelPod::kCycle, ModelPod::kChosen, ModelPod::kInFlight,
               ModelPod::kBound});
      if (p != nullptr) {
        Log("delete " + p->uid);
        state_->RemovePod(p->uid);
        p->stage = ModelPod::kDeleted;
        p->decided = false;
      }
    } else if (op < 94) {
      p = Any({ModelPod::kPending, ModelPod::kCycle, ModelPod::kChosen, ModelPod::kInFlight,
               ModelPod::kBound});
      if (p != nullptr) state_->UpsertPod(Echo(*p));
    } else if (op < 97) {
      // kube-scheduler binds to another node than the filter answered (another extender's
      // choice, a nominated node): one its own filters pass.
      if ((p = Any({ModelPod::kCycle})) != nullptr) {
        std::vector<std::string> fits;
        for (const std::string& n : names_) {
          if (KubeFits(n, *p)) fits.push_back(n);
        }
        if (!fits.empty()) {
          p->node = fits[rng_.UniformInt(fits.size())];
          p->stage = ModelPod::kChosen;
          Log("bind elsewhere " + p->uid + " " + p->node);
          StartBind(*p);
        }
      }
    } else {
      now_ += std::chrono::seconds(rng_.UniformInt(150));
      Log("clock +, expiry check");
      Expire();
    }
  }

  void Check() {
    if (Status s = state_->CheckConsistency(); !s.ok()) return Fail(s.ToString());
    for (const PlacementState::GpuUsage& u : state_->Usage()) {
      if (u.pods > sc_.units || u.milli_used > 1000 || u.memory_used_mib > u.memory_mib) {
        return Fail(u.uuid + " over its units, compute or memory: " + std::to_string(u.pods) +
                    " pods, " + std::to_string(u.milli_used) + " milli, " +
                    std::to_string(u.memory_used_mib) + " MiB");
      }
    }
    // The decisions handed out, as the node daemons would apply them.
    std::vector<int> per_gpu(names_.size() * static_cast<size_t>(sc_.gpus), 0);
    std::vector<int> per_node(names_.size(), 0);
    for (const ModelPod& p : pods_) {
      if (!p.decided) continue;
      const auto node = static_cast<size_t>(
          std::find(names_.begin(), names_.end(), p.ticket.assignment.node) - names_.begin());
      if (node == names_.size()) return Fail(p.uid + " was given an unknown node");
      if (++per_node[node] > sc_.PerNode()) return Fail(names_[node] + " was given too many pods");
      for (const ContainerAssignment& c : p.ticket.assignment.containers) {
        for (const AssignedGpu& g : c.gpus) {
          if (++per_gpu[node * static_cast<size_t>(sc_.gpus) + static_cast<size_t>(g.index)] >
              sc_.PerGpu()) {
            return Fail(g.uuid + " was given too many pods");
          }
        }
      }
    }
  }

  // kube-scheduler retries every pod it has until no pod moves (what was refused or expired
  // gets its turn again); then exactly as many are bound as fit.
  void Drain() {
    Log("-- drain");
    for (ModelPod& p : pods_) {
      if (p.stage == ModelPod::kInFlight) FinishBind(p, true);
      if (p.stage == ModelPod::kCycle || p.stage == ModelPod::kChosen) p.stage = ModelPod::kPending;
    }
    for (int round = 0; round < 3 && failure_.empty(); ++round) {
      for (bool moved = true; moved && failure_.empty();) {
        moved = false;
        for (ModelPod& p : pods_) {
          if (p.stage != ModelPod::kPending || !failure_.empty()) continue;
          Filter(p);
          if (p.stage != ModelPod::kCycle) continue;
          Choose(p);
          if (p.stage != ModelPod::kChosen) continue;
          StartBind(p);
          if (p.stage == ModelPod::kInFlight) {
            FinishBind(p, true);
            moved = true;
          }
          Check();
        }
      }
      now_ += 200s;  // holds and unsettled decisions expire
      Log("clock +200 s, expiry check");
      Expire();
    }
    if (!failure_.empty()) return;
    int live = 0, bound = 0;
    for (const ModelPod& p : pods_) {
      live += p.stage != ModelPod::kDeleted;
      bound += p.stage == ModelPod::kBound;
    }
    const int fit = sc_.PerNode() * sc_.nodes;
    if (bound != std::min(live, fit)) {
      Fail(std::to_string(bound) + " bound of " + std::to_string(live) + " live pods where " +
           std::to_string(fit) + " fit");
    }
  }

  const uint64_t seed_;
  const Scenario sc_;
  Rng rng_;
  SystemClock::time_point now_ = SystemClock::time_point(std::chrono::hours(500000));
  std::unique_ptr<PlacementState> state_;
  std::vector<std::string> names_;
  std::vector<ModelPod> pods_;
  PodGpuRequest request_;
  int step_ = 0;
  std::string failure_, log_;
};

TEST(Interleavings, FortyPodsForTwoGpusAllFilteredThenBoundWhileOthersAreFiltered) {
  // The scheduling cycle filters one pod after another while the binds of earlier pods are in
  // flight: 40 pods of 10% and 3000 MiB, one node with two H100s: room for 20.
  Scenario sc;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Schedule s(seed, sc);
    EXPECT_EQ(s.Run(400), "");
  }
}

TEST(Interleavings, ExactlyAsManyBoundAsFitOverAThousandRandomSchedules) {
  int failures = 0;
  for (uint64_t seed = 1; seed <= 1000 && failures < 3; ++seed) {
    Rng rng(seed * 7919);
    const Scenario sc = RandomScenario(rng);
    Schedule s(seed, sc);
    const std::string failure = s.Run(300);
    if (!failure.empty()) {
      ++failures;
      ADD_FAILURE() << failure;
    }
  }
}

}  // namespace
}  // namespace vgpu::k8s
