#include "intercept/memory/alloc_table.h"

#include <sys/mman.h>

#include <cstring>

namespace vgpu::intercept {
namespace {

constexpr size_t kInitialCapacity = 4096;
constexpr uint8_t kEmpty = 0;
constexpr uint8_t kUsed = 1;

AllocEntry* MapSlots(size_t capacity) {
  void* p = ::mmap(nullptr, capacity * sizeof(AllocEntry), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<AllocEntry*>(p);
}

uint64_t Hash(uint64_t key, Space space, int device) {
  uint64_t x = key ^ (static_cast<uint64_t>(space) << 56) ^
               (static_cast<uint64_t>(static_cast<uint16_t>(device)) << 40);
  // splitmix64 finaliser: device pointers share their low bits (alignment), so mix well.
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

bool Matches(const AllocEntry& e, uint64_t key, Space space, int device) {
  return e.state == kUsed && e.key == key && e.space == space &&
         (space != Space::kGraphExec || e.device == device);
}

class Locker {
 public:
  explicit Locker(pthread_mutex_t* m) : m_(m) { pthread_mutex_lock(m_); }
  ~Locker() { pthread_mutex_unlock(m_); }

 private:
  pthread_mutex_t* m_;
};

}  // namespace

AllocTable::AllocTable() = default;

size_t AllocTable::Probe(uint64_t key, Space space, int device) const {
  if (capacity_ == 0) return capacity_;
  size_t mask = capacity_ - 1;
  size_t i = Hash(key, space, device) & mask;
  for (size_t n = 0; n < capacity_; ++n, i = (i + 1) & mask) {
    const AllocEntry& e = slots_[i];
    if (e.state == kEmpty) return capacity_;
    if (Matches(e, key, space, device)) return i;
  }
  return capacity_;
}

size_t AllocTable::Home(const AllocEntry& e) const {
  return Hash(e.key, e.space, e.space == Space::kGraphExec ? e.device : -1) & (capacity_ - 1);
}

void AllocTable::EraseLocked(size_t i) {
  // Backward-shift deletion (linear probing without tombstones): move later entries of the
  // probe run into the hole unless their home lies cyclically in (hole, their slot].
  size_t mask = capacity_ - 1;
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (slots_[j].state == kEmpty) break;
    size_t home = Home(slots_[j]);
    bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    slots_[i] = slots_[j];
    i = j;
  }
  slots_[i] = AllocEntry();
  --used_;
}

bool AllocTable::GrowLocked() {
  size_t new_capacity = capacity_ == 0 ? kInitialCapacity : capacity_ * 2;
  AllocEntry* fresh = MapSlots(new_capacity);
  if (fresh == nullptr) return false;
  size_t mask = new_capacity - 1;
  for (size_t i = 0; i < capacity_; ++i) {
    const AllocEntry& e = slots_[i];
    if (e.state != kUsed) continue;
    size_t j = Hash(e.key, e.space, e.space == Space::kGraphExec ? e.device : -1) & mask;
    while (fresh[j].state != kEmpty) j = (j + 1) & mask;
    fresh[j] = e;
  }
  if (slots_ != nullptr) ::munmap(slots_, capacity_ * sizeof(AllocEntry));
  slots_ = fresh;
  capacity_ = new_capacity;
  return true;
}

bool AllocTable::Insert(const AllocEntry& entry) {
  Locker lock(&mutex_);
  int device = entry.space == Space::kGraphExec ? entry.device : -1;
  size_t existing = Probe(entry.key, entry.space, device);
  if (existing != capacity_) {
    // The driver handed out a key we still track (its free was not seen): replace it.
    slots_[existing] = entry;
    slots_[existing].state = kUsed;
    return true;
  }
  if ((used_ + 1) * 2 > capacity_ && !GrowLocked()) {
    if (used_ + 1 >= capacity_) return false;  // cannot grow and truly full
  }
  size_t mask = capacity_ - 1;
  size_t i = Hash(entry.key, entry.space, device) & mask;
  while (slots_[i].state != kEmpty) i = (i + 1) & mask;
  slots_[i] = entry;
  slots_[i].state = kUsed;
  ++used_;
  return true;
}

bool AllocTable::Remove(uint64_t key, Space space, AllocEntry* out, int device) {
  Locker lock(&mutex_);
  size_t i = Probe(key, space, space == Space::kGraphExec ? device : -1);
  if (i == capacity_) return false;
  if (out != nullptr) *out = slots_[i];
  EraseLocked(i);
  return true;
}

bool AllocTable::Find(uint64_t key, Space space, AllocEntry* out, int device) const {
  Locker lock(&mutex_);
  size_t i = Probe(key, space, space == Space::kGraphExec ? device : -1);
  if (i == capacity_) return false;
  if (out != nullptr) *out = slots_[i];
  return true;
}

void AllocTable::RemoveIf(bool (*pred)(const AllocEntry&, void*),
                          void (*done)(const AllocEntry&, void*), void* arg) {
  Locker lock(&mutex_);
  // An erase moves a later entry into slot i: look at slot i again before moving on.
  for (size_t i = 0; i < capacity_;) {
    AllocEntry& e = slots_[i];
    if (e.state == kUsed && pred(e, arg)) {
      AllocEntry removed = e;
      EraseLocked(i);
      done(removed, arg);
      continue;
    }
    ++i;
  }
}

size_t AllocTable::size() const {
  Locker lock(&mutex_);
  return used_;
}

void AllocTable::ResetInChild() {
  if (slots_ != nullptr) ::munmap(slots_, capacity_ * sizeof(AllocEntry));
  slots_ = nullptr;
  capacity_ = 0;
  used_ = 0;
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  std::memcpy(&mutex_, &fresh, sizeof(fresh));
}

}  // namespace vgpu::intercept
