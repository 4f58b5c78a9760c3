// The writer and the reader of limits files agree: every key slice::LimitsFileText writes is
// read back by libvgpu's own reader (src/intercept) as the value it was given, a file with no
// optional key reads as "not set", and a comment naming anything cannot add a key.
#include <gtest/gtest.h>

#include <string>

#include "intercept/config/config.h"
#include "shm/arbiter.h"
#include "slice/limits_file.h"

namespace vgpu {
namespace {

using intercept::Setting;

intercept::SourceSettings Read(const std::string& text) {
  intercept::SourceSettings s;
  intercept::ConfigErrors errors;
  intercept::ParseLimitsFile(text.data(), text.size(), "limits", &s, &errors);
  EXPECT_EQ(errors.count, 0) << text;
  EXPECT_FALSE(s.rejected) << text;
  return s;
}

void ExpectValue(const Setting& s, uint64_t value, const char* what) {
  EXPECT_EQ(s.state, Setting::kValue) << what;
  EXPECT_EQ(s.value, value) << what;
}

TEST(LimitsFileRoundTrip, EveryKeyIsReadBackAsWritten) {
  slice::LimitsFile l;
  l.comments = {"pod a/b container c", "line two"};
  l.devices = {{"GPU-11111111-2222-3333-4444-555555555555", 3ULL << 30, 40},
               {"GPU-66666666-7777-8888-9999-000000000000", 1ULL << 30, 100}};
  l.guarantee = 20;
  l.weight = 3;
  l.mode = "elastic";
  l.priority = shm::kPriorityHigh;
  l.time_slice_ns = 2'000'000;
  l.latency_slack_ns = 250'000;
  l.copy_h2d = 10'000'000'000;
  l.copy_d2h = 5'000'000'000;
  l.copy_borrow = true;
  l.memory_mode = MemoryMode::kSpill;
  l.region = "/run/vgpu/s/region";
  l.arbiter_dir = "/run/vgpu/arbiter";
  l.context_overhead = 0;
  intercept::SourceSettings s = Read(slice::LimitsFileText(l));
  ExpectValue(s.memory[0], 3ULL << 30, "memory.0");
  ExpectValue(s.memory[1], 1ULL << 30, "memory.1");
  ExpectValue(s.sm[0], 40, "cores.0");
  EXPECT_EQ(s.sm[1].state, Setting::kUnlimited) << "cores.1=100 is no compute limit";
  EXPECT_STREQ(s.uuid[0], l.devices[0].uuid.c_str());
  EXPECT_STREQ(s.uuid[1], l.devices[1].uuid.c_str());
  ExpectValue(s.guarantee_all, 20, "guarantee");
  ExpectValue(s.weight, 3, "weight");
  ExpectValue(s.mode, shm::kModeElastic, "mode");
  ExpectValue(s.priority, shm::kPriorityHigh, "priority");
  ExpectValue(s.time_slice, 2'000'000, "time_slice");
  ExpectValue(s.latency_slack, 250'000, "latency_slack");
  ExpectValue(s.copy_rate[0], 10'000'000'000, "copy_h2d");
  ExpectValue(s.copy_rate[1], 5'000'000'000, "copy_d2h");
  ExpectValue(s.copy_borrow, 1, "copy_borrow");
  ExpectValue(s.memory_mode, intercept::kMemorySpill, "memory_mode");
  ExpectValue(s.context_overhead, 0, "context_overhead");
  EXPECT_STREQ(s.region, "/run/vgpu/s/region");
  EXPECT_STREQ(s.arbiter_dir, "/run/vgpu/arbiter");
}

TEST(LimitsFileRoundTrip, WholeSliceLimitsAndNothingOptional) {
  slice::LimitsFile l;
  l.memory = 1ULL << 30;
  l.cores = 30;
  l.region = "/tmp/x/region";
  intercept::SourceSettings s = Read(slice::LimitsFileText(l));
  ExpectValue(s.memory_all, 1ULL << 30, "memory");
  ExpectValue(s.sm_all, 30, "cores");
  ExpectValue(s.memory_mode, intercept::kMemoryStrict, "memory_mode");
  for (const Setting* unset :
       {&s.guarantee_all, &s.weight, &s.mode, &s.priority, &s.time_slice, &s.latency_slack,
        &s.copy_rate[0], &s.copy_rate[1], &s.copy_borrow, &s.context_overhead}) {
    EXPECT_EQ(unset->state, Setting::kUnset);
  }
  EXPECT_STREQ(s.arbiter_dir, "");
}

TEST(LimitsFileRoundTrip, ACommentCannotAddAKey) {
  slice::LimitsFile l;
  l.memory = 1ULL << 30;
  l.region = "/tmp/x/region";
  l.comments = {"pod x\nmemory=999999999999\ncores=100"};
  std::string text = slice::LimitsFileText(l);
  EXPECT_EQ(text.find("\nmemory=999999999999"), std::string::npos) << text;
  intercept::SourceSettings s = Read(text);
  ExpectValue(s.memory_all, 1ULL << 30, "memory");
  EXPECT_EQ(s.sm_all.state, Setting::kUnset);
}

}  // namespace
}  // namespace vgpu
