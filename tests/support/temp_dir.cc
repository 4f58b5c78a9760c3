#include "support/temp_dir.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

namespace vgpu::testing {

TempDir::TempDir(std::string_view prefix, std::string_view parent) {
  std::string base(parent);
  if (base.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    base = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  }
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (base == "/") base.clear();
  const std::string tmpl = base + "/" + std::string(prefix) + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    error_ = "cannot create a temporary directory " + tmpl + ": " + std::strerror(errno);
    return;
  }
  std::error_code ec;
  const std::filesystem::path made = std::filesystem::absolute(buf.data(), ec);
  path_ = ec ? std::string(buf.data()) : made.string();
}

TempDir::~TempDir() { Remove(); }

TempDir::TempDir(TempDir&& other) noexcept
    : path_(std::exchange(other.path_, {})),
      error_(std::exchange(other.error_, {})),
      keep_(std::exchange(other.keep_, false)) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, {});
    error_ = std::exchange(other.error_, {});
    keep_ = std::exchange(other.keep_, false);
  }
  return *this;
}

void TempDir::Remove() {
  if (path_.empty() || keep_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  path_.clear();
}

}  // namespace vgpu::testing
