#include "slice_rules.h"

#include <cctype>
#include <regex>
#include <set>
#include <stdexcept>

#include "k8s/api/quantity.h"

namespace vgpu::dra::testing {

int64_t Quantity(const json& text) {
  if (!text.is_string()) throw std::runtime_error("quantity is not a string: " + text.dump());
  auto q = k8s::ParseWholeQuantity(text.get<std::string>());
  if (!q) throw std::runtime_error("bad quantity " + text.dump());
  return *q;
}

namespace {

bool DnsLabel(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= 63 && std::regex_match(s, re);
}

bool DnsSubdomain(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return !s.empty() && s.size() <= 253 && std::regex_match(s, re);
}

bool QualifiedName(const std::string& s) {
  static const std::regex id("[A-Za-z_][A-Za-z0-9_]*");
  const size_t slash = s.find('/');
  const std::string name = slash == std::string::npos ? s : s.substr(slash + 1);
  if (slash != std::string::npos && !DnsSubdomain(s.substr(0, slash))) return false;
  return name.size() <= 32 && std::regex_match(name, id);
}

bool SemVer(const std::string& s) {
  static const std::regex re("(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)");
  return s.size() <= 64 && std::regex_match(s, re);
}

}  // namespace

std::vector<std::string> ValidateResourceSlices(const std::vector<json>& slices, int minor) {
  const bool v134 = minor <= 34;
  std::vector<std::string> bad;
  std::map<std::string, std::set<int64_t>> generations;
  std::map<std::string, std::set<int64_t>> counts;
  std::map<std::string, int> slices_in_pool;
  std::map<std::string, std::map<std::string, std::map<std::string, int64_t>>> sets;  // pool
  // Where a device finds its counter sets: the pool (1.35), its own slice (1.34).
  std::vector<std::pair<std::string, json>> consumers;  // scope, device
  for (const json& s : slices) {
    const std::string name = s["metadata"].value("name", "");
    auto fail = [&](const std::string& path, const std::string& why) {
      bad.push_back("slice " + name + ": " + path + ": " + why);
    };
    if (!DnsSubdomain(name)) fail("metadata.name", "not a DNS subdomain");
    if (s.value("apiVersion", "") != "resource.k8s.io/v1") fail("apiVersion", "not v1");
    const json& spec = s["spec"];
    if (!DnsSubdomain(spec.value("driver", "")) || spec.value("driver", "").size() > 63) {
      fail("spec.driver", "not a DNS subdomain of <=63 characters");
    }
    int selectors = 0;
    for (const char* f : {"nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection"}) {
      selectors += spec.contains(f) ? 1 : 0;
    }
    if (selectors != 1) fail("spec", "exactly one of nodeName, nodeSelector, allNodes, ...");
    const json& pool = spec["pool"];
    const std::string pool_name = pool.value("name", "");
    if (pool_name.empty() || pool_name.size() > 253) fail("spec.pool.name", "empty or too long");
    if (pool.value("generation", int64_t{-1}) < 0) fail("spec.pool.generation", "negative");
    if (pool.value("resourceSliceCount", int64_t{0}) < 1) {
      fail("spec.pool.resourceSliceCount", "must be >= 1");
    }
    generations[pool_name].insert(pool.value("generation", int64_t{-1}));
    counts[pool_name].insert(pool.value("resourceSliceCount", int64_t{0}));
    ++slices_in_pool[pool_name];
    const std::string scope = v134 ? "slice " + name : pool_name;
    const json devices = spec.value("devices", json::array());
    const json shared = spec.value("sharedCounters", json::array());
    if (!v134 && !devices.empty() && !shared.empty()) {
      fail("spec", "devices and sharedCounters together");
    }
    if (!v134 && shared.size() > 8) fail("spec.sharedCounters", "more than 8 counter sets");
    size_t shared_counters = 0;
    for (size_t i = 0; i < shared.size(); ++i) {
      const std::string p = "spec.sharedCounters[" + std::to_string(i) + "]";
      const std::string set = shared[i].value("name", "");
      if (!DnsLabel(set)) fail(p + ".name", "not a DNS label");
      if (sets[scope].count(set)) fail(p + ".name", "duplicate counter set");
      const json counters = shared[i].value("counters", json::object());
      if (counters.empty() || counters.size() > 32) fail(p + ".counters", "1..32 counters");
      shared_counters += counters.size();
      for (const auto& [c, v] : counters.items()) {
        if (!DnsLabel(c)) fail(p + ".counters." + c, "not a DNS label");
        sets[scope][set][c] = Quantity(v["value"]);
      }
    }
    if (v134 && shared_counters > 32) {
      fail("spec.sharedCounters", "more than 32 counters in all sets");
    }
    size_t consumed = 0;
    bool any_counters = false;
    std::set<std::string> names;
    for (size_t i = 0; i < devices.size(); ++i) {
      const json& d = devices[i];
      const std::string p = "spec.devices[" + std::to_string(i) + "]";
      const std::string dn = d.value("name", "");
      if (!DnsLabel(dn)) fail(p + ".name", "not a DNS label");
      if (!names.insert(dn).second) fail(p + ".name", "duplicate");
      const json attrs = d.value("attributes", json::object());
      const json capacity = d.value("capacity", json::object());
      if (attrs.size() + capacity.size() > 32) fail(p, "more than 32 attributes and capacities");
      for (const auto& [a, v] : attrs.items()) {
        if (!QualifiedName(a)) fail(p + ".attributes." + a, "not a qualified name");
        if (v.size() != 1) fail(p + ".attributes." + a, "exactly one value type");
        if (v.contains("string") && v["string"].get<std::string>().size() > 64) {
          fail(p + ".attributes." + a, "string longer than 64");
        }
        if (v.contains("version") && !SemVer(v["version"].get<std::string>())) {
          fail(p + ".attributes." + a, "not a semantic version");
        }
        if (!v.contains("string") && !v.contains("version") && !v.contains("int") &&
            !v.contains("bool")) {
          fail(p + ".attributes." + a, "unknown value type");
        }
      }
      for (const auto& [c, v] : capacity.items()) {
        const std::string cp = p + ".capacity." + c;
        if (!QualifiedName(c)) fail(cp, "not a qualified name");
        const int64_t value = Quantity(v["value"]);
        if (!v.contains("requestPolicy")) continue;
        const json& rp = v["requestPolicy"];
        if (rp.contains("validRange") == rp.contains("validValues")) {
          fail(cp + ".requestPolicy", "exactly one of validRange and validValues");
        }
        if (rp.contains("default") && Quantity(rp["default"]) > value) {
          fail(cp + ".requestPolicy.default", "above the capacity");
        }
        if (rp.contains("validRange")) {
          const json& r = rp["validRange"];
          const int64_t min = Quantity(r["min"]);
          if (min > value) fail(cp + ".requestPolicy.validRange.min", "above the capacity");
          if (r.contains("max") && (Quantity(r["max"]) < min || Quantity(r["max"]) > value)) {
            fail(cp + ".requestPolicy.validRange.max", "outside min..capacity");
          }
          if (r.contains("step") && Quantity(r["step"]) <= 0) {
            fail(cp + ".requestPolicy.validRange.step", "must be positive");
          }
        }
      }
      if (d.contains("consumesCounters")) {
        any_counters = true;
        std::set<std::string> used;
        for (const json& cc : d["consumesCounters"]) {
          if (!used.insert(cc.value("counterSet", "")).second) {
            fail(p + ".consumesCounters", "one entry per counter set");
          }
          if (cc.value("counters", json::object()).size() > 32) {
            fail(p + ".consumesCounters", "more than 32 counters");
          }
          consumed += cc.value("counters", json::object()).size();
        }
        consumers.push_back({scope, d});
      }
      if (d.contains("taints")) any_counters = true;
    }
    if (devices.size() > (any_counters && !v134 ? 64u : 128u)) {
      fail("spec.devices", "too many devices");
    }
    if (v134 && consumed > 1024) fail("spec.devices", "more than 1024 counters consumed");
  }
  for (const auto& [pool, g] : generations) {
    if (g.size() != 1) bad.push_back("pool " + pool + ": slices of different generations");
  }
  for (const auto& [pool, c] : counts) {
    if (c.size() != 1 || *c.begin() != slices_in_pool[pool]) {
      bad.push_back("pool " + pool + ": resourceSliceCount is not the number of slices");
    }
  }
  for (const auto& [scope, d] : consumers) {
    for (const json& cc : d["consumesCounters"]) {
      const std::string set = cc.value("counterSet", "");
      auto it = sets[scope].find(set);
      if (it == sets[scope].end()) {
        bad.push_back("device " + d.value("name", "") + ": no counter set " + set + " in its " +
                      (v134 ? "slice" : "pool"));
        continue;
      }
      for (const auto& [c, v] : cc["counters"].items()) {
        if (!it->second.count(c) || Quantity(v["value"]) > it->second[c]) {
          bad.push_back("device " + d.value("name", "") + ": counter " + c + " of " + set +
                        " missing or exceeded");
        }
      }
    }
  }
  return bad;
}

TestAllocator::TestAllocator(std::string driver, std::vector<json> slices)
    : driver_(std::move(driver)) {
  for (const json& s : slices) {
    const std::string pool = s["spec"]["pool"]["name"];
    for (const json& set : s["spec"].value("sharedCounters", json::array())) {
      for (const auto& [c, v] : set["counters"].items()) {
        counters_left_[pool + "/" + set["name"].get<std::string>()][c] = Quantity(v["value"]);
      }
    }
    for (const json& d : s["spec"].value("devices", json::array())) {
      Device dev;
      dev.pool = pool;
      dev.spec = d;
      const json capacity = d.value("capacity", json::object());
      for (const auto& [c, v] : capacity.items()) {
        dev.capacity[c] = Quantity(v["value"]);
      }
      devices_.push_back(std::move(dev));
    }
  }
}

bool TestAllocator::TakeCounters(Device& d, int sign, bool dry_run) {
  for (const json& cc : d.spec.value("consumesCounters", json::array())) {
    auto& left = counters_left_[d.pool + "/" + cc["counterSet"].get<std::string>()];
    for (const auto& [c, v] : cc["counters"].items()) {
      if (sign > 0 && left[c] < Quantity(v["value"])) return false;
      if (!dry_run) left[c] -= sign * Quantity(v["value"]);
    }
  }
  return true;
}

std::optional<json> TestAllocator::Allocate(const TestRequest& req, std::string* why) {
  *why = "no device matches";
  for (size_t i = 0; i < devices_.size(); ++i) {
    Device& d = devices_[i];
    const json attrs = d.spec.value("attributes", json::object());
    if (!attrs.contains(req.attribute) || attrs[req.attribute].value("string", "") != req.value) {
      continue;
    }
    bool selected = true;
    for (const auto& [name, value] : req.also) {
      selected = selected && attrs.contains(name) && attrs[name].value("string", "") == value;
    }
    if (!selected) continue;
    const bool shared = d.spec.value("allowMultipleAllocations", false);
    if (!shared && d.allocations > 0) continue;
    if (d.allocations == 0 && !TakeCounters(d, +1, true)) {
      *why = "counters of " + d.spec["name"].get<std::string>() + " exhausted";
      continue;
    }
    // Consumable capacity: every capacity of the device is consumed, the asked amount rounded
    // by its requestPolicy, else its default, else all of it.
    std::map<std::string, int64_t> consumed;
    bool fits = true;
    for (const auto& [c, total] : d.capacity) {
      const json cap = d.spec["capacity"][c];
      const json rp = cap.value("requestPolicy", json::object());
      int64_t want = rp.contains("default") ? Quantity(rp["default"]) : total;
      auto asked = req.capacity.find(c);
      if (asked != req.capacity.end()) {
        want = Quantity(json(asked->second));
        if (rp.contains("validRange")) {
          const json& r = rp["validRange"];
          const int64_t min = Quantity(r["min"]);
          if (want < min) want = min;
          if (r.contains("step")) {
            const int64_t step = Quantity(r["step"]);
            want = min + (want - min + step - 1) / step * step;
          }
          if (r.contains("max") && want > Quantity(r["max"])) {
            fits = false;
            *why = "capacity " + c + " above validRange.max";
          }
        }
      }
      if (!shared && want < total) want = total;
      if (d.used[c] + want > total) {
        fits = false;
        *why = "capacity " + c + " of " + d.spec["name"].get<std::string>() + " exhausted";
      }
      consumed[c] = want;
    }
    if (!fits) continue;
    if (d.allocations == 0) TakeCounters(d, +1, false);
    for (const auto& [c, v] : consumed) d.used[c] += v;
    ++d.allocations;
    held_[req.claim_uid] = {i, consumed};
    json result = {{"request", req.request},
                   {"driver", driver_},
                   {"pool", d.pool},
                   {"device", d.spec["name"]}};
    if (shared) {
      json cc = json::object();
      for (const auto& [c, v] : consumed) cc[c] = std::to_string(v);
      result["consumedCapacity"] = cc;
      result["shareID"] = "share-" + std::to_string(next_share_++);
    }
    return json{{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata",
                 {{"namespace", req.claim_ns}, {"name", req.claim_name}, {"uid", req.claim_uid}}},
                {"status", {{"allocation", {{"devices", {{"results", json::array({result})}}}}}}}};
  }
  return std::nullopt;
}

void TestAllocator::Release(const std::string& claim_uid) {
  auto it = held_.find(claim_uid);
  if (it == held_.end()) return;
  Device& d = devices_[it->second.device];
  for (const auto& [c, v] : it->second.consumed) d.used[c] -= v;
  if (--d.allocations == 0) TakeCounters(d, -1, false);
  held_.erase(it);
}

}  // namespace vgpu::dra::testing
