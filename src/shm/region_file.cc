#include "shm/region_file.h"

#include <sys/mman.h>

#include <utility>

namespace vgpu::shm {
namespace {

using RegionLayout = SharedLayout<Region, RegionConfig, ValidateRegion, InitializeRegion,
                                  kRegionMagic, kRegionMajor>;
constexpr SharedFileKind kRegionFile = RegionLayout::Kind(/*shared_by_users=*/false);

}  // namespace

Mapping::~Mapping() { Reset(); }

Mapping::Mapping(Mapping&& other) noexcept { *this = std::move(other); }

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    Reset();
    region_ = std::exchange(other.region_, nullptr);
    size_ = std::exchange(other.size_, 0);
    writable_ = other.writable_;
    saved_errno_ = other.saved_errno_;
  }
  return *this;
}

Region* Mapping::Detach() {
  Region* r = region_;
  region_ = nullptr;
  size_ = 0;
  return r;
}

void Mapping::Reset() {
  if (region_ != nullptr) ::munmap(region_, size_);
  region_ = nullptr;
  size_ = 0;
}

RegionError Mapping::Adopt(RegionError e, const SharedMapping& m, bool writable) {
  if (e == RegionError::kIo) saved_errno_ = m.saved_errno;
  if (e != RegionError::kOk) return e;
  region_ = static_cast<Region*>(m.addr);
  size_ = m.size;
  writable_ = writable;
  return RegionError::kOk;
}

RegionError Mapping::OpenOrCreate(const char* path, const RegionConfig& config, Mapping* out) {
  out->Reset();
  SharedMapping m;
  return out->Adopt(OpenOrCreateSharedFile(path, kRegionFile, &config, &m), m, true);
}

RegionError Mapping::OpenExisting(const char* path, bool writable, Mapping* out) {
  out->Reset();
  SharedMapping m;
  return out->Adopt(OpenExistingSharedFile(path, kRegionFile, writable, &m), m, writable);
}

}  // namespace vgpu::shm
