#include "simgpu/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "hw/gpu_models.h"
#include "mig/profiles.h"
#include "simgpu/mig_state.h"

namespace vgpu::simgpu {
namespace {

TEST(SimgpuConfig, DefaultDeviceIsAnH100Like80GiBGpuThatSaysItIsSimulated) {
  DeviceSpec d = DefaultDevice(0);
  EXPECT_EQ(d.memory_bytes, 80ULL << 30);
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.cc_major, 9);
  EXPECT_EQ(d.cc_minor, 0);
  EXPECT_NE(d.name.find("simulated"), std::string::npos) << d.name;
  EXPECT_EQ(d.name, "vgpu simulated H100 (80 GiB)");
  EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u);
  EXPECT_EQ(d.uuid.size(), 40u);
  // Stable across calls, distinct across indices.
  EXPECT_EQ(DefaultDevice(0).uuid, d.uuid);
  EXPECT_NE(DefaultDevice(1).uuid, d.uuid);
  EXPECT_EQ(d.pci_bus, 0x18u);
}

// The presets are hw's models with a SimPreset, their figures hw's; each is accepted by model=
// and named in the message for an unknown model.
TEST(SimgpuConfig, PresetsAreHwsModels) {
  const std::string unknown = ParseConfigText("model=v100\n", "f").error().message();
  int presets = 0;
  for (const hw::GpuModel& m : hw::AllGpuModels()) {
    if (m.sim == nullptr) continue;
    SCOPED_TRACE(std::string(m.key));
    ++presets;
    const DeviceSpec d = DefaultDevice(0, m.sim->model);
    EXPECT_EQ(d.model, m.sim->model);
    EXPECT_EQ(d.name, m.sim->name);
    EXPECT_EQ(d.memory_bytes, static_cast<uint64_t>(m.SimMemoryMib()) << 20);
    EXPECT_EQ(d.sm_count, m.sm_count);
    EXPECT_EQ(d.cc_major, m.cc_major);
    EXPECT_EQ(d.cc_minor, m.cc_minor);
    EXPECT_EQ(d.clock_mhz, m.clock_mhz);
    EXPECT_EQ(d.memory_clock_mhz, m.memory_clock_mhz);
    EXPECT_EQ(d.bus_width_bits, m.bus_width_bits);
    EXPECT_EQ(d.l2_bytes, static_cast<uint64_t>(m.l2_mib) << 20);
    EXPECT_EQ(d.power_w, m.power_w);
    EXPECT_EQ(d.pci_device_id, m.pci_device_ids.front());
    EXPECT_EQ(d.h2d_bytes_per_s, m.sim->host_link_bytes_per_s);
    EXPECT_EQ(d.d2h_bytes_per_s, m.sim->host_link_bytes_per_s);
    // At its own memory a preset is its model's MIG table's GPU (docs/simgpu.md, MIG).
    const mig::ModelTable* table = MigTableFor(d);
    ASSERT_NE(table, nullptr);
    EXPECT_EQ(table->gpu, &m);
    EXPECT_TRUE(ParseConfigText("model=" + std::string(m.sim->model) + "\n", "f").has_value());
    EXPECT_NE(unknown.find(" " + std::string(m.sim->model)), std::string::npos) << unknown;
  }
  EXPECT_EQ(presets, 3);
  // The figures each preset had before they moved to hw.
  EXPECT_EQ(DefaultDevice(0, "h100").memory_bytes, 80ULL << 30);  // not the H100's 81559 MiB
  EXPECT_EQ(DefaultDevice(0, "h100").pci_device_id, 0x233010deu);
  EXPECT_EQ(DefaultDevice(0, "h200").memory_bytes, 143771ULL << 20);
  EXPECT_EQ(DefaultDevice(0, "h200").memory_clock_mhz, 3201);
  EXPECT_EQ(DefaultDevice(0, "h200").bus_width_bits, 6144);
  const DeviceSpec a100 = DefaultDevice(0, "a100");
  EXPECT_EQ(a100.name, "vgpu simulated A100 (80 GiB)");
  EXPECT_EQ(a100.memory_bytes, 80ULL << 30);
  EXPECT_EQ(a100.sm_count, 108);
  EXPECT_EQ(a100.cc_major, 8);
  EXPECT_EQ(a100.clock_mhz, 1410);
  EXPECT_EQ(a100.memory_clock_mhz, 1593);
  EXPECT_EQ(a100.l2_bytes, 40ULL << 20);
  EXPECT_EQ(a100.power_w, 400);
  EXPECT_EQ(a100.pci_device_id, 0x20b210deu);
  EXPECT_EQ(a100.h2d_bytes_per_s, 25'000'000'000u);
  EXPECT_EQ(DefaultDevice(0, "v100").model, "h100");  // an unknown model falls back to h100
}

TEST(SimgpuConfig, UuidRoundTrip) {
  DeviceSpec d = DefaultDevice(3);
  std::array<uint8_t, 16> bytes{};
  ASSERT_TRUE(ParseUuid(d.uuid, &bytes));
  EXPECT_EQ(bytes, d.uuid_bytes);
  EXPECT_FALSE(ParseUuid("GPU-1234", &bytes));
  EXPECT_FALSE(ParseUuid("XXX-01234567-89ab-cdef-0123-456789abcdef", &bytes));
  EXPECT_FALSE(ParseUuid("GPU-01234567-89ab-cdef-0123-456789abcdeg", &bytes));
  EXPECT_TRUE(ParseUuid("GPU-01234567-89ab-cdef-0123-456789ABCDEF", &bytes));
  EXPECT_EQ(bytes[15], 0xef);
}

TEST(SimgpuConfig, ParsesDevicesPerLine) {
  Result<Config> c = ParseConfigText(
      "# two devices\n"
      "model=h200\n"
      "\n"
      "name=\"My \\\"small\\\" GPU\" memory=16GiB sms=20 cc=8.6 pci=0001:3b:00.0 "
      "kernel_time=2ms context_memory=300MiB uuid=GPU-01234567-89ab-cdef-0123-456789abcdef # x\n",
      "devices.conf");
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  ASSERT_EQ(c->devices.size(), 2u);
  const DeviceSpec& a = c->devices[0];
  EXPECT_EQ(a.model, "h200");
  EXPECT_EQ(a.memory_bytes, 143771ULL << 20);
  EXPECT_EQ(a.name, "vgpu simulated H200 (140 GiB)");
  const DeviceSpec& b = c->devices[1];
  EXPECT_EQ(b.name, "My \"small\" GPU");
  EXPECT_EQ(b.memory_bytes, 16ULL << 30);
  EXPECT_EQ(b.sm_count, 20);
  EXPECT_EQ(b.cc_major, 8);
  EXPECT_EQ(b.cc_minor, 6);
  EXPECT_EQ(b.pci_domain, 1u);
  EXPECT_EQ(b.pci_bus, 0x3bu);
  EXPECT_EQ(b.kernel_ns, 2'000'000u);
  EXPECT_EQ(b.context_bytes, 300ULL << 20);
  EXPECT_EQ(b.uuid, "GPU-01234567-89ab-cdef-0123-456789abcdef");
}

TEST(SimgpuConfig, NameFollowsMemoryWhenNotGiven) {
  Result<Config> c = ParseConfigText("memory=24GiB\n", "f");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->devices[0].name, "vgpu simulated H100 (24 GiB)");
}

TEST(SimgpuConfig, ErrorsNameFileLineAndColumn) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"memory=80GiB\nmemory=12XB\n", "f.conf:2:8: memory=\"12XB\": unknown unit"},
      {"sms=0\n", "f.conf:1:5: sms=\"0\": must be between 1 and 1000000"},
      {"  colour=red\n", "f.conf:1:3: colour=\"red\": unknown key"},
      {"model=v100\n", "f.conf:1:7: model=\"v100\": unknown model"},
      {"memory 80GiB\n", "f.conf:1:7: expected key=value"},
      {"name=\"open\n", "f.conf:1:6: unterminated quoted value"},
      {"cc=9\n", "f.conf:1:4: cc=\"9\": must be MAJOR.MINOR"},
      {"pci=18\n", "f.conf:1:5: pci=\"18\": must be DOMAIN:BUS:DEVICE.0"},
      {"kernel_time=5\n", "f.conf:1:13: kernel_time=\"5\": unknown unit"},
      {"h2d_bandwidth=-5GB/s\n", "f.conf:1:15: h2d_bandwidth=\"-5GB/s\": signs are not allowed"},
      {"d2h_bandwidth=20TB/s\n", "d2h_bandwidth=\"20TB/s\": must be at most 10TB/s"},
      {"d2h_bandwidth=10/s\n", "must be 0 or at least 1MB/s"},
      {"link_coupling=0\n", "link_coupling=\"0\": must be between 1 and 100"},
      {"# nothing\n", "f.conf: no devices"},
      {"uuid=GPU-01234567-89ab-cdef-0123-456789abcdef\nuuid=GPU-01234567-89ab-cdef-0123-"
       "456789abcdef\n",
       "same uuid"},
  };
  for (const Case& c : cases) {
    Result<Config> r = ParseConfigText(c.text, "f.conf");
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_NE(r.error().message().find(c.expected), std::string::npos)
        << "got: " << r.error().message() << "\nwant: " << c.expected;
  }
}

TEST(SimgpuConfig, HashDependsOnEveryField) {
  Config a;
  a.devices.push_back(DefaultDevice(0));
  Config b = a;
  EXPECT_EQ(a.Hash(), b.Hash());
  b.devices[0].memory_bytes -= 512;
  EXPECT_NE(a.Hash(), b.Hash());
  b = a;
  b.devices[0].kernel_ns++;
  EXPECT_NE(a.Hash(), b.Hash());
  b = a;
  b.devices[0].d2h_bytes_per_s++;
  EXPECT_NE(a.Hash(), b.Hash());
}

TEST(SimgpuConfig, HostLinkKeys) {
  Result<Config> c =
      ParseConfigText("model=a100\nh2d_bandwidth=12GB/s d2h_bandwidth=0 link_coupling=45\n", "f");
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->devices[0].h2d_bytes_per_s, 25'000'000'000u);
  EXPECT_EQ(c->devices[0].link_coupling_pct, 70u);
  EXPECT_EQ(c->devices[1].h2d_bytes_per_s, 12'000'000'000u);
  EXPECT_EQ(c->devices[1].d2h_bytes_per_s, 0u);
  EXPECT_EQ(c->devices[1].link_coupling_pct, 45u);
}

TEST(SimgpuConfig, MigKeys) {
  Result<Config> c =
      ParseConfigText("model=h200 mig=on mig_layout=3g.71gb@0,1g.18gb@4\nmodel=h100\n", "m.conf");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_TRUE(c->devices[0].mig_enabled);
  EXPECT_EQ(c->devices[0].mig_layout, "3g.71gb@0,1g.18gb@4");
  EXPECT_FALSE(c->devices[1].mig_enabled);
  Result<Config> off = ParseConfigText("model=h200\nmodel=h100\n", "m.conf");
  ASSERT_TRUE(off.has_value());
  EXPECT_NE(c->Hash(), off->Hash());
  struct Case {
    const char* text;
    const char* want;
  } bad[] = {
      {"model=h200 mig=yes\n", "m.conf:1:16: mig=\"yes\": must be on or off"},
      {"model=h200 mig_layout=3g.71gb@0\n", "m.conf:1:1: mig_layout needs mig=on"},
      {"model=h200 mig=on mig_layout=3g.71gb@0,2g.35gb@2\n", "m.conf:1:1: mig_layout: "},
      {"model=h200 mig=on mig_layout=1g.10gb@0\n", "1g.10gb"},
      // Identified exactly: an H100 preset with another memory size is no table's model.
      {"model=h100 memory=8GiB mig=on mig_layout=1g.10gb@0\n",
       "m.conf:1:1: mig_layout: the device has no MIG table: \"vgpu simulated H100 (8 GiB)\" with "
       "8192 MiB, PCI device 0x233010DE: not a MIG model vgpu has a table for"},
  };
  for (const Case& b : bad) {
    Result<Config> r = ParseConfigText(b.text, "m.conf");
    ASSERT_FALSE(r.has_value()) << b.text;
    EXPECT_NE(r.error().message().find(b.want), std::string::npos) << r.error().message();
  }
}

TEST(SimgpuConfig, Environment) {
  unsetenv("VGPU_SIMGPU_CONFIG");
  setenv("VGPU_SIMGPU_DEVICES", "3", 1);
  Result<Config> c = LoadConfigFromEnvironment();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->devices.size(), 3u);
  setenv("VGPU_SIMGPU_DEVICES", "17", 1);
  c = LoadConfigFromEnvironment();
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message().find("VGPU_SIMGPU_DEVICES=\"17\""), std::string::npos);
  unsetenv("VGPU_SIMGPU_DEVICES");
  c = LoadConfigFromEnvironment();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->devices.size(), 1u);
  setenv("VGPU_SIMGPU_CONFIG", "/nonexistent/simgpu.conf", 1);
  c = LoadConfigFromEnvironment();
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message().find("/nonexistent/simgpu.conf"), std::string::npos);
  unsetenv("VGPU_SIMGPU_CONFIG");
}

TEST(SimgpuConfig, TopologyLineAndEnvironment) {
  Result<Config> c = ParseConfigText(
      "topology=pcie4-nvbridge\nmodel=a100\nmodel=a100\n"
      "model=a100\nmodel=a100\n",
      "t.conf");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->devices.size(), 4u);
  ASSERT_TRUE(c->has_topology);
  EXPECT_EQ(c->topology.Token(0, 1), "NV12");
  EXPECT_NE(c->Hash(),
            ParseConfigText("model=a100\nmodel=a100\nmodel=a100\nmodel=a100\n", "t.conf")->Hash());
  c = ParseConfigText("topology=pcie4-nvbridge\nmodel=a100\n", "t.conf");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(),
            "t.conf:1:1: topology pcie4-nvbridge has 4 GPUs but 1 devices are configured");
  c = ParseConfigText("topology=nope\nmodel=a100\n", "t.conf");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("t.conf:1:1: topology=nope: \"nope\" is neither a preset"),
            std::string::npos)
      << c.error().message();
  c = ParseConfigText("topology=dgx2 model=a100\n", "t.conf");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(), "t.conf:1:15: topology= stands alone on its line");
  setenv("VGPU_SIMGPU_TOPOLOGY", "hgx-h200", 1);
  c = LoadConfigFromEnvironment();
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->devices.size(), 8u);  // the topology's GPU count
  EXPECT_TRUE(c->topology.Link(2, 6).via_nvswitch);
  setenv("VGPU_SIMGPU_DEVICES", "2", 1);
  c = LoadConfigFromEnvironment();
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("has 8 GPUs but 2 devices"), std::string::npos);
  unsetenv("VGPU_SIMGPU_DEVICES");
  unsetenv("VGPU_SIMGPU_TOPOLOGY");
}

}  // namespace
}  // namespace vgpu::simgpu
