// The DRA kubelet plugin over unix sockets, driven by DraKubeletEmulator with the real dra/v1
// and registration messages, claims read from the fake API server: registration, 32 claims at
// once, retries, Unprepare, a daemon restart in between, a kubelet restart, bad input.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "device/fake_backend.h"
#include "dra/cdi_spec.h"
#include "dra/driver.h"
#include "dra/gpu_offers.h"
#include "dra/kube_api.h"
#include "dra/plugin_server.h"
#include "dra/resource_slices.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "dra_kubelet_emulator.h"
#include "fake_api_server.h"
#include "k8s/api/http_kube_client.h"
#include "mig_minors.h"
#include "slice_rules.h"
#include "support/temp_dir.h"

namespace vgpu::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using vgpu::testing::DraKubeletEmulator;
using ClaimArg = DraKubeletEmulator::ClaimArg;
namespace drapb = vgpu::testing::drapb;

constexpr int kGpus = 4;

std::vector<device::DeviceInfo> Gpus() {
  std::vector<device::DeviceInfo> out;
  for (int i = 0; i < kGpus; ++i) {
    device::DeviceInfo g;
    g.index = i;
    g.uuid = "GPU-aaaaaaaa-0000-0000-0000-00000000000" + std::to_string(i);
    g.name = "NVIDIA H100 80GB HBM3";
    g.memory_total_bytes = 80ULL << 30;
    g.sm_count = 132;
    g.minor_number = i;
    out.push_back(g);
  }
  return out;
}

std::vector<SliceGpu> SliceGpus() {
  std::vector<SliceGpu> out;
  for (const auto& g : Gpus()) {
    SliceGpu s;
    s.info = g;
    FillFromProductName(&s);
    out.push_back(s);
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The limits file host path and the env of a prepared claim, from its CDI spec.
struct Edits {
  std::map<std::string, std::string> env;
  std::string limits_host_path;
};
Edits ReadCdi(const std::string& cdi_dir, const std::string& uid) {
  Edits e;
  const json spec = json::parse(ReadFile(CdiSpecPath(cdi_dir, uid)), nullptr, false);
  if (!spec.is_object()) return e;
  const json& edits = spec["devices"][0]["containerEdits"];
  for (const json& v : edits["env"]) {
    const std::string s = v;
    e.env[s.substr(0, s.find('='))] = s.substr(s.find('=') + 1);
  }
  for (const json& m : edits["mounts"]) {
    if (m["containerPath"] == "/etc/vgpu/limits") e.limits_host_path = m["hostPath"];
  }
  return e;
}

class DraPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    root_ = tmp_.path();
    k8s::ClientOptions options;
    options.initial_backoff = std::chrono::milliseconds(10);
    auto client = k8s::HttpKubeClient::Create(api_.ClientConfig(), options);
    ASSERT_TRUE(client.has_value()) << client.error().ToString();
    client_ = std::move(*client);
    claims_ = std::make_unique<KubeClaimSource>(client_.get());
    kubelet_ = std::make_unique<DraKubeletEmulator>(root_ + "/registry");
    fs::create_directories(root_ + "/registry");
    StartDaemon();
    kubelet_->Start();
    ASSERT_TRUE(kubelet_->WaitForRegistrations(1, 5000));
  }
  void TearDown() override {
    kubelet_->Stop();
    StopDaemon();
  }

  DriverOptions Options() {
    DriverOptions o;
    o.pool = "node-a";
    o.cdi_dir = cdi_dir_.empty() ? root_ + "/cdi" : cdi_dir_;
    o.state_dir = root_ + "/state";
    o.slices.host_libvgpu = root_ + "/libvgpu.so";
    o.slices.arbiter_dir = root_ + "/arbiter";
    o.device_list.probe_root = root_;  // mig-minors (MIG tests)
    return o;
  }
  void StartDaemon() {
    driver_ =
        std::make_unique<Driver>(Options(), Gpus(), claims_.get(),
                                 [this](const std::string& u) { return unhealthy_.count(u) == 0; });
    ASSERT_TRUE(driver_->Init().ok());
    if (mig_backend_ != nullptr) {
      ASSERT_TRUE(driver_->EnableMig(mig_backend_, offers_).ok());
    }
    PluginServerOptions p;
    p.registry_dir = root_ + "/registry";
    p.plugin_dir = root_ + "/plugins/gpu.vgpu.io";
    p.check_ms = 50;
    server_ = std::make_unique<PluginServer>(p, driver_.get());
    ASSERT_TRUE(server_->Start().ok());
  }
  void StopDaemon() {
    if (server_) server_->Stop();
    server_.reset();
    driver_.reset();
  }

  // Allocates `n` claims with the structured-parameters rules and stores them in the API server.
  std::vector<ClaimArg> MakeClaims(int n, std::map<std::string, std::pair<int64_t, int>>* want) {
    testing::TestAllocator alloc(kDriverName,
                                 BuildResourceSlices("node-a", kDriverName, SliceGpus(), 1));
    std::vector<ClaimArg> out;
    for (int i = 0; i < n; ++i) {
      const std::string uid = "uid-" + std::to_string(i);
      const int64_t memory = (1LL << 30) + static_cast<int64_t>(i) * (3 << 20);
      const int cores = 5 + i % 7;
      std::string why;
      auto claim =
          alloc.Allocate({"ns",
                          "claim-" + std::to_string(i),
                          uid,
                          "gpu",
                          "type",
                          "gpu",
                          {{"memory", std::to_string(memory)}, {"cores", std::to_string(cores)}}},
                         &why);
      EXPECT_TRUE(claim) << why;
      if (!claim) continue;
      api_.PutResourceClaim(*claim);
      (*want)[uid] = {memory, cores};
      out.push_back({"ns", uid, "claim-" + std::to_string(i)});
    }
    return out;
  }

  // Under /tmp whatever $TMPDIR says: the plugin's and the registry's unix sockets live in it
  // (a socket's path holds at most 107 bytes).
  vgpu::testing::TempDir tmp_{"vgpu-dra-plugin", "/tmp"};
  std::string root_;
  std::string cdi_dir_;
  device::DeviceBackend* mig_backend_ = nullptr;  // EnableMig with offers_ when set
  std::vector<GpuOffer> offers_;
  std::set<std::string> unhealthy_;
  k8s::testing::FakeApiServer api_{
      k8s::testing::FakeApiServer::Options{.tls = false, .token = "", .threads = 16}};
  std::unique_ptr<k8s::HttpKubeClient> client_;
  std::unique_ptr<KubeClaimSource> claims_;
  std::unique_ptr<Driver> driver_;
  std::unique_ptr<PluginServer> server_;
  std::unique_ptr<DraKubeletEmulator> kubelet_;
};

TEST_F(DraPluginTest, RegistersAsADraPlugin) {
  const auto info = kubelet_->last_info();
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "gpu.vgpu.io");
  EXPECT_EQ(info.endpoint(), server_->dra_socket());
  ASSERT_EQ(info.supported_versions_size(), 2);
  EXPECT_EQ(info.supported_versions(0), "v1.DRAPlugin");
  EXPECT_EQ(info.supported_versions(1), "v1beta1.DRAPlugin");
  EXPECT_EQ(server_->registrations(), 1u);
}

// A kubelet of 1.32 or 1.33 calls k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin: the same
// claims get the same answers.
TEST_F(DraPluginTest, ServesV1beta1TooWithTheSameAnswers) {
  std::map<std::string, std::pair<int64_t, int>> want;
  const std::vector<ClaimArg> claims = MakeClaims(1, &want);
  auto channel =
      grpc::CreateChannel("unix://" + server_->dra_socket(), grpc::InsecureChannelCredentials());
  auto beta = ::k8s::io::kubelet::pkg::apis::dra::v1beta1::DRAPlugin::NewStub(channel);
  drapb::NodePrepareResourcesRequest request;
  auto* c = request.add_claims();
  c->set_namespace_(claims[0].ns);
  c->set_uid(claims[0].uid);
  c->set_name(claims[0].name);
  drapb::NodePrepareResourcesResponse by_beta, by_v1;
  grpc::ClientContext ctx;
  ASSERT_TRUE(beta->NodePrepareResources(&ctx, request, &by_beta).ok());
  ASSERT_EQ(by_beta.claims().at(claims[0].uid).error(), "");
  ASSERT_TRUE(kubelet_->Prepare(claims, &by_v1).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(by_beta, by_v1));
  drapb::NodeUnprepareResourcesRequest un_request;
  *un_request.add_claims() = request.claims(0);
  drapb::NodeUnprepareResourcesResponse un;
  grpc::ClientContext ctx2;
  ASSERT_TRUE(beta->NodeUnprepareResources(&ctx2, un_request, &un).ok());
  EXPECT_EQ(un.claims().at(claims[0].uid).error(), "");
  EXPECT_EQ(driver_->prepared_count(), 0u);
}

// 32 claims in one call: each container's limits file names its own GPU, memory and cores.
TEST_F(DraPluginTest, PreparesThirtyTwoClaimsAtOnceEachWithItsOwnLimits) {
  std::map<std::string, std::pair<int64_t, int>> want;
  const std::vector<ClaimArg> claims = MakeClaims(32, &want);
  ASSERT_EQ(claims.size(), 32u);
  drapb::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet_->Prepare(claims, &resp).ok());
  ASSERT_EQ(resp.claims_size(), 32);
  std::set<std::string> limits_files;
  for (const ClaimArg& c : claims) {
    const auto& r = resp.claims().at(c.uid);
    ASSERT_EQ(r.error(), "") << c.uid;
    ASSERT_EQ(r.devices_size(), 1);
    const auto& d = r.devices(0);
    EXPECT_EQ(d.request_names(0), "gpu");
    EXPECT_EQ(d.pool_name(), "node-a");
    ASSERT_GE(d.cdi_device_ids_size(), 1);
    EXPECT_EQ(d.cdi_device_ids(0), "vgpu.io/gpu=claim-" + c.uid);
    const int index = std::stoi(d.device_name().substr(4));
    const std::string uuid = Gpus()[index].uuid;
    EXPECT_EQ(d.cdi_device_ids(1), "nvidia.com/gpu=" + uuid);
    const Edits e = ReadCdi(root_ + "/cdi", c.uid);
    EXPECT_EQ(e.env.at("NVIDIA_VISIBLE_DEVICES"), uuid);
    ASSERT_FALSE(e.limits_host_path.empty());
    limits_files.insert(e.limits_host_path);
    const std::string limits = ReadFile(e.limits_host_path);
    EXPECT_NE(limits.find("uuid.0=" + uuid + "\n"), std::string::npos) << limits;
    EXPECT_NE(limits.find("memory.0=" + std::to_string(want[c.uid].first) + "\n"),
              std::string::npos)
        << c.uid << "\n"
        << limits;
    EXPECT_NE(limits.find("cores.0=" + std::to_string(want[c.uid].second) + "\n"),
              std::string::npos)
        << limits;
    EXPECT_EQ(fs::status(e.limits_host_path).permissions() & fs::perms::owner_write,
              fs::perms::none);
  }
  EXPECT_EQ(limits_files.size(), 32u);

  // Retried: the same answer, nothing new on disk.
  drapb::NodePrepareResourcesResponse again;
  ASSERT_TRUE(kubelet_->Prepare(claims, &again).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(resp, again));

  // Unprepare removes the specs and slices; a second Unprepare is fine.
  drapb::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(kubelet_->Unprepare(claims, &un).ok());
  ASSERT_EQ(un.claims_size(), 32);
  for (const auto& [uid, r] : un.claims()) EXPECT_EQ(r.error(), "") << uid;
  EXPECT_TRUE(fs::is_empty(root_ + "/cdi"));
  for (const std::string& f : limits_files) EXPECT_FALSE(fs::exists(f));
  ASSERT_TRUE(kubelet_->Unprepare(claims, &un).ok());
  EXPECT_EQ(driver_->prepared_count(), 0u);
}

TEST_F(DraPluginTest, ADaemonRestartBetweenPrepareAndUnprepareKeepsTheAnswer) {
  std::map<std::string, std::pair<int64_t, int>> want;
  const std::vector<ClaimArg> claims = MakeClaims(3, &want);
  drapb::NodePrepareResourcesResponse before;
  ASSERT_TRUE(kubelet_->Prepare(claims, &before).ok());
  const std::string limits = ReadCdi(root_ + "/cdi", claims[0].uid).limits_host_path;
  ASSERT_TRUE(fs::exists(limits));

  StopDaemon();
  StartDaemon();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(2, 5000));
  // The API server does not answer: the answer comes from the checkpoint.
  api_.FailNext(1000, 503);
  drapb::NodePrepareResourcesResponse after;
  ASSERT_TRUE(kubelet_->Prepare(claims, &after).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(before, after));
  EXPECT_EQ(api_.requests("GET"), 3);  // the three reads of the first Prepare only
  api_.ClearFaults();

  drapb::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(kubelet_->Unprepare(claims, &un).ok());
  for (const auto& [uid, r] : un.claims()) EXPECT_EQ(r.error(), "") << uid;
  EXPECT_FALSE(fs::exists(limits));
  EXPECT_TRUE(fs::is_empty(root_ + "/cdi"));
  StopDaemon();
  StartDaemon();
  EXPECT_EQ(driver_->prepared_count(), 0u);
}

TEST_F(DraPluginTest, RegistersAgainAfterAKubeletRestart) {
  kubelet_->Restart(/*wipe=*/true);
  ASSERT_TRUE(kubelet_->WaitForRegistrations(2, 5000));
  EXPECT_GE(server_->server_starts(), 2u);
  std::map<std::string, std::pair<int64_t, int>> want;
  const std::vector<ClaimArg> claims = MakeClaims(1, &want);
  drapb::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet_->Prepare(claims, &resp).ok());
  EXPECT_EQ(resp.claims().at(claims[0].uid).error(), "");
  // Without wiping: kubelet finds the same sockets and registers the driver again.
  kubelet_->Restart(/*wipe=*/false);
  ASSERT_TRUE(kubelet_->WaitForRegistrations(3, 5000));
}

json ClaimOn(const std::string& name, const std::string& uid, const std::string& device) {
  json result = {
      {"request", "gpu"},      {"driver", "gpu.vgpu.io"},
      {"pool", "node-a"},      {"device", device},
      {"shareID", "s-" + uid}, {"consumedCapacity", {{"memory", "4Gi"}, {"cores", "30"}}}};
  return {{"metadata", {{"namespace", "ns"}, {"name", name}, {"uid", uid}}},
          {"status", {{"allocation", {{"devices", {{"results", json::array({result})}}}}}}}};
}

TEST_F(DraPluginTest, BadClaimsFailAloneNamingTheClaimAndTheField) {
  json bad_config = ClaimOn("bad-config", "u-cfg", "gpu-0");
  json parameters = {{"apiVersion", "vgpu.io/v1alpha1"}, {"kind", "GpuConfig"}, {"guarantee", 150}};
  json opaque = {{"driver", "gpu.vgpu.io"}, {"parameters", parameters}};
  json entry = {{"source", "FromClaim"}, {"opaque", opaque}};
  bad_config["status"]["allocation"]["devices"]["config"] = json::array({entry});
  api_.PutResourceClaim(bad_config);
  json malformed = ClaimOn("malformed", "u-mal", "gpu-0");
  malformed["status"]["allocation"]["devices"]["config"] =
      json::array({{{"opaque", {{"driver", "gpu.vgpu.io"}, {"parameters", "not an object"}}}}});
  api_.PutResourceClaim(malformed);
  api_.PutResourceClaim(ClaimOn("elsewhere", "u-dev", "gpu-9"));
  api_.PutResourceClaim(ClaimOn("good", "u-good", "gpu-1"));
  drapb::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet_
                  ->Prepare({{"ns", "u-cfg", "bad-config"},
                             {"ns", "u-mal", "malformed"},
                             {"ns", "u-dev", "elsewhere"},
                             {"ns", "u-none", "missing"},
                             {"ns", "u-good", "good"}},
                            &resp)
                  .ok());
  auto error_of = [&](const std::string& uid) { return resp.claims().at(uid).error(); };
  EXPECT_NE(error_of("u-cfg").find("claim ns/bad-config"), std::string::npos);
  EXPECT_NE(error_of("u-cfg").find("config[0].opaque.parameters.guarantee"), std::string::npos)
      << error_of("u-cfg");
  EXPECT_NE(error_of("u-mal").find("claim ns/malformed: status.allocation.devices.config[0]"),
            std::string::npos)
      << error_of("u-mal");
  EXPECT_NE(error_of("u-dev").find("claim ns/elsewhere: status.allocation.devices.results[0]"
                                   ".device: node node-a has no device \"gpu-9\""),
            std::string::npos)
      << error_of("u-dev");
  EXPECT_NE(error_of("u-none").find("claim ns/missing"), std::string::npos);
  EXPECT_EQ(error_of("u-good"), "");
  EXPECT_EQ(resp.claims().at("u-good").devices_size(), 1);
  EXPECT_EQ(driver_->prepared_count(), 1u);
  // Nothing of the failed claims is left on disk.
  EXPECT_EQ(std::distance(fs::directory_iterator(root_ + "/cdi"), fs::directory_iterator()), 1);
}

TEST_F(DraPluginTest, AnUnwritableCdiDirectoryFailsTheClaimNotTheDaemon) {
  StopDaemon();
  std::ofstream(root_ + "/not-a-dir") << "x";
  cdi_dir_ = root_ + "/not-a-dir";
  StartDaemon();
  api_.PutResourceClaim(ClaimOn("c", "u-1", "gpu-0"));
  drapb::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "u-1", "c"}}, &resp).ok());
  const std::string error = resp.claims().at("u-1").error();
  EXPECT_NE(error.find("claim ns/c: CDI directory " + cdi_dir_), std::string::npos) << error;
  EXPECT_EQ(driver_->prepared_count(), 0u);
  EXPECT_TRUE(fs::is_empty(Options().state_dir + "/slices") ||
              !fs::exists(Options().state_dir + "/slices/u-1_claim"));
}

TEST_F(DraPluginTest, AClaimOnAnUnhealthyGpuReportsAnError) {
  api_.PutResourceClaim(ClaimOn("c", "u-1", "gpu-2"));
  drapb::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "u-1", "c"}}, &resp).ok());
  ASSERT_EQ(resp.claims().at("u-1").error(), "");
  unhealthy_.insert(Gpus()[2].uuid);
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "u-1", "c"}}, &resp).ok());
  EXPECT_NE(resp.claims().at("u-1").error().find("GPU " + Gpus()[2].uuid + ") is unhealthy"),
            std::string::npos)
      << resp.claims().at("u-1").error();
  api_.PutResourceClaim(ClaimOn("d", "u-2", "gpu-2"));
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "u-2", "d"}}, &resp).ok());
  EXPECT_NE(resp.claims().at("u-2").error().find("unhealthy"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::dra

namespace vgpu::dra {
namespace {

// The pool generation goes up with every change of the node's slices, also across restarts,
// and an unchanged node writes nothing.
TEST_F(DraPluginTest, SlicePublisherBumpsTheGenerationOnEveryChange) {
  SlicePublisher publisher(client_.get(), "node-a", kDriverName);
  std::vector<SliceGpu> gpus = SliceGpus();
  ASSERT_TRUE(publisher.Publish(gpus).ok());
  EXPECT_EQ(publisher.generation(), 1);
  const uint64_t writes = publisher.writes();
  EXPECT_EQ(writes, 2u);  // the counters slice and the devices slice
  ASSERT_TRUE(publisher.Publish(gpus).ok());
  EXPECT_EQ(publisher.writes(), writes);
  gpus[1].healthy = false;
  ASSERT_TRUE(publisher.Publish(gpus).ok());
  EXPECT_EQ(publisher.generation(), 2);
  for (const json& s : api_.ResourceSlices()) {
    EXPECT_EQ(s["spec"]["pool"]["generation"], 2);
    if (s["spec"].contains("devices")) {
      EXPECT_EQ(s["spec"]["devices"].size(), 3u);
    }
  }
  EXPECT_EQ(testing::ValidateResourceSlices(api_.ResourceSlices()), std::vector<std::string>{});
  // A new process (a restart) starts above what is published.
  SlicePublisher again(client_.get(), "node-a", kDriverName);
  ASSERT_TRUE(again.Publish(SliceGpus()).ok());
  EXPECT_EQ(again.generation(), 3);
  // A failing API server: the error is returned, and the next Publish writes.
  gpus = SliceGpus();
  gpus[0].healthy = false;
  api_.FailNext(20, 500);
  EXPECT_FALSE(again.Publish(gpus).ok());
  api_.ClearFaults();
  ASSERT_TRUE(again.Publish(gpus).ok());
  for (const json& s : api_.ResourceSlices()) {
    if (s["spec"].contains("devices")) {
      EXPECT_EQ(s["spec"]["devices"].size(), 3u);
    }
  }
}

// GPU 0 in mode mig-dynamic on a scripted driver with the H100's MIG profiles; GPUs 1..3 shared.
class DraMigTest : public DraPluginTest {
 protected:
  void SetUp() override {
    for (const device::DeviceInfo& g : Gpus()) fake_.AddDevice(g);
    fake_.SetMigProfiles(0, TableMigProfiles(Gpus()[0]));
    auto modes = node::ParseGpuModeConfig(
        "version: v1\ngpus:\n  - devices: [0]\n    mode: mig-dynamic\n", "modes.yaml");
    ASSERT_TRUE(modes.has_value()) << modes.error().ToString();
    offers_ = SetUpGpuOffers(&fake_, Gpus(), *modes, {});
    ASSERT_TRUE(offers_[0].Dynamic());
    ASSERT_EQ(offers_[0].mig.size(), 25u);
    mig_backend_ = &fake_;
    DraPluginTest::SetUp();
  }
  std::vector<json> Slices() {
    std::vector<SliceGpu> gpus = SliceGpus();
    for (size_t i = 0; i < gpus.size(); ++i) {
      gpus[i].software = offers_[i].software;
      gpus[i].mig_devices = offers_[i].mig;
    }
    return BuildResourceSlices("node-a", kDriverName, gpus, 1);
  }
  bool MigOn() { return fake_.GetMigMode(0).value().current; }
  size_t Instances() { return fake_.MigInstances(0).value().size(); }

  device::FakeBackend fake_;
};

TEST_F(DraMigTest, AMigClaimGetsExactlyItsInstanceUntilUnprepareAcrossARestart) {
  const std::vector<json> slices = Slices();
  EXPECT_EQ(testing::ValidateResourceSlices(slices), std::vector<std::string>{});
  testing::TestAllocator alloc(kDriverName, slices);
  std::string why;
  auto mig =
      alloc.Allocate({"ns", "m", "u-m", "mig", "type", "mig", {}, {{"profile", "3g.40gb"}}}, &why);
  ASSERT_TRUE(mig) << why;
  EXPECT_EQ((*mig)["status"]["allocation"]["devices"]["results"][0]["device"],
            "gpu-0-mig-3g-40gb-0");
  // GPU 0 offers no software capacity now: the slice goes to GPU 1.
  auto soft = alloc.Allocate(
      {"ns", "s", "u-s", "gpu", "type", "gpu", {{"memory", "1Gi"}, {"cores", "10"}}}, &why);
  ASSERT_TRUE(soft) << why;
  EXPECT_EQ((*soft)["status"]["allocation"]["devices"]["results"][0]["device"], "gpu-1");
  api_.PutResourceClaim(*mig);
  api_.PutResourceClaim(*soft);
  // Devices this node does not have: an illegal start, a MIG device of a shared GPU.
  api_.PutResourceClaim(ClaimOn("bad-start", "u-b1", "gpu-0-mig-3g-40gb-2"));
  api_.PutResourceClaim(ClaimOn("bad-gpu", "u-b2", "gpu-1-mig-1g-10gb-0"));

  // Without the capability minors the MIG claim fails, and its instance is gone again.
  drapb::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "u-m", "m"}}, &resp).ok());
  EXPECT_NE(resp.claims().at("u-m").error().find("nvidia-caps"), std::string::npos)
      << resp.claims().at("u-m").error();
  EXPECT_EQ(Instances(), 0u);
  ASSERT_TRUE(testing::WriteMigMinors(root_, kGpus - 1));

  const std::vector<ClaimArg> all = {{"ns", "u-m", "m"},
                                     {"ns", "u-s", "s"},
                                     {"ns", "u-b1", "bad-start"},
                                     {"ns", "u-b2", "bad-gpu"}};
  ASSERT_TRUE(kubelet_->Prepare(all, &resp).ok());
  auto error_of = [&](const std::string& uid) { return resp.claims().at(uid).error(); };
  EXPECT_NE(error_of("u-b1").find("claim ns/bad-start: status.allocation.devices.results[0]"
                                  ".device: node node-a has no device \"gpu-0-mig-3g-40gb-2\""),
            std::string::npos)
      << error_of("u-b1");
  EXPECT_NE(error_of("u-b2").find("claim ns/bad-gpu: status.allocation.devices.results[0].device"),
            std::string::npos)
      << error_of("u-b2");
  ASSERT_EQ(error_of("u-m"), "");
  ASSERT_EQ(error_of("u-s"), "");
  const auto& d = resp.claims().at("u-m").devices(0);
  const std::vector<device::MigInstance> made = fake_.MigInstances(0).value();
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0].profile, "3g.40gb");
  EXPECT_EQ(made[0].start, 0);
  EXPECT_EQ(d.device_name(), "gpu-0-mig-3g-40gb-0");
  EXPECT_EQ(d.cdi_device_ids(1), "nvidia.com/gpu=" + made[0].uuid);
  EXPECT_TRUE(MigOn());
  // The CDI spec: the MIG UUID visible, the instance's memory the limit, its device nodes.
  const Edits e = ReadCdi(root_ + "/cdi", "u-m");
  EXPECT_EQ(e.env.at("NVIDIA_VISIBLE_DEVICES"), made[0].uuid);
  const std::string limits = ReadFile(e.limits_host_path);
  EXPECT_NE(limits.find("memory.0=" + std::to_string(made[0].memory_bytes)), std::string::npos)
      << limits;
  EXPECT_NE(limits.find("uuid.0=" + made[0].uuid), std::string::npos) << limits;
  const json spec = json::parse(ReadFile(CdiSpecPath(root_ + "/cdi", "u-m")));
  std::set<std::string> nodes;
  for (const json& n : spec["devices"][0]["containerEdits"]["deviceNodes"]) nodes.insert(n["path"]);
  EXPECT_EQ(nodes.count("/dev/nvidia0"), 1u);
  EXPECT_EQ(nodes.count("/dev/nvidiactl"), 1u);
  EXPECT_EQ(std::count_if(nodes.begin(), nodes.end(),
                          [](const std::string& n) {
                            return n.rfind("/dev/nvidia-caps/nvidia-cap", 0) == 0;
                          }),
            2);

  // A retry gives the same answer and makes nothing new.
  const size_t calls = fake_.mig_calls().size();
  drapb::NodePrepareResourcesResponse again;
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "u-m", "m"}}, &again).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(again.claims().at("u-m"),
                                                                 resp.claims().at("u-m")));
  EXPECT_EQ(fake_.mig_calls().size(), calls);

  // A daemon restart, then Unprepare: the instance is destroyed.
  StopDaemon();
  StartDaemon();
  EXPECT_EQ(Instances(), 1u);
  drapb::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(kubelet_->Unprepare({{"ns", "u-m", "m"}}, &un).ok());
  EXPECT_EQ(un.claims().at("u-m").error(), "");
  EXPECT_EQ(Instances(), 0u);
}

// A mig-dynamic GPU runs either kind: a software claim turns MIG off when no instance is left,
// and a MIG claim is refused while a software slice is prepared there.
TEST_F(DraMigTest, ADynamicGpuSwitchesModeOnlyWhenTheOtherKindIsGone) {
  ASSERT_TRUE(testing::WriteMigMinors(root_, kGpus - 1));
  ASSERT_TRUE(MigOn());
  api_.PutResourceClaim(ClaimOn("s", "u-s", "gpu-0"));
  json m = ClaimOn("m", "u-m", "gpu-0-mig-1g-10gb-3");
  m["status"]["allocation"]["devices"]["results"][0].erase("consumedCapacity");
  m["status"]["allocation"]["devices"]["results"][0].erase("shareID");
  api_.PutResourceClaim(m);
  drapb::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "u-s", "s"}}, &resp).ok());
  ASSERT_EQ(resp.claims().at("u-s").error(), "");
  EXPECT_FALSE(MigOn());
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "u-m", "m"}}, &resp).ok());
  EXPECT_NE(resp.claims().at("u-m").error().find("has a software slice prepared for claim ns/s"),
            std::string::npos)
      << resp.claims().at("u-m").error();
  EXPECT_EQ(Instances(), 0u);
  drapb::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(kubelet_->Unprepare({{"ns", "u-s", "s"}}, &un).ok());
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "u-m", "m"}}, &resp).ok());
  ASSERT_EQ(resp.claims().at("u-m").error(), "");
  EXPECT_TRUE(MigOn());
  EXPECT_EQ(Instances(), 1u);
  // And back: a software claim is refused while the instance is there.
  api_.PutResourceClaim(ClaimOn("s2", "u-s2", "gpu-0"));
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "u-s2", "s2"}}, &resp).ok());
  EXPECT_NE(resp.claims().at("u-s2").error().find("has a MIG device prepared for claim ns/m"),
            std::string::npos)
      << resp.claims().at("u-s2").error();
  EXPECT_TRUE(MigOn());
}

}  // namespace
}  // namespace vgpu::dra
