// Copy-bandwidth settings: keys, precedence (the file wins, the environment may only lower), and
// the safe side of bad values.
#include "intercept/config/copy_config.h"

#include <gtest/gtest.h>

#include "intercept/config/config_test_util.h"

namespace vgpu::intercept {
namespace {

TEST(CopyConfig, NothingSetMeansNoPacing) {
  CombinedConfig r = Combine("", {});
  EXPECT_FALSE(r.config.copy_paced);
  EXPECT_EQ(r.config.copy_rate[0], 0u);
  EXPECT_EQ(r.config.copy_chunk_bytes, kDefaultCopyChunk);
  EXPECT_EQ(r.config.copy_burst_ns, kDefaultCopyBurstNs);
}

TEST(CopyConfig, KeysFromFileAndEnvironment) {
  CombinedConfig r = Combine("copy_h2d=10GB/s\ncopy_d2h=unlimited\ncopy_chunk=8MiB\n",
                             {"VGPU_COPY_BURST=2ms", "VGPU_COPY_BORROW=on"});
  EXPECT_EQ(r.errors.count, 0) << Errors(r.errors);
  EXPECT_TRUE(r.config.copy_paced);
  EXPECT_EQ(r.config.copy_rate[0], 10'000'000'000u);
  EXPECT_EQ(r.config.copy_rate[1], 0u);
  EXPECT_EQ(r.config.copy_chunk_bytes, 8u << 20);
  EXPECT_EQ(r.config.copy_burst_ns, 2'000'000u);
  EXPECT_TRUE(r.config.copy_borrow);
}

TEST(CopyConfig, TheEnvironmentMayOnlyLower) {
  CombinedConfig up =
      Combine("copy_h2d=1GB/s\ncopy_borrow=off\n", {"VGPU_COPY_H2D=50GB/s", "VGPU_COPY_BORROW=on"});
  EXPECT_EQ(up.config.copy_rate[0], 1'000'000'000u);
  EXPECT_FALSE(up.config.copy_borrow);
  CombinedConfig down = Combine("copy_h2d=10GB/s\n", {"VGPU_COPY_H2D=2GB/s", "VGPU_COPY_D2H=3GB"});
  EXPECT_EQ(down.config.copy_rate[0], 2'000'000'000u);
  EXPECT_EQ(down.config.copy_rate[1], 3'000'000'000u);
}

TEST(CopyConfig, BadValuesFailClosed) {
  CombinedConfig r =
      Combine("", {"VGPU_COPY_H2D=-5GB/s", "VGPU_COPY_D2H=99TB/s", "VGPU_COPY_BURST=5s",
                   "VGPU_COPY_CHUNK=1", "VGPU_COPY_BORROW=maybe"});
  EXPECT_EQ(r.errors.count, 5) << Errors(r.errors);
  EXPECT_NE(Errors(r.errors).find("VGPU_COPY_H2D: \"-5GB/s\""), std::string::npos);
  EXPECT_EQ(r.config.copy_rate[0], kMinCopyRate);
  EXPECT_EQ(r.config.copy_rate[1], kMinCopyRate);
  EXPECT_EQ(r.config.copy_burst_ns, 0u);
  EXPECT_EQ(r.config.copy_chunk_bytes, kDefaultCopyChunk);
  EXPECT_FALSE(r.config.copy_borrow);
  // A bad line rejects a file: its copies take the slowest cap.
  CombinedConfig f = Combine("copy_h2d=fast\n", {});
  EXPECT_EQ(f.config.copy_rate[0], kMinCopyRate);
  EXPECT_EQ(f.config.copy_rate[1], kMinCopyRate);
  CombinedConfig zero = Combine("", {"VGPU_COPY_H2D=0"});
  EXPECT_EQ(zero.config.copy_rate[0], kMinCopyRate);
}

}  // namespace
}  // namespace vgpu::intercept
