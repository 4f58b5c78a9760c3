#include "dra/dry_run.h"

#include <map>
#include <string>

#include "dra/cdi_spec.h"

namespace vgpu::dra {

using nlohmann::json;

namespace {

constexpr const char* kNamespace = "dry-run";

// Example claims, one per device, allocated as kube-scheduler would (no capacity asked).
class ExampleClaims final : public ClaimSource {
 public:
  ExampleClaims(std::string driver, std::string pool)
      : driver_(std::move(driver)), pool_(std::move(pool)) {}

  ClaimRef Add(const std::string& device) {
    const ClaimRef ref{kNamespace, "dry-run-" + device, device};
    claims_[device] = {{"apiVersion", "resource.k8s.io/v1"},
                       {"kind", "ResourceClaim"},
                       {"metadata", {{"namespace", ref.ns}, {"name", ref.name}, {"uid", ref.uid}}},
                       {"status",
                        {{"allocation",
                          {{"devices",
                            {{"results", json::array({{{"request", "gpu"},
                                                       {"driver", driver_},
                                                       {"pool", pool_},
                                                       {"device", device}}})}}}}}}}};
    return ref;
  }

  Result<json> GetClaim(const std::string& ns, const std::string& name) override {
    auto it = claims_.find(name);
    if (ns != kNamespace || it == claims_.end()) {
      return Status::NotFound("no example claim " + ns + "/" + name);
    }
    return it->second;
  }

 private:
  std::string driver_;
  std::string pool_;
  std::map<std::string, json> claims_;
};

}  // namespace

json DryRun(const DryRunInput& in) {
  std::vector<SliceGpu> gpus = in.slice_gpus;
  for (size_t i = 0; i < gpus.size() && i < in.offers.size(); ++i) {
    gpus[i].software = in.offers[i].software;
    gpus[i].mig_devices = in.offers[i].mig;
  }
  json out = {{"driver", in.options.driver},
              {"node", in.options.pool},
              {"layout", SliceLayoutName(in.layout)},
              {"resourceSlices",
               BuildResourceSlices(in.options.pool, in.options.driver, gpus, 1, in.layout)},
              {"cdiSpecs", json::array()},
              {"notes", json::array()}};

  ExampleClaims claims(in.options.driver, in.options.pool);
  std::map<std::string, bool> healthy;
  for (const SliceGpu& g : gpus) healthy[g.info.uuid] = g.healthy;
  Driver driver(in.options, in.gpus, &claims,
                [&healthy](const std::string& uuid) { return healthy[uuid]; });
  driver.SetOffers(in.backend, in.offers);
  for (const SliceGpu& g : gpus) {
    if (!g.healthy) {
      out["notes"].push_back("GPU " + std::to_string(g.info.index) + " (" + g.info.uuid +
                             ") is unhealthy: its devices are not published");
      continue;
    }
    std::vector<std::string> devices;
    if (g.software) devices.push_back(GpuDeviceName(g.info.index));
    int dynamic = 0;
    for (const MigDeviceSpec& m : g.mig_devices) {
      if (m.uuid.empty()) {
        ++dynamic;
      } else {
        devices.push_back(MigDeviceName(g.info.index, m));
      }
    }
    if (dynamic > 0) {
      out["notes"].push_back("GPU " + std::to_string(g.info.index) + ": " +
                             std::to_string(dynamic) +
                             " MIG devices (mig-dynamic) get their CDI spec when a claim is "
                             "prepared and their instance made");
    }
    if (!g.software && g.mig_devices.empty()) {
      out["notes"].push_back("GPU " + std::to_string(g.info.index) +
                             ": mode mig with no instances yet: `vgpu dra` makes the layout of "
                             "--gpu-modes at start, and its instances become devices");
    }
    for (const std::string& device : devices) {
      const ClaimRef ref = claims.Add(device);
      auto spec = driver.PlanCdiSpec(ref);
      if (!spec) {
        out["notes"].push_back(device + ": " + spec.error().message());
        continue;
      }
      out["cdiSpecs"].push_back({{"device", device},
                                 {"claim", ref.ns + "/" + ref.name},
                                 {"path", CdiSpecPath(in.options.cdi_dir, ref.uid)},
                                 {"spec", *spec}});
    }
  }
  return out;
}

}  // namespace vgpu::dra
