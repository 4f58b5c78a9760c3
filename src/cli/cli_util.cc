#include "cli/cli_util.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace vgpu::cli {

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
  return std::nullopt;
}

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

std::string LibraryDir() {
  return (std::filesystem::path(ExecutableDir()).parent_path() / "lib").string();
}

std::string DataDir() {
  namespace fs = std::filesystem;
  fs::path bin = ExecutableDir();
  for (fs::path candidate :
       {bin.parent_path().parent_path(), bin.parent_path(), bin.parent_path() / "share" / "vgpu"}) {
    std::error_code ec;
    if (fs::is_directory(candidate / "data", ec)) return (candidate / "data").string();
  }
  return "data";
}

bool StderrIsTty() { return isatty(2) == 1; }

}  // namespace vgpu::cli
