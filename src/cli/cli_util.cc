#include "cli/cli_util.h"

#include <dlfcn.h>

#include "cli/install_paths.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

namespace vgpu::cli {

namespace {

// The options that accept an empty value (AllowEmptyValues); a process runs one command.
std::vector<const CLI::Option*>& EmptyAllowed() {
  static std::vector<const CLI::Option*> options;
  return options;
}

}  // namespace

void AllowEmptyValues(CLI::App& app, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    if (const CLI::Option* o = app.get_option_no_throw(std::string(name)); o != nullptr) {
      EmptyAllowed().push_back(o);
    }
  }
}

std::optional<int> ParseArgs(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", app.get_name().c_str(), e.what(),
                 app.get_name().c_str());
    return kExitBadInput;
  }
  for (const CLI::Option* o : app.get_options()) {
    if (!o->nonpositional() || o->get_expected_min() == 0 || o->count() == 0) continue;
    const auto& allowed = EmptyAllowed();
    if (std::find(allowed.begin(), allowed.end(), o) != allowed.end()) continue;
    for (const std::string& value : o->results()) {
      if (!value.empty()) continue;
      std::fprintf(stderr, "%s: %s: empty value\nRun '%s --help' for usage.\n",
                   app.get_name().c_str(), o->get_name().c_str(), app.get_name().c_str());
      return kExitBadInput;
    }
  }
  return std::nullopt;
}

Status BadFlag(std::string_view flag, std::string_view why) { return InvalidAt(flag, why); }

int ReportStatus(std::string_view command, const Status& status) {
  if (status.ok()) return kExitOk;
  std::fprintf(stderr, "vgpu %.*s: %s\n", static_cast<int>(command.size()), command.data(),
               status.message().c_str());
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kNotFound:
      return kExitBadInput;
    default:
      return kExitFailure;
  }
}

std::string ExecutableDir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return ".";
  return exe.parent_path().string();
}

bool RunsFromBuildTree() {
  std::error_code ec;
  return std::filesystem::exists(
      std::filesystem::path(ExecutableDir()).parent_path() / "CMakeCache.txt", ec);
}

namespace {

// The source directory of a build tree, from its CMakeCache.txt; "" when it does not say.
std::string BuildTreeSourceDir() {
  std::ifstream in(std::filesystem::path(ExecutableDir()).parent_path() / "CMakeCache.txt");
  std::string line;
  constexpr std::string_view kKey = "CMAKE_HOME_DIRECTORY:INTERNAL=";
  while (std::getline(in, line)) {
    if (line.rfind(kKey, 0) == 0) return line.substr(kKey.size());
  }
  return "";
}

std::string Normal(const std::filesystem::path& p) { return p.lexically_normal().string(); }

}  // namespace

std::string LibraryDir() {
  std::filesystem::path bin = ExecutableDir();
  if (RunsFromBuildTree()) return Normal(bin.parent_path() / "lib");
  return Normal(bin / VGPU_BIN_TO_LIBDIR);
}

std::string DataDir() {
  namespace fs = std::filesystem;
  fs::path bin = ExecutableDir();
  if (!RunsFromBuildTree()) return Normal(bin / VGPU_BIN_TO_DATADIR);
  std::string source = BuildTreeSourceDir();
  return Normal((source.empty() ? bin.parent_path().parent_path() : fs::path(source)) / "data");
}

Result<std::string> SimulatedGpuDir(std::string_view flag) {
  const std::string dir = LibraryDir() + "/simgpu";
  for (const char* lib : {"libcuda.so.1", "libnvidia-ml.so.1"}) {
    const std::string path = dir + "/" + lib;
    if (access(path.c_str(), R_OK) == 0) continue;
    std::string what(flag);
    if (RunsFromBuildTree()) {
      return Status::FailedPrecondition(
          what + ": the simulated GPU is not built (" + path +
          " is missing): it needs the CUDA toolkit's headers (cuda.h in /usr/local/cuda/include, "
          "or cmake -DVGPU_CUDA_INCLUDE_DIR=DIR), then cmake --build build");
    }
    return Status::FailedPrecondition(
        what + ": the simulated GPU is not installed (" + path +
        " is missing): it is a separate package, vgpu-simgpu (apt install ./vgpu-simgpu_*.deb), "
        "or, from a build tree, cmake --install build --prefix " +
        Normal(std::filesystem::path(ExecutableDir()).parent_path()) + " --component simgpu");
  }
  return dir;
}

Result<Libraries> FindLibraries(bool sim, const std::string& who) {
  (void)who;
  Libraries l;
  std::string lib_dir = LibraryDir();
  l.libvgpu = lib_dir + "/libvgpu.so";
  if (access(l.libvgpu.c_str(), R_OK) != 0) {
    return Status::FailedPrecondition(
        l.libvgpu + " not found (" +
        (RunsFromBuildTree() ? "build it: cmake --build build"
                             : "the vgpu installation is incomplete: reinstall the vgpu package") +
        ")");
  }
  if (sim) {
    Result<std::string> dir = SimulatedGpuDir("--sim");
    if (!dir.has_value()) return dir.error();
    l.simgpu_dir = *dir;
  }
  return l;
}

Status UseSimConfig(bool sim, const std::string& path) {
  if (path.empty()) return Status::Ok();
  if (!sim) return Status::InvalidArgument("--sim-config: needs --sim");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::InvalidArgument(
        "--sim-config: " +
        std::string(std::filesystem::exists(path, ec) ? "not a regular file: " : "no such file: ") +
        path);
  }
  setenv("VGPU_SIMGPU_CONFIG", path.c_str(), 1);
  return Status::Ok();
}

std::string NoDriverHint(bool sim) {
  if (sim) return "";
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (nvml == nullptr) nvml = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (nvml != nullptr) {
    dlclose(nvml);
    return "";
  }
  return " (no NVIDIA driver found; --sim runs on the simulated GPU)";
}

bool StderrIsTty() { return isatty(2) == 1; }

}  // namespace vgpu::cli
