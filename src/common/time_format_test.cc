#include "common/time_format.h"

#include <gtest/gtest.h>

#include <cmath>

namespace vgpu {
namespace {

TEST(FormatUtcSeconds, WritesIso8601InUtc) {
  EXPECT_EQ(FormatUtcSeconds(0), "1970-01-01T00:00:00Z");
  // The first timestamp of data/alibaba-genai-2026/pod_gpu_duty_cycle_anon.csv.
  EXPECT_EQ(FormatUtcSeconds(1662858720.0), "2022-09-11T01:12:00Z");
  EXPECT_EQ(FormatUtcSeconds(1662858720.6), "2022-09-11T01:12:01Z");  // nearest second
  EXPECT_EQ(FormatUtcSeconds(951782400), "2000-02-29T00:00:00Z");     // a leap day
}

TEST(FormatUtcSeconds, KeepsWhatIsNoDateAsANumber) {
  EXPECT_EQ(FormatUtcSeconds(1e15), "1000000000000000");
  EXPECT_EQ(FormatUtcSeconds(NAN), "nan");
}

}  // namespace
}  // namespace vgpu
