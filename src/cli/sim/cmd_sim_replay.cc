// `vgpu sim --mode replay`: flags, checks and outputs of the time-based replay.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "cli/cli_util.h"
#include "cli/sim/sim_replay.h"
#include "sim/options.h"
#include "sim/progress.h"
#include "sim/replay_chart.h"
#include "sim/replay_experiment.h"
#include "sim/replay_options.h"
#include "sim/replay_report.h"
#include "sim/replay_topology_report.h"
#include "sim/report.h"
#include "sim/trace.h"

namespace vgpu::cli {

namespace fs = std::filesystem;

Status InputFile(const std::string& flag, const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return Status::InvalidArgument(flag + ": no such file: " + path);
  if (fs::is_directory(st)) return Status::InvalidArgument(flag + ": is a directory: " + path);
  if (fs::is_character_file(st) || fs::is_block_file(st)) {
    return Status::InvalidArgument(flag + ": is a device, not a file: " + path);
  }
  if (access(path.c_str(), R_OK) != 0) {
    return Status::InvalidArgument(flag + ": cannot read " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status OutputFile(const std::string& flag, const std::string& path) {
  if (path.empty()) return Status::Ok();
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) return Status::InvalidArgument(flag + ": is a directory: " + path);
  if (fs::exists(st)) {
    if (access(path.c_str(), W_OK) != 0) {
      return Status::InvalidArgument(flag + ": cannot write " + path + ": " + std::strerror(errno));
    }
    return Status::Ok();
  }
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, ec)) {
    return Status::InvalidArgument(flag + ": cannot write " + path + ": no directory " +
                                   parent.string());
  }
  if (access(parent.c_str(), W_OK | X_OK) != 0) {
    return Status::InvalidArgument(flag + ": cannot write " + path + ": directory " +
                                   parent.string() + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status AsBadInput(const Status& s) {
  if (s.ok() || s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound) {
    return s;
  }
  return Status::InvalidArgument(s.message());
}

std::vector<std::string> AddReplayFlags(CLI::App& app, ReplayFlags* f) {
  app.add_option("--time-compress", f->time_compress,
                 "Replay: divide arrival times by K (run times kept); a list sweeps loads")
      ->capture_default_str();
  app.add_option(
         "--cluster-scale", f->cluster_scale,
         "Replay: keep a fraction F in (0, 1] of the nodes (seeded sample that keeps the mix "
         "of node types); a list sweeps")
      ->capture_default_str();
  app.add_option("--queue", f->queue,
                 "Replay: queue discipline: fifo (strict arrival order) or backfill (later pods "
                 "that fit may pass); a list runs each")
      ->capture_default_str();
  app.add_option("--alloc", f->alloc,
                 "Replay: allocation modes to compare: shared (as requested), whole (GPU pods "
                 "rounded up to whole GPUs)")
      ->capture_default_str();
  app.add_option("--horizon", f->horizon,
                 "Replay: measurement window, e.g. 30d, 12h, 90m (default: the last arrival)");
  app.add_option("--step", f->step, "Replay: time-series interval (default: horizon / 400)");
  app.add_option("--run-time-from", f->run_time_from,
                 "Replay: run time = deletion_time - scheduled_time, or - creation_time")
      ->check(CLI::IsMember({"scheduled", "creation"}))
      ->capture_default_str();
  app.add_flag("--include-pending", f->include_pending,
               "Replay: also replay pods the trace never scheduled (run time = time pending)");
  app.add_option("--mig", f->mig,
                 "Replay: every GPU is a mig-dynamic GPU of this MIG model (H100-80GB, H200, "
                 "...); pods get the smallest fitting profile and --policy names placement rules "
                 "(ours, first-fit, hami; default all)");
  app.add_option("--topology", f->topology,
                 "Replay: server shapes (topology presets, comma-separated) for the nodes of their "
                 "GPU count; multi-GPU pods then run longer on worse-connected GPU sets "
                 "(docs/topology.md)");
  app.add_option("--gpu-choice", f->gpu_choice,
                 "Replay with --topology: how a multi-GPU pod's GPUs are chosen inside its node: "
                 "vgpu, lowest-index, besteffort, policy; a list runs each")
      ->capture_default_str()
      ->each([f](const std::string&) { f->topology_flags_given = true; });
  app.add_option("--comm-share", f->comm_share,
                 "Replay with --topology: share of a multi-GPU pod's run time spent "
                 "communicating on the best GPU set, in [0, 1)")
      ->capture_default_str()
      ->each([f](const std::string&) { f->topology_flags_given = true; });
  app.add_flag("--require-nvlink", f->require_nvlink,
               "Replay with --topology: every multi-GPU pod requires NVLink-connected GPUs, as "
               "the annotation vgpu.io/topology: require-nvlink (the pod list's topology column "
               "says it per pod)");
  return {"--time-compress", "--cluster-scale", "--queue",           "--alloc", "--horizon",
          "--step",          "--run-time-from", "--include-pending", "--mig",   "--topology",
          "--gpu-choice",    "--comm-share",    "--require-nvlink"};
}

namespace {

template <typename T>
Result<std::vector<T>> ParseNames(const std::string& flag, const std::string& text,
                                  Result<T> (*parse)(std::string_view)) {
  std::vector<T> out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(',', start);
    const std::string part =
        text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    auto v = parse(part);
    if (!v) return v.error().WithContext(flag);
    if (std::find(out.begin(), out.end(), *v) == out.end()) out.push_back(*v);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

Result<sim::Allocation> ParseAllocation(std::string_view name) {
  if (name == "shared") return sim::Allocation::kShared;
  if (name == "whole") return sim::Allocation::kWhole;
  return Status::InvalidArgument("unknown allocation mode '" + std::string(name) +
                                 "' (known: shared, whole)");
}

// --topology: one experiment per GPU choice, then the topology table.
Status RunTopologyReplay(const SimCommonFlags& c, std::vector<sched::NodeSpec> nodes,
                         const std::vector<sim::TimedPod>& pods, const sched::ModelRegistry* models,
                         sim::ReplayPlan plan, const std::vector<sim::GpuChoice>& choices) {
  std::vector<std::pair<sim::GpuChoice, sim::ReplayExperiment>> experiments;
  const auto start = std::chrono::steady_clock::now();
  size_t replays = 0;
  for (sim::GpuChoice choice : choices) {
    plan.topology.choice = choice;
    auto e = sim::RunReplayExperiment(nodes, pods, models, plan);
    if (!e) return AsBadInput(e.error());
    replays += e->runs.size();
    experiments.emplace_back(choice, std::move(*e));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::vector<sim::TopologyRow> rows = sim::SummarizeTopology(experiments);
  const std::string out =
      c.json ? sim::TopologyJson(rows, plan)
             : sim::FormatTopologyTable(rows, plan, fs::path(c.pods).stem().string());
  std::fputs(out.c_str(), stdout);
  if (!c.quiet) {
    std::fprintf(stderr, "vgpu sim: %zu replays in %.1f s on %d thread%s\n", replays, seconds,
                 plan.threads, plan.threads == 1 ? "" : "s");
  }
  return Status::Ok();
}

}  // namespace

Status RunReplayMode(const SimCommonFlags& c, const ReplayFlags& f) {
  if (!f.mig.empty()) return RunMigReplayMode(c, f);
  VGPU_RETURN_IF_ERROR(InputFile("--nodes", c.nodes));
  VGPU_RETURN_IF_ERROR(InputFile("--pods", c.pods));
  VGPU_RETURN_IF_ERROR(OutputFile("--csv", c.csv));
  VGPU_RETURN_IF_ERROR(OutputFile("--svg", c.svg));
  if (c.threads < 0 || c.threads > 1024) {
    return Status::InvalidArgument("--threads: must be 0 (one per core) to 1024, got " +
                                   std::to_string(c.threads));
  }
  sim::ReplayPlan plan;
  if (c.seeds_given) {
    auto seeds = sim::ParseSeedList(c.seeds);
    if (!seeds) return seeds.error().WithContext("--seeds");
    plan.seeds = *seeds;
  }
  if (c.policy_given) {
    auto policies = sim::ParsePolicyList(c.policy, sched::BuiltinPolicies());
    if (!policies) return Status::InvalidArgument("--policy: " + policies.error().message());
    plan.policies = *policies;
  }
  for (const std::string& o : c.options) {
    VGPU_RETURN_IF_ERROR(sim::ParsePolicyOption(o, &plan.params).WithContext("--option"));
  }
  auto compress = sim::ParseNumberList(f.time_compress, 0.001, 1e7);
  if (!compress) return compress.error().WithContext("--time-compress");
  auto scales = sim::ParseNumberList(f.cluster_scale, 0.0001, 1);
  if (!scales) return scales.error().WithContext("--cluster-scale");
  plan.loads.clear();
  for (double k : *compress) {
    for (double s : *scales) plan.loads.push_back(sim::LoadPoint{k, s});
  }
  auto queues = ParseNames<sim::QueueDiscipline>("--queue", f.queue, sim::ParseQueueDiscipline);
  if (!queues) return queues.error();
  plan.queues = *queues;
  auto allocs = ParseNames<sim::Allocation>("--alloc", f.alloc, ParseAllocation);
  if (!allocs) return allocs.error();
  plan.allocations = *allocs;
  if (!f.horizon.empty()) {
    auto h = sim::ParseTimeSpan(f.horizon);
    if (!h) return h.error().WithContext("--horizon");
    plan.horizon_us = *h;
  }
  if (!f.step.empty()) {
    auto s = sim::ParseTimeSpan(f.step);
    if (!s) return s.error().WithContext("--step");
    plan.step_us = *s;
    if (plan.horizon_us > 0 && plan.horizon_us / plan.step_us > 1000000) {
      return Status::InvalidArgument("--step: " + f.step +
                                     " gives more than a million samples per run");
    }
  }
  plan.run_time_from =
      f.run_time_from == "creation" ? sim::RunTimeFrom::kCreation : sim::RunTimeFrom::kScheduled;
  plan.include_pending = f.include_pending;
  plan.threads = c.threads > 0
                     ? c.threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  std::vector<sim::GpuChoice> choices;
  if (f.topology.empty() && f.topology_flags_given) {
    return Status::InvalidArgument("--gpu-choice and --comm-share need --topology");
  }
  if (f.topology.empty() && f.require_nvlink) {
    return Status::InvalidArgument(
        "--require-nvlink: needs --topology (the replay knows a node's links from its shape)");
  }
  if (!f.topology.empty()) {
    size_t start = 0;
    while (true) {
      const size_t end = f.topology.find(',', start);
      plan.topology.shapes.push_back(
          f.topology.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
    VGPU_RETURN_IF_ERROR(sim::CheckTopologyModel(plan.topology).WithContext("--topology"));
    plan.topology.comm_share = f.comm_share;
    VGPU_RETURN_IF_ERROR(sim::CheckTopologyModel(plan.topology).WithContext("--comm-share"));
    auto parsed = ParseNames<sim::GpuChoice>("--gpu-choice", f.gpu_choice, sim::ParseGpuChoice);
    if (!parsed) return parsed.error();
    choices = *parsed;
    if (!c.csv.empty() || !c.svg.empty()) {
      return Status::InvalidArgument("--csv and --svg do not apply with --topology");
    }
  }

  sched::ModelRegistry models;
  auto nodes = sim::LoadNodeList(c.nodes, &models);
  if (!nodes) return AsBadInput(nodes.error());
  auto pods = sim::LoadTimedPodList(c.pods, models);
  if (!pods) return AsBadInput(pods.error());
  const size_t pods_in_file = pods->size();
  if (f.require_nvlink) {
    for (sim::TimedPod& p : *pods) p.pod.request.require_nvlink = p.pod.request.num_gpus >= 2;
  }

  sim::ProgressBar bar("vgpu sim replay");
  if (!c.quiet && StderrIsTty()) {
    plan.on_progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
  }
  if (!choices.empty())
    return RunTopologyReplay(c, std::move(*nodes), *pods, &models, plan, choices);
  const auto start = std::chrono::steady_clock::now();
  auto e = sim::RunReplayExperiment(std::move(*nodes), *pods, &models, plan);
  bar.Finish();
  if (!e) return AsBadInput(e.error());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  sim::ReplayReportInfo info;
  info.trace = fs::path(c.pods).stem().string();
  info.pods_in_file = pods_in_file;
  info.run_time_from = f.run_time_from;
  if (!c.csv.empty()) VGPU_RETURN_IF_ERROR(sim::WriteTextFile(c.csv, sim::ReplayCsvText(*e, plan)));
  if (!c.svg.empty()) {
    VGPU_RETURN_IF_ERROR(sim::WriteTextFile(
        c.svg, sim::RenderReplayChart(*e, plan, "Shared vs whole-GPU allocation: " + info.trace)));
  }
  const std::string out =
      c.json ? sim::ReplayJson(*e, plan, info) : sim::FormatReplayTable(*e, plan, info);
  std::fputs(out.c_str(), stdout);
  if (!c.quiet) {
    double longest = 0;
    for (const sim::ReplayRun& r : e->runs) longest = std::max(longest, r.wall_s);
    std::fprintf(stderr, "vgpu sim: %zu replays in %.1f s on %d thread%s (longest %.2f s)",
                 e->runs.size(), seconds, plan.threads, plan.threads == 1 ? "" : "s", longest);
    if (!c.csv.empty()) std::fprintf(stderr, "; csv: %s", c.csv.c_str());
    if (!c.svg.empty()) std::fprintf(stderr, "; chart: %s", c.svg.c_str());
    std::fprintf(stderr, "\n");
  }
  return Status::Ok();
}

}  // namespace vgpu::cli
