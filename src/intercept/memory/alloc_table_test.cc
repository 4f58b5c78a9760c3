#include "intercept/memory/alloc_table.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

namespace vgpu::intercept {
namespace {

AllocEntry Entry(uint64_t key, Space space, uint64_t size, int device = 0) {
  AllocEntry e;
  e.key = key;
  e.space = space;
  e.size = size;
  e.device = static_cast<int16_t>(device);
  return e;
}

TEST(AllocTable, InsertFindRemove) {
  AllocTable t;
  EXPECT_FALSE(t.Find(1, Space::kPointer, nullptr));
  ASSERT_TRUE(t.Insert(Entry(0x1000, Space::kPointer, 10)));
  AllocEntry e;
  ASSERT_TRUE(t.Find(0x1000, Space::kPointer, &e));
  EXPECT_EQ(e.size, 10u);
  EXPECT_FALSE(t.Find(0x1000, Space::kArray, nullptr)) << "spaces are separate";
  ASSERT_TRUE(t.Remove(0x1000, Space::kPointer, &e));
  EXPECT_FALSE(t.Remove(0x1000, Space::kPointer, &e));
  EXPECT_EQ(t.size(), 0u);
  t.ResetInChild();
}

TEST(AllocTable, SameValueInDifferentSpacesAndGraphDevices) {
  AllocTable t;
  ASSERT_TRUE(t.Insert(Entry(7, Space::kVmm, 1)));
  ASSERT_TRUE(t.Insert(Entry(7, Space::kArray, 2)));
  ASSERT_TRUE(t.Insert(Entry(7, Space::kGraphExec, 3, 0)));
  ASSERT_TRUE(t.Insert(Entry(7, Space::kGraphExec, 4, 1)));
  AllocEntry e;
  ASSERT_TRUE(t.Remove(7, Space::kGraphExec, &e, 1));
  EXPECT_EQ(e.size, 4u);
  ASSERT_TRUE(t.Remove(7, Space::kGraphExec, &e, 0));
  EXPECT_EQ(e.size, 3u);
  ASSERT_TRUE(t.Remove(7, Space::kArray, &e));
  EXPECT_EQ(e.size, 2u);
  EXPECT_EQ(t.size(), 1u);
  t.ResetInChild();
}

// Randomised against a reference map, through growth and tombstone reuse.
TEST(AllocTable, MatchesAReferenceMap) {
  AllocTable t;
  std::unordered_map<uint64_t, uint64_t> ref;
  std::mt19937_64 rng(99);
  for (int i = 0; i < 200000; ++i) {
    uint64_t key = 0x7f0000000000ULL + (rng() % 50000) * 0x10000;
    if (rng() % 3 != 0) {
      if (ref.count(key) == 0) {
        ASSERT_TRUE(t.Insert(Entry(key, Space::kPointer, i)));
        ref[key] = i;
      }
    } else {
      AllocEntry e;
      bool found = t.Remove(key, Space::kPointer, &e);
      ASSERT_EQ(found, ref.count(key) == 1);
      if (found) {
        EXPECT_EQ(e.size, ref[key]);
        ref.erase(key);
      }
    }
  }
  EXPECT_EQ(t.size(), ref.size());
  EXPECT_GE(t.capacity(), 2 * ref.size());
  t.ResetInChild();
}

TEST(AllocTable, RemoveIfVisitsMatchingEntries) {
  AllocTable t;
  for (uint64_t k = 1; k <= 100; ++k) {
    AllocEntry e = Entry(k, Space::kPointer, k);
    e.context = k % 2;
    ASSERT_TRUE(t.Insert(e));
  }
  uint64_t sum = 0;
  t.RemoveIf([](const AllocEntry& e, void*) { return e.context == 1; },
             [](const AllocEntry& e, void* arg) { *static_cast<uint64_t*>(arg) += e.size; }, &sum);
  EXPECT_EQ(sum, 2500u);
  EXPECT_EQ(t.size(), 50u);
  t.ResetInChild();
}

TEST(AllocTable, ConcurrentInsertsAndRemoves) {
  AllocTable t;
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&t, th] {
      for (uint64_t i = 0; i < 20000; ++i) {
        uint64_t key = (static_cast<uint64_t>(th) << 40) | (i + 1);
        ASSERT_TRUE(t.Insert(Entry(key, Space::kPointer, 1)));
        if (i % 2 == 0) {
          ASSERT_TRUE(t.Remove(key, Space::kPointer, nullptr));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.size(), 4u * 10000);
  t.ResetInChild();
}

}  // namespace
}  // namespace vgpu::intercept
