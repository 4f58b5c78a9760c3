// vgpu gc: removes the stale slices of `vgpu run`'s registry (<state>/slices, see
// slice/registry.h): slices whose `vgpu run` is gone (killed with SIGKILL, or a machine
// crash) and that no process uses any more.
//
//   vgpu gc [--dry-run] [--state-dir DIR]
//
// A slice is removed only when all of these hold:
//   - its owner (the `vgpu run` recorded in its meta file, judged by pid, start time and pid
//     namespace, so a reused pid does not count as the owner) is dead; a slice without a meta
//     file is considered only when it is older than kUnownedAgeS (it may be being created);
//   - no live process has a slot in its accounting region (slots of another pid namespace, which
//     cannot be checked, keep it);
//   - no process of this pid namespace has its region mapped (every process in which libvgpu.so
//     started has it mapped, even one that never allocated).
// Output: one line per stale slice, removed or kept with the reason. Then the per-GPU arbiters
// of the registry (<state>/arbiter, shm/arbiter.h) are swept: the records of dead processes are
// freed and slices without a live member released, so that `vgpu top` shows no slice that is
// gone (one line per arbiter that changed). Exit status 0, or 1 when a slice could not be
// removed. The node daemon's pod slices are not touched (the daemon removes them itself).
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/run/slice_members.h"
#include "common/clock.h"
#include "shm/arbiter_file.h"
#include "shm/arbiter_policy.h"
#include "shm/proc_identity.h"
#include "slice/registry.h"

namespace vgpu::cli {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kUnownedAgeS = 60;

struct StaleSlice {
  std::string dir, name;
  std::string owner;        // "pid N" or "no owner recorded"
  std::string keep_reason;  // "" when it may be removed
};

std::string PidList(const std::vector<pid_t>& pids) {
  std::string s;
  for (pid_t p : pids) s += (s.empty() ? "" : ", ") + std::to_string(p);
  return s;
}

// Whether the slice in `dir` is stale, and if so whether it can go. False: active (skipped).
bool Examine(const fs::path& dir, StaleSlice* out) {
  out->dir = dir.string();
  out->name = dir.filename().string();
  slice::SliceMeta meta = slice::ReadSliceMeta(out->dir);
  if (meta.creator_pid > 0) {
    if (slice::CreatorLiveness(meta) != shm::Liveness::kDead) return false;
    out->owner = "owner pid " + std::to_string(meta.creator_pid) + " is gone";
  } else {
    struct stat st {};
    if (stat(out->dir.c_str(), &st) != 0 || time(nullptr) - st.st_mtime < kUnownedAgeS) {
      return false;
    }
    out->owner = "no owner recorded";
  }
  const std::string region = out->dir + "/region";
  RegionMembers members = ReadRegionMembers(region, getpid());
  std::vector<pid_t> mapping = ProcessesMapping(region);
  if (!members.alive.empty()) {
    out->keep_reason = "process(es) " + PidList(members.alive) + " still hold memory in it";
  } else if (members.unknown > 0) {
    out->keep_reason = std::to_string(members.unknown) +
                       " process(es) of another pid namespace are recorded in it";
  } else if (!mapping.empty()) {
    out->keep_reason = "process(es) " + PidList(mapping) + " still use its region";
  }
  return true;
}

// Sweeps every arbiter in `dir` (SweepArbiter: dead processes freed, empty slices released) and
// prints the GPUs whose arbiter changed.
void SweepArbiters(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> paths;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".arbiter") paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  const uint64_t now = static_cast<uint64_t>(MonotonicClock::Instance().NowNanos());
  for (const fs::path& path : paths) {
    shm::ArbiterMapping m;
    if (shm::ArbiterMapping::OpenExisting(path.c_str(), true, &m) != shm::RegionError::kOk) {
      continue;  // another version or being created: its own users sweep it
    }
    if (shm::SweepArbiter(m.arbiter(), shm::CurrentProcIdentity(), now)) {
      std::printf("released the compute records of ended processes in %s\n",
                  path.filename().c_str());
    }
  }
}

}  // namespace

int RunGc(int argc, char** argv) {
  bool dry_run = false;
  std::string state_dir = slice::DefaultStateDir();
  CLI::App app(
      "Removes stale slices of vgpu run: slices whose vgpu run is gone and that no process uses "
      "any more (no live process with memory in the slice, none with its region mapped). A "
      "slice that any process still uses is kept and listed with the processes.",
      "vgpu gc");
  app.add_flag("--dry-run", dry_run, "list what would be removed; remove nothing");
  app.add_option("--state-dir", state_dir,
                 "registry of vgpu run's slices (default $VGPU_STATE_DIR, "
                 "$XDG_RUNTIME_DIR/vgpu, /run/vgpu or /tmp/vgpu-UID)");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  std::error_code ec;
  fs::path root = fs::path(state_dir) / "slices";
  std::vector<fs::path> dirs;
  if (fs::is_directory(root, ec)) {
    for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
      if (e.is_directory(ec)) dirs.push_back(e.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  int removed = 0, kept = 0, failed = 0;
  for (const fs::path& d : dirs) {
    StaleSlice s;
    if (!Examine(d, &s)) continue;
    if (!s.keep_reason.empty()) {
      std::printf("kept %s (%s): %s\n", s.name.c_str(), s.owner.c_str(), s.keep_reason.c_str());
      ++kept;
      continue;
    }
    if (dry_run) {
      std::printf("would remove %s (%s)\n", s.name.c_str(), s.owner.c_str());
      ++removed;
      continue;
    }
    fs::remove_all(d, ec);
    if (ec) {
      std::fprintf(stderr, "vgpu gc: cannot remove %s: %s\n", s.dir.c_str(), ec.message().c_str());
      ++failed;
      continue;
    }
    std::printf("removed %s (%s)\n", s.name.c_str(), s.owner.c_str());
    ++removed;
  }
  if (removed == 0 && kept == 0 && failed == 0) {
    std::printf("no stale slices in %s\n", root.c_str());
  }
  if (!dry_run) SweepArbiters(fs::path(state_dir) / "arbiter");
  return failed > 0 ? kExitFailure : kExitOk;
}

}  // namespace vgpu::cli
