#include "device/fake_backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "device/injecting_backend.h"

namespace vgpu::device {
namespace {

TEST(FakeBackendTest, DiscoversWhatWasAdded) {
  FakeBackend fake;
  fake.AddDefaultDevices(3, 40ULL << 30);
  auto devices = fake.Discover();
  ASSERT_TRUE(devices.has_value());
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[2].index, 2);
  EXPECT_EQ((*devices)[1].memory_total_bytes, 40ULL << 30);
  EXPECT_NE((*devices)[0].uuid, (*devices)[1].uuid);
  EXPECT_EQ((*devices)[0].uuid.substr(0, 4), "GPU-");
}

TEST(FakeBackendTest, SamplesFollowTheScript) {
  FakeBackend fake;
  fake.AddDefaultDevices(2);
  fake.SetUtilization(1, 0.5, 0.25);
  fake.SetMemoryUsed(1, 123);
  fake.SetProcesses(1, {{42, 100, 0.5}});
  auto s = fake.Sample(1);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(*s->sm_utilization, 0.5);
  EXPECT_DOUBLE_EQ(*s->memory_bandwidth_utilization, 0.25);
  EXPECT_EQ(s->memory_used_bytes, 123u);
  ASSERT_EQ(s->processes.size(), 1u);
  EXPECT_EQ(s->processes[0].pid, 42u);
  EXPECT_FALSE(fake.Sample(0)->sm_utilization.has_value());
  EXPECT_EQ(fake.Sample(7).error().code(), StatusCode::kNotFound);
}

TEST(FakeBackendTest, LostGpuFailsSampling) {
  FakeBackend fake;
  fake.AddDefaultDevices(1);
  fake.SetLost(0, true);
  EXPECT_EQ(fake.Sample(0).error().code(), StatusCode::kUnavailable);
  fake.SetLost(0, false);
  EXPECT_TRUE(fake.Sample(0).has_value());
}

TEST(FakeBackendTest, InjectedEventWakesWaiter) {
  FakeBackend fake;
  fake.AddDefaultDevices(2);
  auto start = std::chrono::steady_clock::now();
  std::thread injector([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    fake.InjectXid(1, 79);
  });
  auto events = fake.WaitForEvents(5000);
  injector.join();
  auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].code, 79u);
  EXPECT_EQ(events[0].uuid, fake.Discover()->at(1).uuid);
  EXPECT_LT(waited, std::chrono::seconds(2));
  EXPECT_TRUE(fake.WaitForEvents(10).empty());
}

TEST(FakeBackendTest, DiscoveryFailure) {
  FakeBackend fake;
  fake.FailDiscovery("driver not loaded");
  auto devices = fake.Discover();
  ASSERT_FALSE(devices.has_value());
  EXPECT_EQ(devices.error().message(), "driver not loaded");
}

TEST(InjectingBackendTest, InjectsEventsAndLostGpus) {
  auto fake = std::make_unique<FakeBackend>();
  fake->AddDefaultDevices(2);
  FakeBackend* raw = fake.get();
  InjectingBackend backend(std::move(fake));
  auto devices = backend.Discover();
  ASSERT_TRUE(devices.has_value());
  const std::string uuid = (*devices)[0].uuid;

  backend.SetLost(uuid, true);
  EXPECT_EQ(backend.Sample(0).error().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(backend.Sample(1).has_value());
  backend.SetLost(uuid, false);
  EXPECT_TRUE(backend.Sample(0).has_value());

  HealthEvent e;
  e.uuid = uuid;
  e.code = 48;
  backend.InjectEvent(e);
  raw->InjectXid(1, 94);  // the wrapped backend's own events still come through
  std::vector<HealthEvent> all;
  for (int i = 0; i < 3 && all.size() < 2; ++i) {
    auto got = backend.WaitForEvents(500);
    all.insert(all.end(), got.begin(), got.end());
  }
  ASSERT_EQ(all.size(), 2u);
}

}  // namespace
}  // namespace vgpu::device
