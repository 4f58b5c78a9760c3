// The CDI specs of prepared claims as a real container runtime reads them: podman with runc
// (Debian's podman 4.3, whose CDI library knows spec versions up to 0.5.0) starts a container
// with `--device vgpu.io/gpu=claim-<uid>` and the container sees exactly the edits of the spec:
// its environment, the limits file read-only with the host's content, the region's directory
// writable (a file written there appears on the host), ld.so.preload, and device nodes.
//
// The image is built here from the static busybox (podman import of a one-binary rootfs; nothing
// is pulled) into a private podman storage under the test's directory. podman reads CDI specs
// from /etc/cdi and /var/run/cdi only, and keeps state in /run, /var/lib/containers and
// /var/tmp whatever its storage flags say: every podman command runs in a private mount
// namespace with a tmpfs over /run, /var/lib and /var/tmp and the test's CDI directory at
// /run/cdi, so nothing of the host is touched.
//
// Skipped, with the reason, where podman, runc or busybox-static is missing, without root, or
// where the sandbox refuses to run any container (the same command without a CDI device fails).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "dra/cdi_spec.h"
#include "dra/driver.h"
#include "dra/resource_slices.h"
#include "slice_rules.h"
#include "support/run_command.h"
#include "support/temp_dir.h"

namespace vgpu::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using vgpu::testing::CommandResult;
using vgpu::testing::RunCommand;

constexpr const char* kImage = "localhost/vgpu-cdi-probe:test";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string Which(const std::string& program) {
  CommandResult r = RunCommand("command -v " + program);
  std::string out = r.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return r.exit_code == 0 ? out : "";
}

std::vector<device::DeviceInfo> Gpus() {
  device::DeviceInfo g;
  g.index = 0;
  g.uuid = "GPU-cdi00000-0000-0000-0000-000000000000";
  g.name = "NVIDIA H100 80GB HBM3";
  g.memory_total_bytes = 80ULL << 30;
  g.sm_count = 132;
  return {g};
}

class StaticClaims final : public ClaimSource {
 public:
  void Put(const json& claim) { claims_[claim["metadata"]["name"].get<std::string>()] = claim; }
  Result<json> GetClaim(const std::string&, const std::string& name) override {
    auto it = claims_.find(name);
    if (it == claims_.end()) return Status::NotFound("no claim " + name);
    return it->second;
  }

 private:
  std::map<std::string, json> claims_;
};

class CdiRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    podman_ = Which("podman");
    if (podman_.empty() || Which("runc").empty()) {
      GTEST_SKIP() << "podman and runc are not installed (scripts/bootstrap installs them)";
    }
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root: podman runs rootful in a private mount namespace here";
    }
    const CommandResult file = RunCommand("file -L /bin/busybox 2>/dev/null || true");
    if (!fs::exists("/bin/busybox") || file.out.find("statically linked") == std::string::npos) {
      GTEST_SKIP() << "no static /bin/busybox for the test image (Debian: busybox-static)";
    }
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    root_ = tmp_.path();
    fs::create_directories(root_ + "/cdi");
    // The image: busybox and its applets, nothing else.
    fs::create_directories(root_ + "/rootfs/bin");
    fs::copy_file("/bin/busybox", root_ + "/rootfs/bin/busybox");
    for (const char* applet : {"sh", "cat", "env", "test", "grep", "echo", "stat", "sort"}) {
      fs::create_symlink("busybox", root_ + "/rootfs/bin/" + applet);
    }
    CommandResult tar = RunCommand("tar -C " + Quote(root_ + "/rootfs") + " -cf " +
                                   Quote(root_ + "/rootfs.tar") + " .");
    ASSERT_EQ(tar.exit_code, 0) << tar.err;
    CommandResult import =
        Isolated(Podman() + " import " + Quote(root_ + "/rootfs.tar") + " " + kImage + " 2>&1");
    if (import.exit_code != 0) {
      GTEST_SKIP() << "podman cannot import an image here: " << import.out;
    }
    // The sandbox may refuse containers altogether (no namespaces, cgroups, mounts): then the
    // test cannot say anything about CDI.
    CommandResult plain = Run("", "true");
    if (plain.exit_code != 0) {
      GTEST_SKIP() << "this machine cannot run a container (exit " << plain.exit_code
                   << "): " << plain.out << plain.err;
    }
  }
  // A failed test's directory stays for a look.
  void TearDown() override {
    if (HasFailure()) tmp_.Keep();
  }

  // `command` in a private mount namespace (see the top of the file).
  CommandResult Isolated(const std::string& command) {
    const std::string inner =
        "mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /var/lib && "
        "mount -t tmpfs tmpfs /var/tmp && mkdir /run/cdi && mount --bind " +
        Quote(root_ + "/cdi") + " /run/cdi && " + command;
    return RunCommand("unshare -m sh -c " + Quote(inner));
  }

  // podman on the test's own storage; runc; no network, events or systemd.
  std::string Podman() const {
    return Quote(podman_) + " --root " + Quote(root_ + "/storage") + " --runroot " +
           Quote(root_ + "/run") + " --tmpdir " + Quote(root_ + "/tmp") +
           " --storage-driver vfs --runtime runc --cgroup-manager cgroupfs --events-backend none";
  }

  // Runs `script` in a container of the test image with CDI device `device` ("" for none),
  // the specs of root_/cdi seen at /run/cdi. Limits are set to below the host's (raising one
  // needs CAP_SYS_RESOURCE, which a sandbox may lack).
  CommandResult Run(const std::string& device, const std::string& script) {
    std::string run =
        Podman() + " run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024";
    if (!device.empty()) run += " --device " + device;
    run += std::string(" ") + kImage + " sh -c " + Quote(script);
    return Isolated(run);
  }

  DriverOptions Options() const {
    DriverOptions o;
    o.pool = "node-a";
    o.cdi_dir = root_ + "/cdi";
    o.state_dir = root_ + "/state";
    o.slices.host_libvgpu = root_ + "/libvgpu.so";
    o.slices.container_libvgpu = "/usr/local/vgpu/libvgpu.so";
    o.slices.arbiter_dir = root_ + "/arbiter";
    return o;
  }

  std::string podman_;
  // Under /tmp whatever $TMPDIR says, the name short: podman's run root (--runroot) holds its
  // unix sockets (a socket's path holds at most 107 bytes).
  vgpu::testing::TempDir tmp_{"vgpu-cdirt", "/tmp"};
  std::string root_;
};

// A software slice of 4 GiB and 30 % prepared by the driver: the runtime applies its spec
// (cdiVersion 0.3.0) and the container gets every edit.
TEST_F(CdiRuntimeTest, APreparedClaimsSpecIsAppliedWhole) {
  std::ofstream(root_ + "/libvgpu.so") << "stands in for the library\n";
  fs::create_directories(root_ + "/arbiter");
  std::vector<SliceGpu> slice_gpus(1);
  slice_gpus[0].info = Gpus()[0];
  FillFromProductName(&slice_gpus[0]);
  testing::TestAllocator alloc(kDriverName,
                               BuildResourceSlices("node-a", kDriverName, slice_gpus, 1));
  std::string why;
  auto claim = alloc.Allocate(
      {"ns", "train", "uid-rt-1", "gpu", "type", "gpu", {{"memory", "4Gi"}, {"cores", "30"}}},
      &why);
  ASSERT_TRUE(claim) << why;
  StaticClaims claims;
  claims.Put(*claim);
  Driver driver(Options(), Gpus(), &claims, nullptr);
  ASSERT_TRUE(driver.Init().ok());
  auto prepared = driver.Prepare({{"ns", "uid-rt-1", "train"}});
  ASSERT_EQ(prepared["uid-rt-1"].error, "");

  const json spec = json::parse(ReadFile(CdiSpecPath(root_ + "/cdi", "uid-rt-1")));
  EXPECT_EQ(spec["cdiVersion"], "0.3.0");
  const json& edits = spec["devices"][0]["containerEdits"];
  std::string limits_host, region_dir, preload_host;
  for (const json& m : edits["mounts"]) {
    if (m["containerPath"] == "/etc/vgpu/limits") limits_host = m["hostPath"];
    if (m["containerPath"] == "/etc/ld.so.preload") preload_host = m["hostPath"];
    if (m["options"][0] == "rw" && m["containerPath"] != Options().slices.arbiter_dir) {
      region_dir = m["containerPath"];
    }
  }
  ASSERT_FALSE(limits_host.empty()) << spec.dump(2);
  ASSERT_FALSE(region_dir.empty()) << spec.dump(2);
  ASSERT_FALSE(preload_host.empty()) << spec.dump(2);

  const CommandResult r =
      Run("vgpu.io/gpu=claim-uid-rt-1",
          "echo '--- env'; env | sort; echo '--- limits'; cat /etc/vgpu/limits; echo '--- preload';"
          " cat /etc/ld.so.preload; echo '--- checks';"
          " (echo x >> /etc/vgpu/limits) 2>/dev/null && echo limits-writable || echo limits-ro;"
          " echo from-container > " +
              region_dir + "/probe && echo region-rw");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string out = r.out;
  for (const json& e : edits["env"]) {
    EXPECT_NE(out.find("\n" + e.get<std::string>() + "\n"), std::string::npos)
        << e << " not in the container's environment:\n"
        << out;
  }
  const std::string limits = ReadFile(limits_host);
  ASSERT_FALSE(limits.empty());
  EXPECT_NE(out.find("--- limits\n" + limits), std::string::npos) << out;
  EXPECT_NE(limits.find("memory.0=4294967296"), std::string::npos) << limits;
  EXPECT_NE(out.find("--- preload\n" + ReadFile(preload_host)), std::string::npos) << out;
  EXPECT_NE(out.find("limits-ro"), std::string::npos) << out;
  EXPECT_NE(out.find("region-rw"), std::string::npos) << out;
  EXPECT_EQ(ReadFile(region_dir + "/probe"), "from-container\n");
}

// Device nodes (a MIG device's parent and capability nodes): at their host paths they need no
// hostPath (0.3.0); at another path they need deviceNodes.hostPath (0.5.0). The runtime makes
// each node in the container from the host's.
TEST_F(CdiRuntimeTest, DeviceNodesAreMadeInTheContainer) {
  const std::string same = root_ + "/dev-probe0";
  ASSERT_EQ(::mknod(same.c_str(), S_IFCHR | 0666, makedev(1, 5)), 0) << "mknod " << same;
  node::ContainerAllocation allocation;
  allocation.envs["NVIDIA_VISIBLE_DEVICES"] = "MIG-probe";
  allocation.devices.push_back({same, same, "rw"});
  ASSERT_TRUE(WriteCdiSpec(root_ + "/cdi", "uid-rt-2", allocation).ok());
  EXPECT_EQ(json::parse(ReadFile(CdiSpecPath(root_ + "/cdi", "uid-rt-2")))["cdiVersion"], "0.3.0");
  CommandResult r =
      Run("vgpu.io/gpu=claim-uid-rt-2", "echo $NVIDIA_VISIBLE_DEVICES; stat -c '%F %t:%T' " + same);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("MIG-probe\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("character special file 1:5"), std::string::npos) << r.out;

  allocation.devices.push_back({"/dev/nvidia-caps/nvidia-cap9", "/dev/null", "rw"});
  ASSERT_TRUE(WriteCdiSpec(root_ + "/cdi", "uid-rt-3", allocation).ok());
  const json spec = json::parse(ReadFile(CdiSpecPath(root_ + "/cdi", "uid-rt-3")));
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  r = Run("vgpu.io/gpu=claim-uid-rt-3",
          "stat -c '%F %t:%T' /dev/nvidia-caps/nvidia-cap9; echo ok > "
          "/dev/nvidia-caps/nvidia-cap9 && echo writable");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("character special file 1:3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("writable"), std::string::npos) << r.out;

  // The version the specs used to say, for the record: a runtime whose CDI library predates it
  // refuses the device ("unresolvable CDI devices").
  json newer = spec;
  newer["cdiVersion"] = "0.6.0";
  std::ofstream(CdiSpecPath(root_ + "/cdi", "uid-rt-3")) << newer.dump(2);
  const CommandResult old = Run("vgpu.io/gpu=claim-uid-rt-3", "true");
  std::cout << "the same spec as cdiVersion 0.6.0: exit " << old.exit_code << " " << old.err;
}

}  // namespace
}  // namespace vgpu::dra
