#include "shm/arbiter_file.h"

#include <sys/mman.h>

#include <cstdio>

namespace vgpu::shm {
namespace {

using ArbiterLayout = SharedLayout<Arbiter, const char*, ValidateArbiter, InitializeArbiter,
                                   kArbiterMagic, kArbiterMajor>;
constexpr SharedFileKind kArbiterFile = ArbiterLayout::Kind(/*shared_by_users=*/true);

}  // namespace

bool ArbiterPath(const char* dir, const char* uuid, char* out, size_t size) {
  if (dir == nullptr || uuid == nullptr || dir[0] == '\0' || uuid[0] == '\0') return false;
  for (const char* p = uuid; *p != '\0'; ++p) {
    if (*p == '/') return false;
  }
  int n = std::snprintf(out, size, "%s/%s.arbiter", dir, uuid);
  return n > 0 && static_cast<size_t>(n) < size;
}

ArbiterMapping::~ArbiterMapping() { Reset(); }

void ArbiterMapping::Reset() {
  if (arbiter_ != nullptr) ::munmap(arbiter_, size_);
  arbiter_ = nullptr;
  size_ = 0;
}

Arbiter* ArbiterMapping::Detach() {
  Arbiter* a = arbiter_;
  arbiter_ = nullptr;
  size_ = 0;
  return a;
}

RegionError ArbiterMapping::Adopt(RegionError e, const SharedMapping& m) {
  if (e == RegionError::kIo) saved_errno_ = m.saved_errno;
  if (e != RegionError::kOk) return e;
  arbiter_ = static_cast<Arbiter*>(m.addr);
  size_ = m.size;
  return RegionError::kOk;
}

RegionError ArbiterMapping::OpenOrCreate(const char* path, const char* uuid, ArbiterMapping* out) {
  out->Reset();
  SharedMapping m;
  return out->Adopt(OpenOrCreateSharedFile(path, kArbiterFile, &uuid, &m), m);
}

RegionError ArbiterMapping::OpenExisting(const char* path, bool writable, ArbiterMapping* out) {
  out->Reset();
  SharedMapping m;
  return out->Adopt(OpenExistingSharedFile(path, kArbiterFile, writable, &m), m);
}

}  // namespace vgpu::shm
