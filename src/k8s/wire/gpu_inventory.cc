#include "k8s/wire/gpu_inventory.h"
#include "k8s/api/json_scan.h"
#include "mig/layout.h"

#include <algorithm>
#include <set>

namespace vgpu::k8s {
namespace {

Result<int64_t> IntField(const Json& o, const std::string& where, const char* key, int64_t min,
                         int64_t max, std::optional<int64_t> fallback) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) {
    if (fallback) return *fallback;
    return InvalidAt(where + "." + key, "missing");
  }
  if (!it->is_number_integer()) return InvalidAt(where + "." + key, "must be an integer");
  const int64_t v = it->get<int64_t>();
  if (v < min || v > max) {
    return InvalidAt(where + "." + key, std::to_string(v) + " is outside " + std::to_string(min) +
                                            ".." + std::to_string(max));
  }
  return v;
}

Result<std::string> StringField(const Json& o, const std::string& where, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_string() || it->get<std::string>().empty()) {
    return InvalidAt(where + "." + key, "must be a non-empty string");
  }
  return it->get<std::string>();
}

// Sorts by index and checks uniqueness of indices and UUIDs.
Status Finish(NodeInventory& inv, const std::string& prefix) {
  if (inv.gpus.size() > 64) return InvalidAt(prefix, "more than 64 GPUs");
  std::sort(inv.gpus.begin(), inv.gpus.end(),
            [](const InventoryGpu& a, const InventoryGpu& b) { return a.index < b.index; });
  std::set<std::string> uuids;
  for (size_t i = 0; i < inv.gpus.size(); ++i) {
    if (i > 0 && inv.gpus[i].index == inv.gpus[i - 1].index) {
      return InvalidAt(prefix, "GPU index " + std::to_string(inv.gpus[i].index) + " appears twice");
    }
    if (!uuids.insert(inv.gpus[i].uuid).second) {
      return InvalidAt(prefix, "GPU " + inv.gpus[i].uuid + " appears twice");
    }
  }
  return Status::Ok();
}

std::string StripNvidiaPrefix(std::string type) {
  if (type.rfind("NVIDIA-", 0) == 0) type.erase(0, 7);
  return type;
}

// Parses gpus[i].mig into gpu->mig and checks it against the model's MIG table when there is one.
Status ParseMigInstances(const Json& g, const std::string& where, InventoryGpu* gpu) {
  auto m = g.find("mig");
  if (m == g.end() || m->is_null()) return Status::Ok();
  if (!m->is_array()) return InvalidAt(where + ".mig", "must be a list");
  if (!m->empty() && gpu->mode != GpuMode::kMig && gpu->mode != GpuMode::kMigDynamic) {
    return InvalidAt(where + ".mig", "MIG instances on a GPU whose mode is \"" +
                                         std::string(GpuModeName(gpu->mode)) + "\"");
  }
  std::set<std::string> uuids;
  for (size_t k = 0; k < m->size(); ++k) {
    const Json& e = (*m)[k];
    const std::string w = where + ".mig[" + std::to_string(k) + "]";
    if (!e.is_object()) return InvalidAt(w, "must be an object");
    InventoryMigInstance inst;
    auto profile = StringField(e, w, "profile");
    if (!profile) return profile.error();
    inst.profile = *profile;
    auto start = IntField(e, w, "start", 0, mig::kMemorySlices - 1, std::nullopt);
    if (!start) return start.error();
    inst.start = static_cast<int>(*start);
    auto uuid = StringField(e, w, "uuid");
    if (!uuid) return uuid.error();
    inst.uuid = *uuid;
    if (!uuids.insert(inst.uuid).second)
      return InvalidAt(w + ".uuid", inst.uuid + " appears twice");
    auto id = IntField(e, w, "profile_id", 0, 1 << 20, -1);
    if (!id) return id.error();
    inst.profile_id = static_cast<int>(*id);
    gpu->mig.push_back(std::move(inst));
  }
  std::sort(gpu->mig.begin(), gpu->mig.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
  if (const mig::ModelTable* table = MigModelOf(*gpu).table) {
    std::vector<mig::NamedInstance> named;
    for (const auto& inst : gpu->mig) named.push_back({inst.profile, inst.start});
    auto layout = mig::LayoutFromNames(*table, named);
    if (!layout) return layout.error().WithContext(where + ".mig");
    for (size_t k = 0; k < gpu->mig.size(); ++k) {
      const mig::Profile& p = table->profiles[layout->instances[k].profile];
      if (gpu->mig[k].profile_id >= 0 && gpu->mig[k].profile_id != p.profile_id) {
        return InvalidAt(where + ".mig", "profile " + gpu->mig[k].profile + " has NVML id " +
                                             std::to_string(p.profile_id) + " on " +
                                             std::string(table->key) + ", not " +
                                             std::to_string(gpu->mig[k].profile_id));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view GpuModeName(GpuMode mode) {
  switch (mode) {
    case GpuMode::kShared:
      return "shared";
    case GpuMode::kWhole:
      return "whole";
    case GpuMode::kMig:
      return "mig";
    case GpuMode::kMigDynamic:
      return "mig-dynamic";
    case GpuMode::kMps:
      return "mps";
  }
  return "shared";
}

std::optional<GpuMode> ParseGpuMode(std::string_view name) {
  for (GpuMode m :
       {GpuMode::kShared, GpuMode::kWhole, GpuMode::kMig, GpuMode::kMigDynamic, GpuMode::kMps}) {
    if (GpuModeName(m) == name) return m;
  }
  return std::nullopt;
}

mig::ModelMatch MigModelOf(const InventoryGpu& g) {
  return mig::IdentifyModel({g.model, g.memory_mib, 0});
}

std::string FormatInventory(const NodeInventory& inv) {
  std::vector<const InventoryGpu*> gpus;
  for (const auto& g : inv.gpus) gpus.push_back(&g);
  std::sort(gpus.begin(), gpus.end(), [](auto* a, auto* b) { return a->index < b->index; });
  // Written by hand so the key order is fixed (nlohmann sorts keys alphabetically).
  std::string out = "{\"version\":" + std::to_string(kInventoryVersion) + ",\"gpus\":[";
  for (size_t i = 0; i < gpus.size(); ++i) {
    const InventoryGpu& g = *gpus[i];
    if (i > 0) out += ',';
    out += "{\"uuid\":" + Json(g.uuid).dump() + ",\"index\":" + std::to_string(g.index) +
           ",\"model\":" + Json(g.model).dump() +
           ",\"memory_mib\":" + std::to_string(g.memory_mib) +
           ",\"units\":" + std::to_string(g.units) + ",\"health\":\"" +
           (g.healthy ? "healthy" : "unhealthy") + "\",\"numa\":" + std::to_string(g.numa) +
           ",\"nvlink_peers\":" + Json(g.nvlink_peers).dump();
    if (inv.links.count(g.index) != 0) out += ",\"links\":" + Json(inv.links.at(g.index)).dump();
    // Written only when not the default, so inventories without MIG keep their text.
    if (g.mode != GpuMode::kShared) out += ",\"mode\":\"" + std::string(GpuModeName(g.mode)) + "\"";
    if (!g.mig.empty()) {
      out += ",\"mig\":[";
      for (size_t k = 0; k < g.mig.size(); ++k) {
        const InventoryMigInstance& m = g.mig[k];
        if (k > 0) out += ',';
        out += "{\"profile\":" + Json(m.profile).dump() + ",\"start\":" + std::to_string(m.start) +
               ",\"uuid\":" + Json(m.uuid).dump();
        if (m.profile_id >= 0) out += ",\"profile_id\":" + std::to_string(m.profile_id);
        out += "}";
      }
      out += "]";
    }
    out += "}";
  }
  out += "]";
  if (inv.pcie_generation > 0) {
    out += ",\"pcie\":{\"generation\":" + std::to_string(inv.pcie_generation) +
           ",\"width\":" + std::to_string(inv.pcie_width > 0 ? inv.pcie_width : 16) + "}";
  }
  out += "}";
  return out;
}

Result<NodeInventory> ParseInventory(std::string_view text) {
  if (JsonNestsDeeperThan(text)) return Status::InvalidArgument("nested too deeply");
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::InvalidArgument("not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument("must be a JSON object");
  auto version = IntField(j, "", "version", 0, 1 << 30, std::nullopt);
  if (!version) return Status::InvalidArgument("version: missing or not an integer");
  if (*version != kInventoryVersion) {
    return Status::InvalidArgument("version " + std::to_string(*version) +
                                   " is not supported (this scheduler reads version " +
                                   std::to_string(kInventoryVersion) + ")");
  }
  auto gpus = j.find("gpus");
  if (gpus == j.end() || !gpus->is_array()) return Status::InvalidArgument("gpus: must be a list");
  NodeInventory inv;
  for (size_t i = 0; i < gpus->size(); ++i) {
    const Json& g = (*gpus)[i];
    const std::string where = "gpus[" + std::to_string(i) + "]";
    if (!g.is_object()) return InvalidAt(where, "must be an object");
    InventoryGpu gpu;
    auto uuid = StringField(g, where, "uuid");
    if (!uuid) return uuid.error();
    gpu.uuid = *uuid;
    auto index = IntField(g, where, "index", 0, 63, std::nullopt);
    if (!index) return index.error();
    gpu.index = static_cast<int>(*index);
    auto model = StringField(g, where, "model");
    if (!model) return model.error();
    gpu.model = *model;
    auto mem = IntField(g, where, "memory_mib", 1, int64_t{1} << 40, std::nullopt);
    if (!mem) return InvalidAt(where + ".memory_mib", "must be a positive integer");
    gpu.memory_mib = *mem;
    auto units = IntField(g, where, "units", 1, 1000, 10);
    if (!units) return units.error();
    gpu.units = static_cast<int>(*units);
    auto numa = IntField(g, where, "numa", -1, 1 << 20, -1);
    if (!numa) return numa.error();
    gpu.numa = static_cast<int>(*numa);
    if (auto h = g.find("health"); h != g.end()) {
      if (!h->is_string() || (*h != "healthy" && *h != "unhealthy")) {
        return InvalidAt(where + ".health", "must be \"healthy\" or \"unhealthy\"");
      }
      gpu.healthy = *h == "healthy";
    }
    if (auto p = g.find("nvlink_peers"); p != g.end() && !p->is_null()) {
      if (!p->is_array()) return InvalidAt(where + ".nvlink_peers", "must be a list of UUIDs");
      for (const Json& peer : *p) {
        if (!peer.is_string()) return InvalidAt(where + ".nvlink_peers", "must be a list of UUIDs");
        gpu.nvlink_peers.push_back(peer.get<std::string>());
      }
    }
    if (auto md = g.find("mode"); md != g.end() && !md->is_null()) {
      std::optional<GpuMode> mode;
      if (md->is_string()) mode = ParseGpuMode(md->get<std::string>());
      if (!mode) {
        return InvalidAt(where + ".mode",
                         "must be \"shared\", \"whole\", \"mig\", \"mig-dynamic\" or \"mps\"");
      }
      gpu.mode = *mode;
    }
    VGPU_RETURN_IF_ERROR(ParseMigInstances(g, where, &gpu));
    if (auto l = g.find("links"); l != g.end() && !l->is_null()) {
      if (!l->is_array()) return InvalidAt(where + ".links", "must be a list of topo -m tokens");
      for (const Json& token : *l) {
        if (!token.is_string())
          return InvalidAt(where + ".links", "must be a list of topo -m tokens");
        inv.links[gpu.index].push_back(token.get<std::string>());
      }
    }
    inv.gpus.push_back(std::move(gpu));
  }
  if (auto p = j.find("pcie"); p != j.end() && !p->is_null()) {
    if (!p->is_object())
      return InvalidAt("pcie", "must be an object {\"generation\": G, \"width\": W}");
    auto generation = IntField(*p, "pcie", "generation", 1, 16, std::nullopt);
    if (!generation) return generation.error();
    auto width = IntField(*p, "pcie", "width", 1, 64, 16);
    if (!width) return width.error();
    inv.pcie_generation = static_cast<int>(*generation);
    inv.pcie_width = static_cast<int>(*width);
  }
  VGPU_RETURN_IF_ERROR(Finish(inv, "gpus"));
  return inv;
}

Result<NodeInventory> ParseHamiRegister(std::string_view text) {
  NodeInventory inv;
  inv.source = InventorySource::kHami;
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start != std::string_view::npos && text[start] == '[') {
    if (JsonNestsDeeperThan(text)) return Status::InvalidArgument("nested too deeply");
    const Json j = Json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_array()) return Status::InvalidArgument("not a JSON list");
    for (size_t i = 0; i < j.size(); ++i) {
      const Json& d = j[i];
      const std::string where = "[" + std::to_string(i) + "]";
      if (!d.is_object()) return InvalidAt(where, "must be an object");
      InventoryGpu gpu;
      auto id = StringField(d, where, "id");
      if (!id) return id.error();
      gpu.uuid = *id;
      const char* index_key = d.contains("index") ? "index" : "Index";
      auto index = IntField(d, where, index_key, 0, 63, static_cast<int64_t>(i));
      if (!index) return index.error();
      gpu.index = static_cast<int>(*index);
      auto type = StringField(d, where, "type");
      gpu.model = type ? StripNvidiaPrefix(*type) : "unknown";
      auto mem = IntField(d, where, "devmem", 1, int64_t{1} << 40, std::nullopt);
      if (!mem) return InvalidAt(where + ".devmem", "must be a positive integer");
      gpu.memory_mib = *mem;
      auto count = IntField(d, where, "count", 1, 1000, 10);
      if (!count) return count.error();
      gpu.units = static_cast<int>(*count);
      auto numa = IntField(d, where, "numa", -1, 1 << 20, -1);
      gpu.numa = numa ? static_cast<int>(*numa) : -1;
      if (auto h = d.find("health"); h != d.end() && h->is_boolean()) gpu.healthy = h->get<bool>();
      if (auto m = d.find("mode"); m != d.end() && m->is_string() && *m == "mig") {
        continue;  // MIG-mode GPUs are not shared by slices
      }
      inv.gpus.push_back(std::move(gpu));
    }
  } else {
    // Legacy: "uuid,count,mem,cores,type,numa,health[,index,mode]:" per GPU.
    size_t i = 0;
    std::string_view rest = text;
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      std::string_view seg = rest.substr(0, colon);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (seg.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;
      std::vector<std::string> f;
      size_t p = 0;
      while (true) {
        const size_t comma = seg.find(',', p);
        f.emplace_back(seg.substr(p, comma == std::string_view::npos ? comma : comma - p));
        if (comma == std::string_view::npos) break;
        p = comma + 1;
      }
      const std::string where = "entry " + std::to_string(i);
      if (f.size() < 7)
        return InvalidAt(where, "has " + std::to_string(f.size()) + " fields, want 7 or 9");
      InventoryGpu gpu;
      gpu.uuid = f[0];
      try {
        gpu.units = std::stoi(f[1]);
        gpu.memory_mib = std::stoll(f[2]);
        gpu.numa = std::stoi(f[5]);
        gpu.index = f.size() >= 8 ? std::stoi(f[7]) : static_cast<int>(i);
      } catch (const std::exception&) {
        return InvalidAt(where, "has a non-numeric count, memory, NUMA or index field");
      }
      if (gpu.uuid.empty() || gpu.memory_mib <= 0 || gpu.units <= 0 || gpu.index < 0 ||
          gpu.index > 63) {
        return InvalidAt(where, "has an empty UUID or a count, memory or index out of range");
      }
      gpu.model = StripNvidiaPrefix(f[4]);
      gpu.healthy = f[6] == "true";
      if (f.size() >= 9 && f[8] == "mig") {
        ++i;
        continue;
      }
      inv.gpus.push_back(std::move(gpu));
      ++i;
    }
  }
  VGPU_RETURN_IF_ERROR(Finish(inv, "HAMi register"));
  return inv;
}

Result<std::optional<NodeInventory>> InventoryOfNode(const Json& node) {
  const std::string name = MetaString(node, "name");
  const std::string ours = AnnotationOf(node, kInventoryAnnotation);
  if (!ours.empty()) {
    auto inv = ParseInventory(ours);
    if (!inv) {
      return inv.error().WithContext("node " + name + ": annotation " + kInventoryAnnotation);
    }
    return std::optional<NodeInventory>(std::move(*inv));
  }
  const std::string hami = AnnotationOf(node, kHamiRegisterAnnotation);
  if (!hami.empty()) {
    auto inv = ParseHamiRegister(hami);
    if (!inv) {
      return inv.error().WithContext("node " + name + ": annotation " + kHamiRegisterAnnotation);
    }
    return std::optional<NodeInventory>(std::move(*inv));
  }
  return std::optional<NodeInventory>();
}

}  // namespace vgpu::k8s
