// TempDir: a fresh scratch directory for a test, removed with everything in it at the end.
// Test-only.
#pragma once

#include <string>
#include <string_view>

namespace vgpu::testing {

// Creates `<parent>/<prefix>-XXXXXX` (mkdtemp: a new directory, mode 0700, that no one else has
// been given) where `parent` is, when not given, $TMPDIR, or /tmp when that is unset or empty.
// Destroying it removes the whole tree (std::filesystem::remove_all; errors are ignored: a test
// that left a busy mount behind does not fail for it), unless Keep() was called. Movable (the
// moved-from one owns nothing), not copyable.
//
// A directory that could not be created is reported, not thrown: ok() is false, path() is "",
// and error() says which path and why; the caller fails the test, e.g.
//   TempDir dir("vgpu-foo");
//   ASSERT_TRUE(dir.ok()) << dir.error();
// A test whose paths must stay short (unix socket paths hold at most 107 bytes) passes "/tmp" as
// `parent` rather than depend on $TMPDIR.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "vgpu-test", std::string_view parent = {});
  ~TempDir();
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  // Why it could not be created; "" when ok().
  const std::string& error() const { return error_; }
  // The directory's absolute path (no trailing slash); "" when !ok().
  const std::string& path() const { return path_; }
  // Leaves the directory in place at the end (for a failed test's files to be looked at).
  void Keep() { keep_ = true; }

 private:
  void Remove();

  std::string path_;
  std::string error_;
  bool keep_ = false;
};

}  // namespace vgpu::testing
