#include "k8s/wire/pod_assignment.h"
#include "k8s/api/json_scan.h"
#include "k8s/wire/hami_mig.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>

namespace vgpu::k8s {
namespace {

Result<int64_t> Int(const Json& o, const std::string& where, const char* key, int64_t min,
                    int64_t max) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer())
    return InvalidAt(where + "." + key, "must be an integer");
  const int64_t v = it->get<int64_t>();
  if (v < min || v > max) {
    return InvalidAt(where + "." + key, std::to_string(v) + " is outside " + std::to_string(min) +
                                            ".." + std::to_string(max));
  }
  return v;
}

// A whole decimal integer (surrounding blanks allowed), as HAMi writes them; "12abc" is not one.
bool WholeInt(std::string_view s, int64_t* out) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return false;
  s = s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::string FormatAssignment(const PodAssignment& a) {
  Json containers = Json::array();
  for (const ContainerAssignment& c : a.containers) {
    Json gpus = Json::array();
    for (const AssignedGpu& g : c.gpus) {
      Json gj = {{"uuid", g.uuid},
                 {"index", g.index},
                 {"milli", g.milli},
                 {"memory_mib", g.memory_mib},
                 {"cores", g.cores}};
      if (g.mig) {
        Json m = {{"profile", g.mig->profile}, {"start", g.mig->start}};
        if (!g.mig->uuid.empty()) m["uuid"] = g.mig->uuid;
        gj["mig"] = std::move(m);
      }
      gpus.push_back(std::move(gj));
    }
    Json cj = {
        {"name", c.name}, {"init", c.init}, {"priority", c.priority}, {"gpus", std::move(gpus)}};
    if (c.rank_order) cj["rank_order"] = true;
    containers.push_back(std::move(cj));
  }
  const Json j = {
      {"version", kAssignmentVersion},
      {"node", a.node},
      {"reserved", {{"milli", a.reserved_milli}, {"memory_mib", a.reserved_memory_mib}}},
      {"containers", std::move(containers)}};
  return j.dump();
}

Result<PodAssignment> ParseAssignment(std::string_view text) {
  if (JsonNestsDeeperThan(text)) return Status::InvalidArgument("nested too deeply");
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("not a JSON object");
  auto version = Int(j, "", "version", 0, 1 << 30);
  if (!version) return Status::InvalidArgument("version: missing");
  if (*version != kAssignmentVersion) {
    return Status::InvalidArgument("version " + std::to_string(*version) + " is not supported");
  }
  PodAssignment a;
  if (!j.contains("node") || !j["node"].is_string()) return InvalidAt("node", "must be a string");
  a.node = j["node"].get<std::string>();
  if (!j.contains("reserved") || !j["reserved"].is_object())
    return InvalidAt("reserved", "missing");
  auto rm = Int(j["reserved"], "reserved", "milli", 0, 1000);
  if (!rm) return rm.error();
  auto rmem = Int(j["reserved"], "reserved", "memory_mib", 0, int64_t{1} << 40);
  if (!rmem) return rmem.error();
  a.reserved_milli = static_cast<int32_t>(*rm);
  a.reserved_memory_mib = *rmem;
  if (!j.contains("containers") || !j["containers"].is_array()) {
    return InvalidAt("containers", "must be a list");
  }
  for (size_t ci = 0; ci < j["containers"].size(); ++ci) {
    const Json& c = j["containers"][ci];
    const std::string where = "containers[" + std::to_string(ci) + "]";
    if (!c.is_object()) return InvalidAt(where, "must be an object");
    ContainerAssignment ca;
    if (!c.contains("name") || !c["name"].is_string()) return InvalidAt(where + ".name", "missing");
    ca.name = c["name"].get<std::string>();
    ca.init = c.contains("init") && c["init"].is_boolean() && c["init"].get<bool>();
    if (c.contains("rank_order")) {
      if (!c["rank_order"].is_boolean())
        return InvalidAt(where + ".rank_order", "must be true or false");
      ca.rank_order = c["rank_order"].get<bool>();
    }
    if (c.contains("priority")) {
      auto p = Int(c, where, "priority", -1, 1);
      if (!p) return p.error();
      ca.priority = static_cast<int>(*p);
    }
    if (!c.contains("gpus") || !c["gpus"].is_array())
      return InvalidAt(where + ".gpus", "must be a list");
    for (size_t gi = 0; gi < c["gpus"].size(); ++gi) {
      const Json& g = c["gpus"][gi];
      const std::string gw = where + ".gpus[" + std::to_string(gi) + "]";
      if (!g.is_object()) return InvalidAt(gw, "must be an object");
      AssignedGpu ag;
      if (!g.contains("uuid") || !g["uuid"].is_string()) return InvalidAt(gw + ".uuid", "missing");
      ag.uuid = g["uuid"].get<std::string>();
      auto index = Int(g, gw, "index", 0, 63);
      if (!index) return index.error();
      auto milli = Int(g, gw, "milli", 1, 1000);
      if (!milli) return milli.error();
      auto mem = Int(g, gw, "memory_mib", 0, int64_t{1} << 40);
      if (!mem) return mem.error();
      auto cores = Int(g, gw, "cores", 1, 100);
      if (!cores) return cores.error();
      ag.index = static_cast<int>(*index);
      ag.milli = static_cast<int32_t>(*milli);
      ag.memory_mib = *mem;
      ag.cores = static_cast<int>(*cores);
      if (auto m = g.find("mig"); m != g.end() && !m->is_null()) {
        const std::string mw = gw + ".mig";
        if (!m->is_object()) return InvalidAt(mw, "must be an object");
        AssignedMig am;
        auto profile = m->find("profile");
        if (profile == m->end() || !profile->is_string() || profile->get<std::string>().empty()) {
          return InvalidAt(mw + ".profile", "must be a non-empty string");
        }
        am.profile = profile->get<std::string>();
        auto start = Int(*m, mw, "start", 0, 7);
        if (!start) return start.error();
        am.start = static_cast<int>(*start);
        if (auto u = m->find("uuid"); u != m->end() && !u->is_null()) {
          if (!u->is_string() || u->get<std::string>().empty()) {
            return InvalidAt(mw + ".uuid", "must be a non-empty string");
          }
          am.uuid = u->get<std::string>();
        }
        ag.mig = std::move(am);
      }
      ca.gpus.push_back(std::move(ag));
    }
    a.containers.push_back(std::move(ca));
  }
  return a;
}

Result<PodAssignment> ParseHamiAllocation(std::string_view text, const std::string& node) {
  PodAssignment a;
  a.node = node;
  a.source = AssignmentSource::kHami;
  int ci = 0;
  while (true) {
    const size_t semi = text.find(';');
    std::string_view ctr = text.substr(0, semi);
    ContainerAssignment ca;
    ca.name = "#" + std::to_string(ci);
    while (!ctr.empty()) {
      const size_t colon = ctr.find(':');
      std::string_view dev = ctr.substr(0, colon);
      ctr = colon == std::string_view::npos ? std::string_view() : ctr.substr(colon + 1);
      if (dev.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;
      std::vector<std::string> f;
      size_t p = 0;
      while (true) {
        const size_t comma = dev.find(',', p);
        f.emplace_back(dev.substr(p, comma == std::string_view::npos ? comma : comma - p));
        if (comma == std::string_view::npos) break;
        p = comma + 1;
      }
      if (f.size() < 4) {
        return Status::InvalidArgument("container " + std::to_string(ci) + ": device '" +
                                       std::string(dev) + "' has fewer than 4 fields");
      }
      AssignedGpu g;
      g.uuid = f[0];
      int64_t cores = 0;
      if (!WholeInt(f[2], &g.memory_mib) || !WholeInt(f[3], &cores)) {
        return Status::InvalidArgument("container " + std::to_string(ci) +
                                       ": non-numeric memory or cores in '" + std::string(dev) +
                                       "'");
      }
      g.cores = cores <= 0 || cores > 100 ? 100 : static_cast<int>(cores);
      g.milli = cores <= 0 ? 1 : static_cast<int32_t>(std::min<int64_t>(cores, 100) * 10);
      if (g.uuid.empty() || g.memory_mib < 0) {
        return Status::InvalidArgument("container " + std::to_string(ci) + ": bad device '" +
                                       std::string(dev) + "'");
      }
      g.index = -1;  // resolved against the node's inventory by UUID
      ca.gpus.push_back(std::move(g));
    }
    if (!ca.gpus.empty()) a.containers.push_back(std::move(ca));
    ++ci;
    if (semi == std::string_view::npos) break;
    text.remove_prefix(semi + 1);
  }
  return a;
}

Result<std::optional<PodAssignment>> AssignmentOfPod(const Json& pod) {
  const std::string who = MetaString(pod, "namespace") + "/" + MetaString(pod, "name");
  const std::string ours = AnnotationOf(pod, kAssignedGpusAnnotation);
  if (!ours.empty()) {
    auto a = ParseAssignment(ours);
    if (!a) return a.error().WithContext("pod " + who + ": annotation " + kAssignedGpusAnnotation);
    return std::optional<PodAssignment>(std::move(*a));
  }
  const std::string hami = AnnotationOf(pod, kHamiAllocatedAnnotation);
  if (!hami.empty()) {
    std::string node = AnnotationOf(pod, kHamiNodeAnnotation);
    if (auto spec = pod.find("spec"); spec != pod.end() && spec->contains("nodeName") &&
                                      (*spec)["nodeName"].is_string() &&
                                      !(*spec)["nodeName"].get<std::string>().empty()) {
      node = (*spec)["nodeName"].get<std::string>();
    }
    auto a = ParseHamiAllocation(hami, node);
    if (!a) return a.error().WithContext("pod " + who + ": annotation " + kHamiAllocatedAnnotation);
    if (const std::string mig = AnnotationOf(pod, kHamiMigAllocationsAnnotation); !mig.empty()) {
      auto allocations = ParseHamiMigAllocations(mig);
      if (!allocations) {
        return allocations.error().WithContext("pod " + who + ": annotation " +
                                               kHamiMigAllocationsAnnotation);
      }
      ApplyHamiMigAllocations(*allocations, &*a);
    }
    if (a->containers.empty()) return std::optional<PodAssignment>();
    return std::optional<PodAssignment>(std::move(*a));
  }
  return std::optional<PodAssignment>();
}

bool AllowsSharedFaultDomain(const Json& pod) {
  return AnnotationOf(pod, kAllowSharedFaultDomainAnnotation) == "true";
}

std::string FormatTimestamp(std::chrono::system_clock::time_point t) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

Result<std::chrono::system_clock::time_point> ParseTimestamp(std::string_view text) {
  int y, mo, d, h, mi, s;
  int consumed = 0;
  const std::string str(text);
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) !=
          6 ||
      consumed != 19) {
    return Status::InvalidArgument("'" + str + "' is not an RFC 3339 time");
  }
  std::string_view rest = text.substr(19);
  int64_t millis = 0;
  if (!rest.empty() && rest[0] == '.') {
    rest.remove_prefix(1);
    int digits = 0;
    while (!rest.empty() && rest[0] >= '0' && rest[0] <= '9') {
      if (digits < 3) millis = millis * 10 + (rest[0] - '0');
      ++digits;
      rest.remove_prefix(1);
    }
    for (; digits < 3; ++digits) millis *= 10;
  }
  if (rest != "Z" && rest != "+00:00") {
    return Status::InvalidArgument("'" + str + "' is not a UTC RFC 3339 time");
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  const std::time_t secs = timegm(&tm);
  return std::chrono::system_clock::time_point(std::chrono::seconds(secs)) +
         std::chrono::milliseconds(millis);
}

}  // namespace vgpu::k8s
