// The Accountant joins its slice's accounting on the first charge. A join that cannot lock the
// region (a peer holds the lock past the timeout) refuses that allocation only, says so, and the
// next charge joins.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "common/log.h"
#include "intercept/memory/accountant.h"
#include "shm/region_ops.h"

namespace vgpu::intercept {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;

std::string ReadAvailable(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

TEST(AccountantJoin, ALockTimeoutRefusesThisAllocationAndTheNextOneJoins) {
  auto region = std::make_unique<shm::Region>();
  shm::RegionConfig rc{};
  rc.device_count = 1;
  rc.priority = shm::kPriorityNormal;
  for (uint64_t& l : rc.memory_limit) l = shm::kNoLimit;
  rc.memory_limit[0] = 1024 * kMiB;
  shm::InitializeRegion(region.get(), rc, false);
  Config config;
  config.any_memory_limit = true;
  Accountant acct;
  acct.InitWithRegion(config, region.get(), false);

  // A peer holds the region's lock until the first charge has given up.
  std::atomic<bool> locked{false}, release{false};
  std::thread peer([&] {
    pthread_mutex_lock(&region->header.mutex.mutex);
    locked = true;
    while (!release) usleep(1000);
    pthread_mutex_unlock(&region->header.mutex.mutex);
  });
  while (!locked) usleep(1000);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
  SetLogFd(fds[1]);
  bool first = acct.Charge(0, 64 * kMiB);  // waits for the lock timeout (5 s)
  release = true;
  peer.join();
  bool second = acct.Charge(0, 64 * kMiB);
  SetLogFd(2);
  std::string log = ReadAvailable(fds[0]);
  close(fds[0]);
  close(fds[1]);

  EXPECT_FALSE(first);
  EXPECT_NE(log.find("timed out waiting for the region lock"), std::string::npos) << log;
  // The message says what happens next: only this allocation is refused.
  EXPECT_NE(log.find("this device memory allocation is refused, the next one tries to join again"),
            std::string::npos)
      << log;
  EXPECT_TRUE(second);
  EXPECT_EQ(shm::DeviceUsed(region.get(), 0), 64 * kMiB);
}

}  // namespace
}  // namespace vgpu::intercept
