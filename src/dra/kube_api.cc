#include "dra/kube_api.h"

#include <algorithm>
#include <set>

#include "common/log.h"

namespace vgpu::dra {

using nlohmann::json;

Result<json> KubeClaimSource::GetClaim(const std::string& ns, const std::string& name) {
  return client_->Get(k8s::ResourceKind::kResourceClaim, ns, name);
}

SlicePublisher::SlicePublisher(k8s::KubeClient* client, std::string node, std::string driver,
                               std::optional<SliceLayout> layout)
    : client_(client),
      node_(std::move(node)),
      driver_(std::move(driver)),
      negotiate_(!layout.has_value()),
      layout_(layout) {}

int64_t SlicePublisher::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

uint64_t SlicePublisher::writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writes_;
}

uint64_t SlicePublisher::deletes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return deletes_;
}

bool SlicePublisher::published() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_;
}

std::optional<SliceLayout> SlicePublisher::layout() const {
  std::lock_guard<std::mutex> lock(mu_);
  return layout_;
}

Status SlicePublisher::Negotiate() {
  auto version = client_->ServerVersion();
  if (!version) return version.error();
  auto layout = SliceLayoutForVersion(*version);
  if (!layout) return layout.error();
  if (layout_ != *layout) {
    VGPU_LOG_INFO("API server %s: ResourceSlices in the layout of Kubernetes %s",
                  version->value("gitVersion", std::string("?")).c_str(),
                  SliceLayoutName(*layout).c_str());
    last_.clear();  // everything is written anew
  }
  layout_ = *layout;
  return Status::Ok();
}

Result<std::vector<json>> SlicePublisher::ListOwn() {
  k8s::ListOptions options;
  options.field_selector = "spec.driver=" + driver_ + ",spec.nodeName=" + node_;
  auto list = client_->List(k8s::ResourceKind::kResourceSlice, "", options);
  if (!list) return list.error();
  std::vector<json> out;
  for (json& s : list->items) {
    // The selector is the server's; ownership is checked here too, on the object itself.
    const json& spec = s.value("spec", json::object());
    if (spec.value("driver", "") != driver_ || spec.value("nodeName", "") != node_ ||
        !spec.contains("pool") || spec["pool"].value("name", "") != node_) {
      continue;
    }
    out.push_back(std::move(s));
  }
  return out;
}

Status SlicePublisher::Publish(const std::vector<SliceGpu>& gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto failed = [this](Status s) {
    published_ = false;
    // A write the server calls invalid may be the other layout's: ask again next time.
    if (negotiate_ && s.code() == StatusCode::kInvalidArgument) layout_.reset();
    return s;
  };
  if (!layout_) {
    if (Status s = Negotiate(); !s.ok()) return failed(s);
  }
  std::vector<json> slices = BuildResourceSlices(node_, driver_, gpus, 0, *layout_);
  const std::string text = json(slices).dump();
  if (text == last_) return Status::Ok();
  auto before = ListOwn();
  if (!before) return failed(before.error());
  if (generation_ == 0) {
    // Above any generation of this pool already on the server (a previous run).
    for (const json& s : *before) {
      generation_ =
          std::max<int64_t>(generation_, s["spec"]["pool"].value("generation", int64_t{0}));
    }
  }
  ++generation_;
  for (json& s : slices) s["spec"]["pool"]["generation"] = generation_;
  if (Status s = Write(slices); !s.ok()) return failed(s);
  if (Status s = DeleteStale(*before, slices); !s.ok()) return failed(s);
  last_ = text;
  published_ = true;
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

Status SlicePublisher::DeleteStale(const std::vector<json>& before,
                                   const std::vector<json>& slices) {
  std::set<std::string> current;
  for (const json& s : slices) current.insert(s["metadata"]["name"].get<std::string>());
  for (const json& s : before) {
    const std::string name = k8s::MetaString(s, "name");
    if (current.count(name) != 0) continue;
    Status d =
        client_->Delete(k8s::ResourceKind::kResourceSlice, "", name, k8s::MetaString(s, "uid"));
    if (!d.ok() && d.code() != StatusCode::kNotFound) return d;
    if (d.ok()) {
      ++deletes_;
      VGPU_LOG_INFO("deleted ResourceSlice %s: no longer published by node %s", name.c_str(),
                    node_.c_str());
    }
  }
  return Status::Ok();
}

}  // namespace vgpu::dra
