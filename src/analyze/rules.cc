#include "analyze/rules.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "common/csv.h"

namespace vgpu::analyze {
namespace {

// Signal name -> whether it is a GPU-level signal.
const std::map<std::string, bool>& Signals() {
  static const std::map<std::string, bool> kSignals = {
      {"util", false},              // percent of time the slice's kernels ran
      {"launches_per_s", false},    // kernel launches
      {"copy_bytes_per_s", false},  // H2D + D2H + D2D copy bytes
      {"h2d_bytes_per_s", false},
      {"d2h_bytes_per_s", false},
      {"memory_used_bytes", false},
      {"memory_limit_bytes", false},
      {"oom_refusals_per_s", false},   // allocations refused at the limit
      {"gate_wait_ratio", false},      // time held at the compute gate / wall time
      {"share_percent", false},        // the slice's compute share
      {"best_effort", false},          // 1 for a best-effort slice, 0 for a guaranteed one
      {"xid_errors", true},            // XID errors in the interval
      {"gpu_util", true},              // device utilization, percent
      {"dram_bw_util", true},          // GPM DRAM bandwidth, percent of peak
      {"nvlink_replays_per_s", true},  // NVLink DL replay counter rate
      {"slices", true},                // slices on the GPU
      // GPM NVLink traffic, all links, bytes/s
      {"nvlink_tx_bytes_per_s", true},
      {"nvlink_rx_bytes_per_s", true},
  };
  return kSignals;
}

std::string At(const std::string& source, const YAML::Mark& m) {
  return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": ";
}

Status Bad(const std::string& source, const YAML::Node& n, const std::string& what) {
  return Status::InvalidArgument(At(source, n.Mark()) + what);
}

Result<double> Number(const std::string& source, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) return Bad(source, n, key + ": a number is needed");
  const std::string& s = n.Scalar();
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    return Bad(source, n, key + ": \"" + s + "\" is not a number");
  }
  return v;
}

Status CheckKeys(const std::string& source, const YAML::Node& map,
                 std::initializer_list<const char*> allowed) {
  if (!map.IsMap()) return Bad(source, map, "a mapping is needed");
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string k = it->first.as<std::string>();
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; })) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      return Bad(source, it->first, "unknown key '" + k + "' (known: " + list + ")");
    }
  }
  return Status::Ok();
}

Result<int64_t> Duration(const std::string& source, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) return Bad(source, n, key + ": a duration is needed");
  auto d = ParseDuration(n.Scalar());
  if (!d) return Bad(source, n, key + ": " + d.error().message());
  return *d;
}

Result<Condition> ParseCondition(const std::string& source, const YAML::Node& n, bool gpu_scope) {
  VGPU_RETURN_IF_ERROR(CheckKeys(source, n, {"signal", "above", "below", "clear", "of", "over"}));
  Condition c;
  if (!n["signal"]) return Bad(source, n, "a condition needs 'signal'");
  c.signal = n["signal"].as<std::string>();
  auto it = Signals().find(c.signal);
  if (it == Signals().end()) {
    std::string list;
    for (auto& [name, g] : Signals()) list += (list.empty() ? "" : ", ") + name;
    return Bad(source, n["signal"], "unknown signal '" + c.signal + "' (known: " + list + ")");
  }
  if (it->second != gpu_scope) {
    return Bad(source, n["signal"],
               "signal '" + c.signal + "' is " + (it->second ? "per GPU" : "per slice") +
                   ", the rule's scope is " + (gpu_scope ? "gpu" : "slice"));
  }
  if (static_cast<bool>(n["above"]) == static_cast<bool>(n["below"])) {
    return Bad(source, n, "a condition needs exactly one of 'above' and 'below'");
  }
  c.above = static_cast<bool>(n["above"]);
  auto t = Number(source, c.above ? n["above"] : n["below"], c.above ? "above" : "below");
  if (!t) return t.error();
  c.threshold = c.clear = *t;
  if (n["clear"]) {
    auto cl = Number(source, n["clear"], "clear");
    if (!cl) return cl.error();
    if (c.above ? *cl > c.threshold : *cl < c.threshold) {
      return Bad(source, n["clear"],
                 std::string("clear: must be ") +
                     (c.above ? "at most 'above'" : "at least 'below'") + " (hysteresis)");
    }
    c.clear = *cl;
  }
  if (n["of"]) {
    if (gpu_scope || n["of"].as<std::string>() != "neighbour") {
      return Bad(source, n["of"], "of: only 'neighbour', and only in slice scope");
    }
    c.neighbour = true;
  }
  if (n["over"]) {
    auto w = Duration(source, n["over"], "over");
    if (!w) return w.error();
    if (*w <= 0) return Bad(source, n["over"], "over: must be positive");
    c.rate_window_ns = *w;
  }
  return c;
}

Result<Rule> ParseRule(const std::string& source, const YAML::Node& n) {
  VGPU_RETURN_IF_ERROR(CheckKeys(
      source, n, {"name", "scope", "when", "for", "clear_for", "action", "amount", "detail"}));
  Rule r;
  r.line = n.Mark().line + 1;
  if (!n["name"] || !n["name"].IsScalar() || n["name"].Scalar().empty()) {
    return Bad(source, n, "a rule needs a 'name'");
  }
  r.name = n["name"].Scalar();
  if (n["scope"]) {
    std::string s = n["scope"].as<std::string>();
    if (s != "slice" && s != "gpu") return Bad(source, n["scope"], "scope: slice or gpu");
    r.gpu_scope = s == "gpu";
  }
  if (!n["when"] || !n["when"].IsSequence() || n["when"].size() == 0) {
    return Bad(source, n, "rule '" + r.name + "' needs a non-empty 'when' list");
  }
  for (const YAML::Node& c : n["when"]) {
    auto cond = ParseCondition(source, c, r.gpu_scope);
    if (!cond) return cond.error();
    r.when.push_back(*cond);
  }
  if (n["for"]) {
    auto d = Duration(source, n["for"], "for");
    if (!d) return d.error();
    r.for_ns = *d;
  }
  r.clear_for_ns = r.for_ns;
  if (n["clear_for"]) {
    auto d = Duration(source, n["clear_for"], "clear_for");
    if (!d) return d.error();
    r.clear_for_ns = *d;
  }
  if (!n["action"]) return Bad(source, n, "rule '" + r.name + "' needs an 'action'");
  auto a = ParseActionName(n["action"].as<std::string>());
  if (!a) {
    return Bad(
        source, n["action"],
        "unknown action '" + n["action"].as<std::string>() + "' (known: " + ActionNames() + ")");
  }
  r.action = *a;
  const bool gpu_action =
      r.action == ActionType::kRecommendMig || r.action == ActionType::kQuarantineGpu;
  if (gpu_action != r.gpu_scope && r.action != ActionType::kAlert) {
    return Bad(source, n["action"],
               "action '" + std::string(ActionName(r.action)) + "' needs scope " +
                   (gpu_action ? "gpu" : "slice"));
  }
  if (n["amount"]) {
    auto v = Number(source, n["amount"], "amount");
    if (!v) return v.error();
    if (*v < 0) return Bad(source, n["amount"], "amount: must not be negative");
    r.amount = *v;
  }
  if (n["detail"]) r.detail = n["detail"].as<std::string>();
  return r;
}

}  // namespace

Result<int64_t> ParseDuration(const std::string& text) {
  if (text == "0") return int64_t{0};
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  std::string unit = text.substr(i);
  int64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + i, n);
  static const std::map<std::string, int64_t> kUnits = {
      {"ms", 1'000'000}, {"s", 1'000'000'000}, {"m", 60'000'000'000}, {"h", 3'600'000'000'000}};
  auto u = kUnits.find(unit);
  if (i == 0 || ec != std::errc() || p != text.data() + i || u == kUnits.end() ||
      n > INT64_MAX / u->second / 2) {
    return Status::InvalidArgument("\"" + text + "\" is not a duration (like 500ms, 30s, 5m, 1h)");
  }
  return n * u->second;
}

Result<RuleSet> ParseRules(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(At(source, e.mark) + e.msg);
  }
  RuleSet set;
  try {
    if (!root.IsMap())
      return Status::InvalidArgument(source + ":1:1: a mapping with 'rules' is needed");
    VGPU_RETURN_IF_ERROR(CheckKeys(source, root, {"evaluation_interval", "rules"}));
    if (root["evaluation_interval"]) {
      auto d = Duration(source, root["evaluation_interval"], "evaluation_interval");
      if (!d) return d.error();
      if (*d <= 0) return Bad(source, root["evaluation_interval"], "must be positive");
      set.interval_ns = *d;
    }
    if (!root["rules"] || !root["rules"].IsSequence()) {
      return Bad(source, root, "'rules' must be a list");
    }
    std::set<std::string> names;
    for (const YAML::Node& n : root["rules"]) {
      auto r = ParseRule(source, n);
      if (!r) return r.error();
      if (!names.insert(r->name).second) {
        return Bad(source, n["name"], "a second rule named '" + r->name + "'");
      }
      set.rules.push_back(std::move(*r));
    }
  } catch (const YAML::Exception& e) {  // a scalar where a mapping was expected, etc.
    return Status::InvalidArgument(At(source, e.mark) + e.msg);
  }
  return set;
}

Result<RuleSet> LoadRules(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseRules(ss.str(), path);
}

// --- Signals ---

void SignalStore::Add(const std::string& target, const std::string& signal, int64_t t_ns,
                      double v) {
  auto& s = data_[target][signal];
  s.push_back({t_ns, v});
  if (s.size() > 1 && s[s.size() - 2].first > t_ns) std::sort(s.begin(), s.end());
}

bool SignalStore::Latest(const std::string& target, const std::string& signal, int64_t t_ns,
                         int64_t max_age_ns, double* v) const {
  auto t = data_.find(target);
  if (t == data_.end()) return false;
  auto s = t->second.find(signal);
  if (s == t->second.end()) return false;
  auto it = std::upper_bound(s->second.begin(), s->second.end(),
                             std::pair<int64_t, double>{t_ns, INFINITY});
  if (it == s->second.begin()) return false;
  --it;
  if (t_ns - it->first > max_age_ns) return false;
  *v = it->second;
  return true;
}

bool SignalStore::RatePerHour(const std::string& target, const std::string& signal, int64_t t_ns,
                              int64_t window_ns, int64_t max_age_ns, double* rate) const {
  double now = 0, then = 0;
  auto t = data_.find(target);
  if (t == data_.end() || !Latest(target, signal, t_ns, max_age_ns, &now)) return false;
  const auto& s = t->second.at(signal);
  auto last = std::upper_bound(s.begin(), s.end(), std::pair<int64_t, double>{t_ns, INFINITY});
  int64_t t1 = std::prev(last)->first;
  auto first =
      std::lower_bound(s.begin(), s.end(), std::pair<int64_t, double>{t1 - window_ns, -INFINITY});
  if (first->first >= t1 || t1 - first->first < window_ns / 2) return false;
  then = first->second;
  *rate = (now - then) * 3.6e12 / static_cast<double>(t1 - first->first);
  return true;
}

std::vector<std::string> SignalStore::Targets() const {
  std::vector<std::string> out;
  for (auto& [t, s] : data_) out.push_back(t);
  return out;
}

bool SignalStore::Span(int64_t* first, int64_t* last) const {
  bool any = false;
  for (auto& [t, sig] : data_) {
    for (auto& [n, s] : sig) {
      if (s.empty()) continue;
      if (!any || s.front().first < *first) *first = s.front().first;
      if (!any || s.back().first > *last) *last = s.back().first;
      any = true;
    }
  }
  return any;
}

namespace {
Result<SignalStore> StoreFromTable(const CsvTable& csv) {
  int tc = csv.FindColumn("timestamp"), gc = csv.FindColumn("target"),
      sc = csv.FindColumn("signal"), vc = csv.FindColumn("value");
  if (gc < 0) gc = csv.FindColumn("slice");
  if (tc < 0 || gc < 0 || sc < 0 || vc < 0) {
    return Status::InvalidArgument(csv.source() +
                                   ":1: the header needs timestamp, target, signal and value");
  }
  SignalStore store;
  for (size_t r = 0; r < csv.num_rows(); ++r) {
    double ts = 0, v = 0;
    for (auto [col, out] : {std::pair{tc, &ts}, std::pair{vc, &v}}) {
      std::string_view f = csv.Field(r, col);
      auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), *out);
      if (f.empty() || ec != std::errc() || p != f.data() + f.size() || !std::isfinite(*out)) {
        return csv.FieldError(r, col, "\"" + std::string(f) + "\" is not a finite number");
      }
    }
    std::string target(csv.Field(r, gc)), signal(csv.Field(r, sc));
    auto it = Signals().find(signal);
    if (it == Signals().end()) return csv.FieldError(r, sc, "unknown signal '" + signal + "'");
    if (target.empty()) return csv.FieldError(r, gc, "empty target");
    if (it->second == (target.find('/') != std::string::npos)) {
      return csv.FieldError(r, gc,
                            std::string("signal '") + signal + "' is " +
                                (it->second ? "per GPU: the target is a GPU like gpu0"
                                            : "per slice: the target is gpuN/name"));
    }
    store.Add(target, signal, static_cast<int64_t>(std::llround(ts * 1e9)), v);
  }
  return store;
}

}  // namespace

Result<SignalStore> ParseSignalCsv(std::string_view text, std::string source) {
  auto t = CsvTable::Parse(text, std::move(source));
  if (!t) return t.error();
  return StoreFromTable(*t);
}

Result<SignalStore> ReadSignalCsv(const std::string& path) {
  auto t = CsvTable::Load(path);
  if (!t) return t.error();
  return StoreFromTable(*t);
}

// --- Evaluation ---

namespace {
std::string GpuOf(const std::string& target) { return target.substr(0, target.find('/')); }
}  // namespace

bool RuleEvaluator::CondHolds(const Condition& c, const std::string& target,
                              const SignalStore& store, bool firing, int64_t now) const {
  const int64_t max_age = 3 * rules_.interval_ns;
  auto one = [&](const std::string& t) {
    double v = 0;
    bool ok = c.rate_window_ns > 0
                  ? store.RatePerHour(t, c.signal, now, c.rate_window_ns, max_age, &v)
                  : store.Latest(t, c.signal, now, max_age, &v);
    if (!ok) return false;
    double th = firing ? c.clear : c.threshold;
    return c.above ? v > th : v < th;
  };
  if (!c.neighbour) return one(target);
  const std::string gpu = GpuOf(target);
  for (const std::string& t : store.Targets()) {
    if (t != target && t.find('/') != std::string::npos && GpuOf(t) == gpu && one(t)) return true;
  }
  return false;
}

bool RuleEvaluator::Holds(const Rule& r, const std::string& target, const SignalStore& store,
                          bool firing, int64_t now) const {
  for (const Condition& c : r.when) {
    if (!CondHolds(c, target, store, firing, now)) return false;
  }
  return true;
}

Action RuleEvaluator::MakeAction(const Rule& r, const std::string& target, const SignalStore& store,
                                 int64_t now) const {
  Action a{r.action, r.name, target, r.amount, r.detail, now};
  if (r.action == ActionType::kRecommendMemoryLimit) {
    // amount is a factor over the memory in use (default 1.2).
    double used = 0;
    store.Latest(target, "memory_used_bytes", now, 3 * rules_.interval_ns, &used);
    a.amount = std::ceil(used * (r.amount > 0 ? r.amount : 1.2));
  }
  return a;
}

void RuleEvaluator::Evaluate(const SignalStore& store) {
  const int64_t now = clock_->NowNanos();
  const int64_t max_age = 3 * rules_.interval_ns;
  for (const Rule& r : rules_.rules) {
    for (const std::string& target : store.Targets()) {
      if ((target.find('/') == std::string::npos) != r.gpu_scope) continue;
      if (r.action == ActionType::kLowerShare || r.action == ActionType::kRaiseShare) {
        double be = 0;
        if (!store.Latest(target, "best_effort", now, max_age, &be) || be != 1) continue;
      }
      State& s = state_[{r.name, target}];
      const bool firing = s.phase >= 2;
      const bool holds = Holds(r, target, store, firing, now);
      switch (s.phase) {
        case 0:
          if (holds) s = {1, now};
          break;
        case 1:
          if (!holds) s = {0, now};
          break;
        case 2:
          if (!holds) s = {3, now};
          break;
        case 3:
          if (holds) s = {2, now};
          break;
      }
      if (s.phase == 1 && now - s.since >= r.for_ns) {
        s = {2, now};
        ++transitions_;
        sink_->Fire(MakeAction(r, target, store, now));
      } else if (s.phase == 3 && now - s.since >= r.clear_for_ns) {
        s = {0, now};
        ++transitions_;
        sink_->Resolve(MakeAction(r, target, store, now));
      }
    }
  }
}

void DryRun(const RuleSet& rules, const SignalStore& store, ActionSink* sink) {
  int64_t first = 0, last = 0;
  if (!store.Span(&first, &last)) return;
  SimulatedClock clock(first);
  RuleEvaluator eval(rules, &clock, sink);
  for (int64_t t = first; t <= last; t += rules.interval_ns) {
    clock.AdvanceTo(t);
    eval.Evaluate(store);
  }
}

}  // namespace vgpu::analyze
