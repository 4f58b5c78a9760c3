#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

namespace vgpu::testing {
namespace {

namespace fs = std::filesystem;

// Sets or unsets TMPDIR for one test and restores it.
class ScopedTmpdir {
 public:
  explicit ScopedTmpdir(const char* value) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    if (value != nullptr) {
      setenv("TMPDIR", value, 1);
    } else {
      unsetenv("TMPDIR");
    }
  }
  ~ScopedTmpdir() {
    if (old_) {
      setenv("TMPDIR", old_->c_str(), 1);
    } else {
      unsetenv("TMPDIR");
    }
  }

 private:
  std::optional<std::string> old_;
};

TEST(TempDir, CreatesAFreshPrivateDirectoryNamedAfterItsPrefix) {
  ScopedTmpdir unset(nullptr);
  TempDir a("vgpu-tempdir-test");
  TempDir b("vgpu-tempdir-test");
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(a.error(), "");
  EXPECT_NE(a.path(), b.path());
  EXPECT_EQ(fs::path(a.path()).parent_path().string(), "/tmp");
  EXPECT_EQ(fs::path(a.path()).filename().string().rfind("vgpu-tempdir-test-", 0), 0u) << a.path();
  EXPECT_TRUE(fs::is_directory(a.path()));
  EXPECT_TRUE(fs::is_empty(a.path()));
  struct stat st {};
  ASSERT_EQ(stat(a.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(TempDir, RemovesTheWholeTreeAtTheEnd) {
  std::string path;
  {
    TempDir dir("vgpu-tempdir-test");
    ASSERT_TRUE(dir.ok()) << dir.error();
    path = dir.path();
    fs::create_directories(path + "/a/b/c");
    std::ofstream(path + "/a/b/c/file") << "x";
    std::ofstream(path + "/top") << "y";
    ASSERT_EQ(chmod((path + "/top").c_str(), 0), 0);
  }
  EXPECT_FALSE(fs::exists(path)) << path;
}

TEST(TempDir, AnAlreadyRemovedDirectoryIsNoError) {
  std::string path;
  {
    TempDir dir("vgpu-tempdir-test");
    ASSERT_TRUE(dir.ok()) << dir.error();
    path = dir.path();
    fs::remove_all(path);
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(TempDir, UsesTmpdirOrTheGivenParent) {
  TempDir parent("vgpu-tempdir-parent");
  ASSERT_TRUE(parent.ok()) << parent.error();
  {
    ScopedTmpdir set((parent.path() + "/").c_str());
    TempDir dir("under-tmpdir");
    ASSERT_TRUE(dir.ok()) << dir.error();
    EXPECT_EQ(fs::path(dir.path()).parent_path().string(), parent.path());
  }
  {
    ScopedTmpdir empty("");
    TempDir dir("vgpu-tempdir-test");
    ASSERT_TRUE(dir.ok()) << dir.error();
    EXPECT_EQ(fs::path(dir.path()).parent_path().string(), "/tmp");
  }
  TempDir given("given", parent.path());
  ASSERT_TRUE(given.ok()) << given.error();
  EXPECT_EQ(fs::path(given.path()).parent_path().string(), parent.path());
}

TEST(TempDir, ReportsADirectoryThatCannotBeCreated) {
  TempDir dir("x", "/nonexistent/vgpu-tempdir-test");
  EXPECT_FALSE(dir.ok());
  EXPECT_EQ(dir.path(), "");
  EXPECT_NE(dir.error().find("/nonexistent/vgpu-tempdir-test/x-XXXXXX"), std::string::npos)
      << dir.error();
  EXPECT_NE(dir.error().find("No such file or directory"), std::string::npos) << dir.error();
}

TEST(TempDir, MovingHandsTheDirectoryOver) {
  TempDir a("vgpu-tempdir-test");
  ASSERT_TRUE(a.ok()) << a.error();
  const std::string path = a.path();
  {
    TempDir b(std::move(a));
    EXPECT_FALSE(a.ok());  // NOLINT(bugprone-use-after-move): a moved-from TempDir owns nothing
    EXPECT_EQ(b.path(), path);
    TempDir c("vgpu-tempdir-test");
    ASSERT_TRUE(c.ok()) << c.error();
    const std::string replaced = c.path();
    c = std::move(b);
    EXPECT_FALSE(fs::exists(replaced)) << "the directory c owned before is removed";
    EXPECT_EQ(c.path(), path);
    EXPECT_TRUE(fs::is_directory(path));
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(TempDir, KeepLeavesItInPlace) {
  std::string path;
  {
    TempDir dir("vgpu-tempdir-test");
    ASSERT_TRUE(dir.ok()) << dir.error();
    path = dir.path();
    dir.Keep();
  }
  EXPECT_TRUE(fs::is_directory(path));
  fs::remove_all(path);
}

}  // namespace
}  // namespace vgpu::testing
