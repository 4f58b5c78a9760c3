#include "sim/trace.h"

#include <unordered_set>

#include "common/csv.h"
#include "common/quote.h"
#include "topo/nvlink_sets.h"

namespace vgpu::sim {

using sched::kGpuMilli;
using sched::kMaxGpusPerNode;

int64_t KnownGpuMemoryMib(std::string_view model) {
  if (model == "T4" || model == "P100" || model == "V100M16") return 16384;
  if (model == "V100M32") return 32768;
  if (model == "A10") return 24576;
  return 0;
}

namespace {

Status NoRows(const CsvTable& t, std::string_view what) {
  return Status::InvalidArgument(t.source() + ": no " + std::string(what) +
                                 " (the file has only a header line)");
}

}  // namespace

Result<std::vector<sched::NodeSpec>> LoadNodeList(const std::string& path,
                                                  sched::ModelRegistry* models) {
  auto table = CsvTable::Load(path);
  if (!table) return table.error();
  const CsvTable& t = *table;
  int col[5];
  const char* names[5] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
  for (int i = 0; i < 5; ++i) {
    auto c = t.RequireColumn(names[i]);
    if (!c) return c.error();
    col[i] = *c;
  }
  const int mem_col = t.FindColumn("gpu_memory_mib");
  if (t.num_rows() == 0) return NoRows(t, "nodes");
  std::vector<sched::NodeSpec> nodes;
  nodes.reserve(t.num_rows());
  std::unordered_set<std::string> seen;
  for (size_t row = 0; row < t.num_rows(); ++row) {
    sched::NodeSpec n;
    n.name = std::string(t.Field(row, col[0]));
    if (n.name.empty()) return t.FieldError(row, col[0], "empty node name");
    if (!seen.insert(n.name).second) {
      return t.FieldError(row, col[0], "duplicate node name " + Quote(n.name));
    }
    auto cpu = t.GetInt(row, col[1], 0);
    if (!cpu) return cpu.error();
    auto mem = t.GetInt(row, col[2], 0);
    if (!mem) return mem.error();
    auto gpu = t.GetInt(row, col[3], 0, kMaxGpusPerNode);
    if (!gpu) return gpu.error();
    n.cpu_milli = *cpu;
    n.memory_mib = *mem;
    std::string_view model = t.Field(row, col[4]);
    int64_t gpu_mem = 0;
    if (mem_col >= 0) {
      auto m = t.GetIntOr(row, mem_col, 0, 0);
      if (!m) return m.error();
      gpu_mem = *m;
    }
    if (*gpu > 0) {
      if (model.empty()) return t.FieldError(row, col[4], "empty GPU model for a node with GPUs");
      auto id = models->Intern(model);
      if (!id) return t.FieldError(row, col[4], id.error().message());
      if (gpu_mem == 0) gpu_mem = KnownGpuMemoryMib(model);
      n.gpus.assign(static_cast<size_t>(*gpu), sched::GpuSpec{*id, gpu_mem});
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

Result<std::vector<TracePod>> LoadPodList(const std::string& path,
                                          const sched::ModelRegistry& models) {
  auto table = CsvTable::Load(path);
  if (!table) return table.error();
  const CsvTable& t = *table;
  int col[5];
  const char* names[5] = {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"};
  for (int i = 0; i < 5; ++i) {
    auto c = t.RequireColumn(names[i]);
    if (!c) return c.error();
    col[i] = *c;
  }
  const int spec_col = t.FindColumn("gpu_spec");
  const int topology_col = t.FindColumn("topology");
  if (t.num_rows() == 0) return NoRows(t, "pods");
  std::vector<TracePod> pods;
  pods.reserve(t.num_rows());
  for (size_t row = 0; row < t.num_rows(); ++row) {
    TracePod p;
    p.name = std::string(t.Field(row, col[0]));
    if (p.name.empty()) return t.FieldError(row, col[0], "empty pod name");
    sched::PodRequest& r = p.request;
    auto cpu = t.GetInt(row, col[1], 0);
    if (!cpu) return cpu.error();
    auto mem = t.GetInt(row, col[2], 0);
    if (!mem) return mem.error();
    auto num = t.GetInt(row, col[3], 0, kMaxGpusPerNode);
    if (!num) return num.error();
    auto milli = t.GetInt(row, col[4], 0, kGpuMilli);
    if (!milli) return milli.error();
    r.cpu_milli = *cpu;
    r.memory_mib = *mem;
    r.num_gpus = static_cast<int32_t>(*num);
    r.gpu_milli = static_cast<int32_t>(*milli);
    if ((r.num_gpus == 0) != (r.gpu_milli == 0)) {
      return t.FieldError(row, col[4],
                          Quote(t.Field(row, col[4])) + " with num_gpu " +
                              std::to_string(r.num_gpus) +
                              " (a pod with GPUs needs a share of 1..1000, a CPU-only pod 0)");
    }
    if (spec_col >= 0) {
      auto set = models.ParseSet(t.Field(row, spec_col));
      if (!set) return t.FieldError(row, spec_col, set.error().message());
      r.models = *set;
    }
    if (topology_col >= 0) {
      auto nvlink = topo::ParseTopologyAnnotation(t.Field(row, topology_col));
      if (!nvlink) return t.FieldError(row, topology_col, nvlink.error().message());
      if (*nvlink && r.num_gpus < 2) {
        return t.FieldError(
            row, topology_col,
            "require-nvlink needs 2 or more GPUs, the pod asks for " + std::to_string(r.num_gpus));
      }
      r.require_nvlink = *nvlink;
    }
    pods.push_back(std::move(p));
  }
  return pods;
}

}  // namespace vgpu::sim
