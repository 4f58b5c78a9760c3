#include "node/modes/mig_manager.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/atomic_file.h"
#include "common/log.h"

namespace vgpu::node {

std::string FormatMigJournal(const std::vector<MigClaim>& claims) {
  std::string out = "# vgpu MIG claims: pod_uid[,pod_uid...] gpu profile_id start size uuid|-\n";
  for (const MigClaim& c : claims) {
    std::string pods;
    for (const std::string& p : c.pods) pods += (pods.empty() ? "" : ",") + p;
    out += pods + " " + std::to_string(c.gpu_index) + " " + std::to_string(c.profile_id) + " " +
           std::to_string(c.start) + " " + std::to_string(c.size) + " " +
           (c.uuid.empty() ? "-" : c.uuid) + "\n";
  }
  return out;
}

Result<std::vector<MigClaim>> ParseMigJournal(const std::string& text, const std::string& where) {
  std::vector<MigClaim> claims;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    MigClaim c;
    std::string pods, uuid, extra;
    if (!(fields >> pods >> c.gpu_index >> c.profile_id >> c.start >> c.size >> uuid) ||
        (fields >> extra) || c.gpu_index < 0 || c.start < 0 || c.start > 7 || c.size < 1 ||
        c.size > 8 || (uuid != "-" && uuid.rfind("MIG-", 0) != 0)) {
      return Status::InvalidArgument(where + ":" + std::to_string(number) +
                                     ": not a MIG claim (pod_uid gpu profile_id start size "
                                     "uuid|-): \"" +
                                     line + "\"");
    }
    if (uuid != "-") c.uuid = uuid;
    std::stringstream list(pods);
    for (std::string p; std::getline(list, p, ',');) {
      if (!p.empty()) c.pods.push_back(p);
    }
    std::sort(c.pods.begin(), c.pods.end());
    claims.push_back(std::move(c));
  }
  return claims;
}

MigManager::MigManager(device::DeviceBackend* backend, std::string journal_path)
    : backend_(backend), journal_path_(std::move(journal_path)) {}

Status MigManager::SaveLocked() {
  if (journal_path_.empty()) return Status::Ok();
  return WriteFileAtomically(journal_path_, FormatMigJournal(claims_), 0600);
}

Status MigManager::LoadLocked() {
  claims_.clear();
  if (journal_path_.empty()) return Status::Ok();
  std::ifstream in(journal_path_);
  if (!in) return Status::Ok();  // no journal yet: no claims
  std::stringstream text;
  text << in.rdbuf();
  Result<std::vector<MigClaim>> parsed = ParseMigJournal(text.str(), journal_path_);
  if (!parsed) return parsed.error();
  claims_ = std::move(*parsed);
  return Status::Ok();
}

Status MigManager::Recover(const std::vector<int>& managed_gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  managed_ = std::set<int>(managed_gpus.begin(), managed_gpus.end());
  if (Status s = LoadLocked(); !s.ok()) return s;
  for (int gpu : managed_) {
    Result<std::vector<device::MigInstance>> instances = backend_->MigInstances(gpu);
    if (!instances)
      return instances.error().WithContext("MIG recovery on GPU " + std::to_string(gpu));
    std::set<std::string> claimed;
    for (MigClaim& c : claims_) {
      if (c.gpu_index != gpu) continue;
      const device::MigInstance* found = nullptr;
      for (const device::MigInstance& m : *instances) {
        if (m.start == c.start && m.profile_id == c.profile_id) found = &m;
      }
      if (found == nullptr || found->ci_id < 0) {
        if (!c.uuid.empty()) {
          VGPU_LOG_WARN("MIG: the instance of pod %s (%s) is gone; it is made again when needed",
                        c.pods.empty() ? "?" : c.pods.front().c_str(), c.uuid.c_str());
        }
        c.uuid.clear();
        continue;  // a half-made instance is destroyed below as unclaimed
      }
      if (!c.uuid.empty() && c.uuid != found->uuid) {
        VGPU_LOG_WARN("MIG: the instance at %d has UUID %s, the journal said %s", c.start,
                      found->uuid.c_str(), c.uuid.c_str());
      }
      c.uuid = found->uuid;
      claimed.insert(found->uuid);
    }
    for (const device::MigInstance& m : *instances) {
      if (m.ci_id >= 0 && claimed.count(m.uuid)) continue;
      Status destroyed = backend_->DestroyMigInstance(gpu, m.gi_id);
      VGPU_LOG_INFO("MIG: destroying unclaimed instance %s@%d on GPU %d (%s): %s",
                    m.profile.c_str(), m.start, gpu,
                    m.uuid.empty() ? "no compute instance" : m.uuid.c_str(),
                    destroyed.ok() ? "done" : destroyed.ToString().c_str());
    }
  }
  return SaveLocked();
}

Result<device::MigInstance> MigManager::Acquire(const std::string& pod_uid, int gpu_index,
                                                int profile_id, int start) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<std::vector<device::MigProfileInfo>> profiles = backend_->MigProfiles(gpu_index);
  if (!profiles) return profiles.error();
  const device::MigProfileInfo* profile = nullptr;
  for (const device::MigProfileInfo& p : *profiles) {
    if (p.profile_id == profile_id) profile = &p;
  }
  if (profile == nullptr) {
    return Status::InvalidArgument("GPU " + std::to_string(gpu_index) + " has no MIG profile id " +
                                   std::to_string(profile_id));
  }
  MigClaim* mine = nullptr;
  for (MigClaim& c : claims_) {
    if (c.gpu_index != gpu_index) continue;
    bool overlaps = start < c.start + c.size && c.start < start + profile->memory_slices;
    if (c.start == start && c.profile_id == profile_id) {
      mine = &c;  // this pod's, or shared with the pods already on it
    } else if (overlaps) {
      return Status::ResourceExhausted(
          "MIG placement " + profile->name + "@" + std::to_string(start) + " on GPU " +
          std::to_string(gpu_index) + " overlaps the instance of pod " +
          (c.pods.empty() ? std::string("?") : c.pods.front()));
    }
  }
  if (mine != nullptr && !std::binary_search(mine->pods.begin(), mine->pods.end(), pod_uid)) {
    mine->pods.insert(std::upper_bound(mine->pods.begin(), mine->pods.end(), pod_uid), pod_uid);
    if (Status s = SaveLocked(); !s.ok()) {
      mine->pods.erase(std::find(mine->pods.begin(), mine->pods.end(), pod_uid));
      return s.WithContext("recording the MIG claim of pod " + pod_uid);
    }
  }
  if (mine != nullptr && !mine->uuid.empty()) {
    Result<std::vector<device::MigInstance>> instances = backend_->MigInstances(gpu_index);
    if (!instances) return instances.error();
    for (const device::MigInstance& m : *instances) {
      if (m.uuid == mine->uuid) return m;
    }
    mine->uuid.clear();  // gone (a GPU reset): made again below
  }
  if (mine == nullptr) {
    claims_.push_back({{pod_uid}, gpu_index, profile_id, start, profile->memory_slices, ""});
    mine = &claims_.back();
    if (Status s = SaveLocked(); !s.ok()) {
      claims_.pop_back();
      return s.WithContext("recording the MIG claim of pod " + pod_uid);
    }
  }
  Result<device::MigInstance> made = backend_->CreateMigInstance(gpu_index, profile_id, start);
  if (!made) {
    const std::string failed_pod = pod_uid;
    for (size_t i = 0; i < claims_.size(); ++i) {
      if (&claims_[i] == mine) claims_.erase(claims_.begin() + static_cast<long>(i));
    }
    Status saved = SaveLocked();
    if (!saved.ok()) VGPU_LOG_WARN("MIG: %s", saved.ToString().c_str());
    return made.error().WithContext("creating " + profile->name + "@" + std::to_string(start) +
                                    " for pod " + failed_pod);
  }
  mine->uuid = made->uuid;
  if (Status s = SaveLocked(); !s.ok()) {
    // The instance exists and the journal names its placement: Recover adopts it.
    VGPU_LOG_WARN("MIG: %s", s.ToString().c_str());
  }
  VGPU_LOG_INFO("MIG: created %s@%d on GPU %d for pod %s: %s", profile->name.c_str(), start,
                gpu_index, pod_uid.c_str(), made->uuid.c_str());
  return made;
}

int MigManager::ReleaseGone(const std::set<std::string>& live_pods) {
  std::lock_guard<std::mutex> lock(mu_);
  int destroyed = 0;
  for (size_t i = 0; i < claims_.size();) {
    MigClaim& c = claims_[i];
    std::vector<std::string> live;
    for (const std::string& p : c.pods) {
      if (live_pods.count(p)) live.push_back(p);
    }
    if (!live.empty()) {
      if (live.size() != c.pods.size()) {
        c.pods = std::move(live);
        Status saved = SaveLocked();
        if (!saved.ok()) VGPU_LOG_WARN("MIG: %s", saved.ToString().c_str());
      }
      ++i;
      continue;
    }
    // By placement, not UUID: an intent without a UUID may have an instance (or half of one).
    Result<std::vector<device::MigInstance>> instances = backend_->MigInstances(c.gpu_index);
    if (!instances) {
      ++i;
      continue;
    }
    Status s = Status::Ok();
    for (const device::MigInstance& m : *instances) {
      if (m.start == c.start && m.profile_id == c.profile_id) {
        s = backend_->DestroyMigInstance(c.gpu_index, m.gi_id);
      }
    }
    if (!s.ok()) {
      VGPU_LOG_WARN("MIG: the pods of the instance at %d on GPU %d are gone but it stays: %s",
                    c.start, c.gpu_index, s.ToString().c_str());
      ++i;
      continue;
    }
    VGPU_LOG_INFO("MIG: destroyed the instance at %d on GPU %d: its pods are gone", c.start,
                  c.gpu_index);
    claims_.erase(claims_.begin() + static_cast<long>(i));
    ++destroyed;
    Status saved = SaveLocked();
    if (!saved.ok()) VGPU_LOG_WARN("MIG: %s", saved.ToString().c_str());
  }
  return destroyed;
}

std::vector<MigClaim> MigManager::Claims() const {
  std::lock_guard<std::mutex> lock(mu_);
  return claims_;
}

}  // namespace vgpu::node
