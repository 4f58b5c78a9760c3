#include "slice/registry.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "shm/region_file.h"

namespace vgpu::slice {

namespace fs = std::filesystem;

namespace {

// `dir` made absolute against the working directory (as given if that is unknown).
std::string Absolute(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) return dir;
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

std::string DefaultStateDir() {
  if (const char* d = std::getenv("VGPU_STATE_DIR"); d != nullptr && d[0] != '\0') {
    return Absolute(d);
  }
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && x[0] != '\0') {
    return Absolute(std::string(x) + "/vgpu");
  }
  if (access("/run", W_OK) == 0) return "/run/vgpu";
  return "/tmp/vgpu-" + std::to_string(getuid());
}

Status WriteSliceMeta(const std::string& dir, const SliceMeta& meta) {
  SliceMeta m = meta;
  if (m.creator_pid == getpid() && m.creator_start_time == 0) {
    shm::ProcIdentity self = shm::CurrentProcIdentity();
    m.creator_start_time = self.start_time;
    m.creator_pid_ns = self.pid_ns;
  }
  std::ofstream out(dir + "/meta");
  out << "creator_pid=" << m.creator_pid << "\n";
  out << "creator_start_time=" << m.creator_start_time << "\n";
  out << "creator_pid_ns=" << m.creator_pid_ns << "\n";
  // The command on one line; newlines in arguments are written as spaces.
  std::string command = meta.command;
  std::replace(command.begin(), command.end(), '\n', ' ');
  out << "command=" << command << "\n";
  if (!out) return Status::IoError("cannot write " + dir + "/meta");
  return Status::Ok();
}

SliceMeta ReadSliceMeta(const std::string& dir) {
  SliceMeta meta;
  std::ifstream in(dir + "/meta");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("creator_pid=", 0) == 0) meta.creator_pid = std::atoi(line.c_str() + 12);
    if (line.rfind("creator_start_time=", 0) == 0) {
      meta.creator_start_time = std::strtoull(line.c_str() + 19, nullptr, 10);
    }
    if (line.rfind("creator_pid_ns=", 0) == 0) {
      meta.creator_pid_ns = std::strtoull(line.c_str() + 15, nullptr, 10);
    }
    if (line.rfind("command=", 0) == 0) meta.command = line.substr(8);
  }
  return meta;
}

shm::Liveness CreatorLiveness(const SliceMeta& meta) {
  if (meta.creator_pid <= 0) return shm::Liveness::kDead;
  shm::ProcSlot slot{};
  slot.pid = meta.creator_pid;
  slot.start_time = meta.creator_start_time;
  slot.pid_ns = meta.creator_pid_ns;
  return shm::CheckLiveness(slot, shm::CurrentProcIdentity().pid_ns);
}

std::vector<SliceEntry> ReadSlices(const std::string& state_dir) {
  std::vector<SliceEntry> slices;
  std::error_code ec;
  fs::path root = fs::path(state_dir) / "slices";
  if (!fs::is_directory(root, ec)) return slices;
  std::vector<fs::path> dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    if (e.is_directory(ec)) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& d : dirs) {
    SliceEntry s;
    s.dir = d.string();
    s.name = d.filename().string();
    SliceMeta meta = ReadSliceMeta(s.dir);
    s.command = meta.command;
    s.creator_pid = meta.creator_pid;
    s.creator_alive = CreatorLiveness(meta) != shm::Liveness::kDead;
    shm::Mapping mapping;
    shm::RegionError e = shm::Mapping::OpenExisting((s.dir + "/region").c_str(), false, &mapping);
    if (e == shm::RegionError::kOk) {
      std::memcpy(&s.region, mapping.region(), sizeof(shm::Region));
    } else {
      s.error = shm::RegionErrorText(e);
      if (e == shm::RegionError::kIo)
        s.error += std::string(": ") + std::strerror(mapping.saved_errno());
    }
    slices.push_back(std::move(s));
  }
  return slices;
}

}  // namespace vgpu::slice
