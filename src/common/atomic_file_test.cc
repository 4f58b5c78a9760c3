#include "common/atomic_file.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "support/temp_dir.h"

namespace vgpu {
namespace {

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
  }
  std::string Read(const std::string& path) const {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  int Entries() const {
    DIR* d = opendir(dir_.c_str());
    int n = 0;
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.' || std::string(e->d_name).size() > 2;
    closedir(d);
    return n;
  }
  vgpu::testing::TempDir tmp_{"vgpu-atomic-file"};
  std::string dir_;
};

TEST_F(AtomicFileTest, WritesTheWholeTextWithTheModeAndLeavesNoTemporaryFile) {
  const std::string path = dir_ + "/limits";
  ASSERT_TRUE(WriteFileAtomically(path, "memory=1GiB\n", 0444).ok());
  EXPECT_EQ(Read(path), "memory=1GiB\n");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0444u);
  // Replacing a read-only file works (rename, not open for writing) and keeps one entry.
  ASSERT_TRUE(WriteFileAtomically(path, "memory=2GiB\n", 0444).ok());
  EXPECT_EQ(Read(path), "memory=2GiB\n");
  EXPECT_EQ(Entries(), 1);
}

TEST_F(AtomicFileTest, AFailureLeavesTheOldFileAndNoTemporaryFile) {
  const std::string path = dir_ + "/limits";
  ASSERT_TRUE(WriteFileAtomically(path, "old\n", 0644).ok());
  // A directory in the way of the rename.
  const std::string blocked = dir_ + "/blocked";
  ASSERT_EQ(mkdir(blocked.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((blocked + "/x").c_str(), 0755), 0);
  Status st = WriteFileAtomically(blocked, "new\n", 0644);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find(blocked), std::string::npos) << st.ToString();
  EXPECT_EQ(Read(path), "old\n");
  EXPECT_EQ(Entries(), 2);  // limits and blocked, no temporary file
  // A missing directory.
  Status missing = WriteFileAtomically(dir_ + "/no/such/file", "x", 0644);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.ToString().find("cannot create"), std::string::npos) << missing.ToString();
}

}  // namespace
}  // namespace vgpu
