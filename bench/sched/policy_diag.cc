// policy_diag: where a policy's unallocated GPUs are when the arrived workload reaches a level.
//
// Runs one policy on one trace for each seed with the simulator's protocol (PlanArrivals, one pod
// at a time) and, at the first pod whose arrival takes the arrived GPU request to `--level` % of
// capacity, prints where the free GPU milli lies:
//   cpu<2 / cpu<4 / cpu<8 : free GPU milli on nodes with fewer than 2 / 4 / 8 free cores
//   whole                 : idle GPUs on nodes with >= 8 free cores
//   partial               : free milli of partly used GPUs on nodes with >= 8 free cores
// and the pods that failed so far by class (CPU-only, sharing, 1 GPU, multi-GPU), how many of the
// failed GPU pods had enough free GPUs on some node (ignoring CPU and memory), how many failed pods
// some node would have taken but for its memory, and the cluster's
// CPU use. All sizes in GPUs (1000 milli) or cores.
//
// Usage: policy_diag --pods FILE --policy NAME [--option key=value ...] [--seeds 42-51]
//                    [--level 100] [--nodes FILE] [--shapes 1]
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/rng.h"
#include "sched/cluster.h"
#include "sched/registry.h"
#include "sched/scheduler.h"
#include "sim/options.h"
#include "sim/snapshot.h"
#include "sim/trace.h"

namespace {

using namespace vgpu;

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "policy_diag: %s\n", msg.c_str());
  std::exit(2);
}

struct Args {
  std::string nodes =
      std::string(VGPU_SOURCE_DIR) + "/data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv";
  std::string pods =
      std::string(VGPU_SOURCE_DIR) + "/data/alibaba-gpu-v2023/openb_pod_list_default.csv";
  std::string policy = "default";
  std::map<std::string, std::string> params;
  std::string seeds = "42-51";
  int level = 100;
  bool shapes = false;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) Die("flag " + flag + " needs a value");
    std::string v = argv[++i];
    if (flag == "--pods") {
      a.pods = v;
    } else if (flag == "--nodes") {
      a.nodes = v;
    } else if (flag == "--policy") {
      a.policy = v;
    } else if (flag == "--seeds") {
      a.seeds = v;
    } else if (flag == "--level") {
      a.level = std::atoi(v.c_str());
    } else if (flag == "--shapes") {
      a.shapes = v == "1";
    } else if (flag == "--option") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos) Die("--option wants key=value, got " + v);
      a.params[v.substr(0, eq)] = v.substr(eq + 1);
    } else {
      Die("unknown flag " + flag);
    }
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  sched::ModelRegistry models;
  auto nodes = sim::LoadNodeList(a.nodes, &models);
  if (!nodes) Die(nodes.error().message());
  auto pods = sim::LoadPodList(a.pods, models);
  if (!pods) Die(pods.error().message());
  std::vector<std::pair<std::string, sched::PodRequest>> named;
  for (const auto& p : *pods) named.emplace_back(p.name, p.request);
  const sim::SnapshotInput input =
      sim::MakeSnapshotInput(std::move(*nodes), std::move(named), &models, a.pods);
  auto seeds = sim::ParseSeedList(a.seeds);
  if (!seeds) Die(seeds.error().message());
  sched::PolicyArgs args;
  args.target_workload = input.target_workload;
  args.models = &models;
  args.params = a.params;
  std::printf("%5s %7s %6s %6s %6s %7s %7s | %5s %5s %5s %5s %8s %5s | %5s\n", "seed", "unalloc",
              "cpu<2", "cpu<4", "cpu<8", "whole", "partial", "f_cpu", "f_shr", "f_1g", "f_mg",
              "gpu-fit", "mem", "cpu%");
  for (uint64_t seed : *seeds) {
    auto made = sched::BuiltinPolicies().Create(a.policy, args);
    if (!made) Die(made.error().message());
    sched::Cluster cluster;
    for (const auto& n : input.nodes) (void)cluster.AddNode(n);
    Rng rng(seed);
    sim::ArrivalPlan plan = sim::PlanArrivals(input, 1.3, rng);
    auto s = sched::Scheduler::Create(&cluster, std::move(*made), plan.node_order);
    if (!s) Die(s.error().message());
    const double capacity = static_cast<double>(cluster.total_gpu_milli());
    int64_t arrived = 0;
    int failed[4] = {0, 0, 0, 0};
    // GPUs (cores for CPU-only pods) placed, by pod class and node model.
    std::map<std::string, std::map<std::string, double>> placed;
    int gpu_fit = 0;
    int mem_blocked = 0;  // failed pods that some node would take but for its memory
    bool reported = false;
    for (size_t i = 0; i < plan.pods.size(); ++i) {
      const sched::PodRequest& r = plan.pods[i];
      arrived += r.TotalGpuMilli();
      s->ObservePod(r);
      auto p = s->Schedule(r, rng);
      if (p) {
        (void)s->Reserve(i, r, *p);
        const std::string cls = r.IsCpuOnly()       ? "cpu"
                                : !r.models.IsAny() ? "spec"
                                : r.IsSharing()     ? "share"
                                                    : "whole";
        placed[cls][models.Name(cluster.gpus(p->node)[0].model)] +=
            r.IsCpuOnly() ? static_cast<double>(r.cpu_milli) / 1000.0
                          : static_cast<double>(r.TotalGpuMilli()) / 1000.0;
      } else {
        const int cls = r.IsCpuOnly() ? 0 : r.IsSharing() ? 1 : r.num_gpus == 1 ? 2 : 3;
        ++failed[cls];
        if (cls > 0) {
          sched::PodRequest gpu_only = r;
          gpu_only.cpu_milli = 0;
          gpu_only.memory_mib = 0;
          for (sched::NodeId n = 0; n < cluster.num_nodes(); ++n) {
            if (cluster.Fits(gpu_only, n)) {
              ++gpu_fit;
              break;
            }
          }
          sched::PodRequest no_mem = r;
          no_mem.memory_mib = 0;
          for (sched::NodeId n = 0; n < cluster.num_nodes(); ++n) {
            if (cluster.Fits(no_mem, n)) {
              ++mem_blocked;
              break;
            }
          }
        }
      }
      if (i + 1 == plan.pods.size()) {
        std::printf("      whole run: %zu decisions, %llu scores computed, %llu from cache\n",
                    plan.pods.size(), static_cast<unsigned long long>(s->stats().scored),
                    static_cast<unsigned long long>(s->stats().cache_hits));
      }
      if (reported || static_cast<double>(arrived) * 100.0 < capacity * a.level) continue;
      reported = true;
      double cpu2 = 0, cpu4 = 0, cpu8 = 0, whole = 0, partial = 0, cpu_used = 0, cpu_total = 0;
      std::map<std::string, double> short_by_shape;  // free GPUs on nodes with < 8 free cores
      std::map<std::string, double> free_by_model;
      for (sched::NodeId n = 0; n < cluster.num_nodes(); ++n) {
        const double free = static_cast<double>(cluster.gpu_free_milli(n)) / 1000.0;
        const int64_t cpu = cluster.cpu_free(n);
        if (free > 0) free_by_model[models.Name(cluster.gpus(n)[0].model)] += free;
        cpu_total += static_cast<double>(cluster.cpu_capacity(n));
        cpu_used += static_cast<double>(cluster.cpu_capacity(n) - cpu);
        if (cpu < 2000) cpu2 += free;
        if (cpu < 4000) cpu4 += free;
        if (cpu < 8000) {
          cpu8 += free;
          if (free > 0) {
            short_by_shape[models.Name(cluster.gpus(n)[0].model) + "x" +
                           std::to_string(cluster.num_gpus(n)) + "/" +
                           std::to_string(cluster.cpu_capacity(n) / 1000) + "c"] += free;
          }
          continue;
        }
        for (const auto& g : cluster.gpus(n)) {
          if (g.free_milli == sched::kGpuMilli) {
            whole += 1;
          } else {
            partial += g.free_milli / 1000.0;
          }
        }
      }
      const double unalloc =
          100.0 * static_cast<double>(cluster.total_gpu_milli() - cluster.allocated_gpu_milli()) /
          capacity;
      std::printf("%5llu %7.2f %6.1f %6.1f %6.1f %7.1f %7.1f | %5d %5d %5d %5d %8d %5d | %5.1f\n",
                  static_cast<unsigned long long>(seed), unalloc, cpu2, cpu4, cpu8, whole, partial,
                  failed[0], failed[1], failed[2], failed[3], gpu_fit, mem_blocked,
                  100.0 * cpu_used / cpu_total);
      if (a.shapes) {
        std::printf("      cpu<8 by node shape:");
        for (const auto& [shape, free] : short_by_shape)
          std::printf(" %s=%.1f", shape.c_str(), free);
        std::printf("\n      free by model:");
        for (const auto& [m, free] : free_by_model) std::printf(" %s=%.1f", m.c_str(), free);
        std::printf("\n");
        for (const auto& [cls, by_model] : placed) {
          std::printf("      placed %s:", cls.c_str());
          for (const auto& [m, v] : by_model) std::printf(" %s=%.0f", m.c_str(), v);
          std::printf("\n");
        }
      }
    }
  }
  return 0;
}
