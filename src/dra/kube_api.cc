#include "dra/kube_api.h"

#include <algorithm>

#include "common/log.h"

namespace vgpu::dra {

using nlohmann::json;

Result<json> KubeClaimSource::GetClaim(const std::string& ns, const std::string& name) {
  return client_->Get(k8s::ResourceKind::kResourceClaim, ns, name);
}

SlicePublisher::SlicePublisher(k8s::KubeClient* client, std::string node, std::string driver)
    : client_(client), node_(std::move(node)), driver_(std::move(driver)) {}

int64_t SlicePublisher::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

uint64_t SlicePublisher::writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writes_;
}

Status SlicePublisher::Publish(const std::vector<SliceGpu>& gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<json> slices = BuildResourceSlices(node_, driver_, gpus, 0);
  const std::string text = json(slices).dump();
  if (text == last_) return Status::Ok();
  if (generation_ == 0) {
    // Above any generation of this pool already on the server (a previous run).
    for (const json& s : slices) {
      auto got = client_->Get(k8s::ResourceKind::kResourceSlice, "", s["metadata"]["name"]);
      if (!got && got.error().code() != StatusCode::kNotFound) return got.error();
      if (got) {
        generation_ =
            std::max<int64_t>(generation_, (*got)["spec"]["pool"].value("generation", int64_t{0}));
      }
    }
  }
  ++generation_;
  for (json& s : slices) s["spec"]["pool"]["generation"] = generation_;
  if (Status s = Write(slices); !s.ok()) return s;
  last_ = text;
  return Status::Ok();
}

Status SlicePublisher::Write(const std::vector<json>& slices) {
  for (const json& s : slices) {
    const std::string name = s["metadata"]["name"];
    auto got = client_->Get(k8s::ResourceKind::kResourceSlice, "", name);
    if (!got && got.error().code() == StatusCode::kNotFound) {
      auto created = client_->Create(k8s::ResourceKind::kResourceSlice, "", s);
      if (!created) return created.error();
    } else if (!got) {
      return got.error();
    } else {
      json update = s;
      update["metadata"]["resourceVersion"] = k8s::MetaString(*got, "resourceVersion");
      auto updated = client_->Update(k8s::ResourceKind::kResourceSlice, "", name, update);
      if (!updated) return updated.error();
    }
    ++writes_;
  }
  VGPU_LOG_INFO("published %zu ResourceSlices of pool %s, generation %lld", slices.size(),
                node_.c_str(), static_cast<long long>(generation_));
  return Status::Ok();
}

}  // namespace vgpu::dra
