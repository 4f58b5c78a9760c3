// Region file creation, joining and the reader's refusal of foreign or corrupted regions.
#include "shm/region.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "shm/region_file.h"
#include "support/temp_dir.h"

namespace vgpu::shm {
namespace {

RegionConfig TestConfig(uint64_t limit) {
  RegionConfig c{};
  c.device_count = 2;
  c.priority = 1;
  for (int d = 0; d < kMaxDevices; ++d) c.memory_limit[d] = kNoLimit;
  c.memory_limit[0] = limit;
  c.memory_limit[1] = limit / 2;
  c.sm_limit[0] = 30;
  return c;
}

std::vector<char> ReadAll(const std::string& path) {
  std::vector<char> data;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return data;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) data.insert(data.end(), buf, buf + n);
  std::fclose(f);
  return data;
}

void WriteAll(const std::string& path, const std::vector<char>& data) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(data.data(), 1, data.size(), f), data.size());
  std::fclose(f);
}

TEST(Region, CreateThenJoinKeepsTheCreatorsConfig) {
  vgpu::testing::TempDir dir("vgpu-shm-test");
  ASSERT_TRUE(dir.ok()) << dir.error();
  std::string path = dir.path() + "/r";
  Mapping a;
  ASSERT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1 << 20), &a), RegionError::kOk);
  EXPECT_EQ(a.region()->header.magic, kRegionMagic);
  EXPECT_EQ(a.region()->header.config.memory_limit[0], 1u << 20);
  EXPECT_EQ(a.region()->header.creator_pid, getpid());

  Mapping b;
  ASSERT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(99), &b), RegionError::kOk);
  EXPECT_EQ(b.region()->header.config.memory_limit[0], 1u << 20);  // not re-initialised
  // Both see the same memory.
  a.region()->header.device_used[3] = 1234;
  EXPECT_EQ(b.region()->header.device_used[3], 1234u);

  Mapping ro;
  ASSERT_EQ(Mapping::OpenExisting(path.c_str(), false, &ro), RegionError::kOk);
  EXPECT_FALSE(ro.writable());
  EXPECT_EQ(ro.region()->header.config.sm_limit[0], 30u);
}

TEST(Region, MissingFileIsAnIoErrorForReaders) {
  vgpu::testing::TempDir dir("vgpu-shm-test");
  ASSERT_TRUE(dir.ok()) << dir.error();
  Mapping m;
  EXPECT_EQ(Mapping::OpenExisting((dir.path() + "/nope").c_str(), false, &m), RegionError::kIo);
  EXPECT_EQ(m.saved_errno(), ENOENT);
}

TEST(Region, ForeignMajorVersionIsRefused) {
  vgpu::testing::TempDir dir("vgpu-shm-test");
  ASSERT_TRUE(dir.ok()) << dir.error();
  std::string path = dir.path() + "/r";
  {
    Mapping m;
    ASSERT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1 << 20), &m), RegionError::kOk);
  }
  std::vector<char> data = ReadAll(path);
  uint32_t major = 2;
  std::memcpy(data.data() + offsetof(RegionHeader, major), &major, 4);
  WriteAll(path, data);
  Mapping m;
  EXPECT_EQ(Mapping::OpenExisting(path.c_str(), false, &m), RegionError::kForeignVersion);
  // A joiner must not re-initialise someone else's region either.
  EXPECT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1), &m), RegionError::kForeignVersion);
  EXPECT_EQ(ReadAll(path), data);
}

TEST(Region, ForeignVersionWithAnotherSizeIsStillReportedAsForeign) {
  vgpu::testing::TempDir dir("vgpu-shm-test");
  ASSERT_TRUE(dir.ok()) << dir.error();
  std::string path = dir.path() + "/r";
  std::vector<char> data(512, 0);
  uint64_t magic = kRegionMagic;
  uint32_t major = 7;
  std::memcpy(data.data(), &magic, 8);
  std::memcpy(data.data() + 8, &major, 4);
  WriteAll(path, data);
  Mapping m;
  EXPECT_EQ(Mapping::OpenExisting(path.c_str(), false, &m), RegionError::kForeignVersion);
  EXPECT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1), &m), RegionError::kForeignVersion);
}

TEST(Region, NewerMinorVersionIsAccepted) {
  vgpu::testing::TempDir dir("vgpu-shm-test");
  ASSERT_TRUE(dir.ok()) << dir.error();
  std::string path = dir.path() + "/r";
  {
    Mapping m;
    ASSERT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1 << 20), &m), RegionError::kOk);
    m.region()->header.minor = kRegionMinor + 3;
  }
  Mapping m;
  EXPECT_EQ(Mapping::OpenExisting(path.c_str(), false, &m), RegionError::kOk);
}

TEST(Region, ParentLinkRoundTripsAndIsChecked) {
  vgpu::testing::TempDir dir("vgpu-shm-test");
  ASSERT_TRUE(dir.ok()) << dir.error();
  std::string path = dir.path() + "/r";
  {
    Mapping m;
    ASSERT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1 << 20), &m), RegionError::kOk);
    EXPECT_EQ(m.region()->header.parent[0], '\0');
    EXPECT_FALSE(SetRegionParent(m.region(), std::string(kRegionPathMax, 'x').c_str(), 0));
    ASSERT_TRUE(SetRegionParent(m.region(), "/run/vgpu/slices/outer/region", kParentCompute));
  }
  {
    Mapping m;
    ASSERT_EQ(Mapping::OpenExisting(path.c_str(), true, &m), RegionError::kOk);
    EXPECT_STREQ(m.region()->header.parent, "/run/vgpu/slices/outer/region");
    EXPECT_EQ(m.region()->header.parent_flags, kParentCompute);
    m.region()->header.parent[3] ^= 1;  // a link changed behind the checksum's back
  }
  Mapping m;
  EXPECT_EQ(Mapping::OpenExisting(path.c_str(), false, &m), RegionError::kCorrupt);
}

TEST(Region, OlderMinorWithoutParentLinkIsAccepted) {
  vgpu::testing::TempDir dir("vgpu-shm-test");
  ASSERT_TRUE(dir.ok()) << dir.error();
  std::string path = dir.path() + "/r";
  {
    Mapping m;
    ASSERT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1 << 20), &m), RegionError::kOk);
    m.region()->header.minor = 1;
    m.region()->header.parent_checksum = 0;  // minor 1 left these bytes zero
  }
  Mapping m;
  EXPECT_EQ(Mapping::OpenExisting(path.c_str(), false, &m), RegionError::kOk);
}

TEST(Region, CorruptionIsDetected) {
  vgpu::testing::TempDir dir("vgpu-shm-test");
  ASSERT_TRUE(dir.ok()) << dir.error();
  std::string path = dir.path() + "/r";
  {
    Mapping m;
    ASSERT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1 << 20), &m), RegionError::kOk);
  }
  const std::vector<char> good = ReadAll(path);
  struct Case {
    size_t offset;
    RegionError expected;
  };
  const Case cases[] = {
      {0, RegionError::kBadMagic},
      {offsetof(RegionHeader, region_size), RegionError::kBadSize},
      {offsetof(RegionHeader, max_procs), RegionError::kBadSize},
      {offsetof(RegionHeader, config) + 8, RegionError::kCorrupt},  // a limit
      {offsetof(RegionHeader, config_checksum), RegionError::kCorrupt},
  };
  for (const Case& c : cases) {
    std::vector<char> bad = good;
    bad[c.offset] ^= 0x5a;
    WriteAll(path, bad);
    Mapping m;
    EXPECT_EQ(Mapping::OpenExisting(path.c_str(), false, &m), c.expected) << "offset " << c.offset;
    EXPECT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1), &m), c.expected);
    EXPECT_EQ(ReadAll(path), bad) << "a refused region must not be modified";
  }
}

TEST(Region, TruncatedAndGarbageFilesAreRefused) {
  vgpu::testing::TempDir dir("vgpu-shm-test");
  ASSERT_TRUE(dir.ok()) << dir.error();
  std::string path = dir.path() + "/r";
  WriteAll(path, std::vector<char>(100, 'x'));
  Mapping m;
  EXPECT_EQ(Mapping::OpenExisting(path.c_str(), false, &m), RegionError::kBadMagic);
  EXPECT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1), &m), RegionError::kBadMagic);
  WriteAll(path, std::vector<char>(8, 0));
  EXPECT_EQ(Mapping::OpenExisting(path.c_str(), false, &m), RegionError::kTooSmall);
}

TEST(Region, HalfInitialisedRegionIsReinitialisedByTheNextCreator) {
  vgpu::testing::TempDir dir("vgpu-shm-test");
  ASSERT_TRUE(dir.ok()) << dir.error();
  std::string path = dir.path() + "/r";
  {
    Mapping m;
    ASSERT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1 << 20), &m), RegionError::kOk);
    m.region()->header.state = kStateInitializing;  // creator "died" before finishing
  }
  Mapping m;
  EXPECT_EQ(Mapping::OpenExisting(path.c_str(), false, &m), RegionError::kNotReady);
  ASSERT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(77), &m), RegionError::kOk);
  EXPECT_EQ(m.region()->header.config.memory_limit[0], 77u);
}

// Fuzz: random damage to a valid region never crashes the reader, and the reader accepts the
// result only if every checked field is still valid.
TEST(Region, RandomDamageNeverCrashesTheReader) {
  vgpu::testing::TempDir dir("vgpu-shm-test");
  ASSERT_TRUE(dir.ok()) << dir.error();
  std::string path = dir.path() + "/r";
  {
    Mapping m;
    ASSERT_EQ(Mapping::OpenOrCreate(path.c_str(), TestConfig(1 << 20), &m), RegionError::kOk);
  }
  const std::vector<char> good = ReadAll(path);
  std::mt19937_64 rng(42);
  int accepted = 0;
  for (int i = 0; i < 300; ++i) {
    std::vector<char> bad = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      size_t off = rng() % offsetof(RegionHeader, mutex);  // the checked part of the header
      bad[off] = static_cast<char>(rng());
    }
    size_t length = (rng() % 8 == 0) ? rng() % bad.size() : bad.size();
    bad.resize(length);
    WriteAll(path, bad);
    Mapping m;
    RegionError e = Mapping::OpenExisting(path.c_str(), false, &m);
    if (e == RegionError::kOk) {
      ++accepted;
      const RegionHeader& h = m.region()->header;
      EXPECT_EQ(h.magic, kRegionMagic);
      EXPECT_EQ(h.major, kRegionMajor);
      EXPECT_EQ(ConfigChecksum(h.config), h.config_checksum);
    }
  }
  EXPECT_LT(accepted, 300);
}

TEST(Region, ErrorTextsAreDistinct) {
  EXPECT_STRNE(RegionErrorText(RegionError::kForeignVersion),
               RegionErrorText(RegionError::kCorrupt));
  EXPECT_STREQ(RegionErrorText(RegionError::kOk), "ok");
}

}  // namespace
}  // namespace vgpu::shm
