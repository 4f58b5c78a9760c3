// `vgpu sim --mode replay`: the time-based replay (src/sim/replay.h) behind `vgpu sim`, and the
// input checks both modes of `vgpu sim` share.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "common/status.h"

namespace vgpu::cli {

// kInvalidArgument naming `flag` when `path` is missing, a directory, a device or unreadable.
Status InputFile(const std::string& flag, const std::string& path);
// kInvalidArgument naming `flag` when `path` ("" = not asked for) cannot be written: a directory,
// a file without write permission, or a directory that does not exist or cannot be written.
// Creates nothing, so that a run fails on its outputs before it starts, not after.
Status OutputFile(const std::string& flag, const std::string& path);
// Load errors on input files are bad input (exit 2), whatever their code.
Status AsBadInput(const Status& s);

// Flags of `vgpu sim` that both modes read. `policy_given` / `seeds_given`: the user set them
// (the replay has its own defaults: policy `default`, seed 42).
struct SimCommonFlags {
  std::string nodes, pods, policy, seeds, csv, svg;
  bool policy_given = false, seeds_given = false;
  bool json = false, quiet = false;
  int threads = 0;
  std::vector<std::string> options;
};

struct ReplayFlags {
  std::string time_compress = "1";
  std::string cluster_scale = "1";
  std::string queue = "fifo";
  std::string alloc = "shared,whole";
  std::string horizon, step;
  std::string run_time_from = "scheduled";
  bool include_pending = false;
  // A MIG table's model key ("H200"): every GPU is a mig-dynamic GPU of it, and the placement
  // rules are compared instead of the policies (cmd_sim_mig.cc, sim/mig_replay.h).
  std::string mig;
  // Topology (docs/topology.md): server shapes, GPU choices to compare, communication share.
  std::string topology;
  std::string gpu_choice = "vgpu,lowest-index,besteffort";
  double comm_share = 0.3;
  bool topology_flags_given = false;  // --gpu-choice or --comm-share was given
  // Every multi-GPU pod of the trace requires NVLink (as vgpu.io/topology: require-nvlink; the
  // trace's `topology` column says it per pod). Needs --topology.
  bool require_nvlink = false;
};

// Adds the replay-only flags to `app`; returns their names (for the mode checks).
std::vector<std::string> AddReplayFlags(CLI::App& app, ReplayFlags* f);

// Runs the replay: checks every flag (kInvalidArgument naming it), loads the trace, runs the grid,
// prints the table (or JSON) and writes the CSV and chart.
Status RunReplayMode(const SimCommonFlags& common, const ReplayFlags& f);
// The same with --mig: the MIG placement rules (--policy ours,first-fit,hami; default all three)
// at each load point and seed; prints acceptance, stranded and used slices per rule.
Status RunMigReplayMode(const SimCommonFlags& common, const ReplayFlags& f);

}  // namespace vgpu::cli
