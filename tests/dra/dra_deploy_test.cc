// The DaemonSets' probes ask the daemons' real endpoints: `vgpu dra` and `vgpu node` serve
// /healthz and /readyz on the address of their --health-listen / --metrics-listen flag
// (tests/dra/dra_cli_test.cc and tests/node/node_cli_test.cc call them), and the probes name
// the container port that address listens on.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

namespace vgpu::dra {
namespace {

struct Probed {
  std::string listen_port;  // from the flag, ":9395" -> "9395"
  std::string port_name;    // of the container port with that number
  std::string readiness, liveness;
  std::string readiness_port, liveness_port;
};

Probed Read(const std::string& file, const std::string& container, const std::string& flag) {
  Probed p;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(std::string(VGPU_SOURCE_DIR) + "/" + file)) {
    if (!doc["kind"] || doc["kind"].as<std::string>() != "DaemonSet") continue;
    for (const YAML::Node& c : doc["spec"]["template"]["spec"]["containers"]) {
      if (c["name"].as<std::string>() != container) continue;
      for (const YAML::Node& a : c["args"]) {
        const std::string arg = a.as<std::string>();
        if (arg.rfind(flag + "=", 0) == 0) p.listen_port = arg.substr(arg.rfind(':') + 1);
      }
      for (const YAML::Node& port : c["ports"]) {
        if (std::to_string(port["containerPort"].as<int>()) == p.listen_port) {
          p.port_name = port["name"].as<std::string>();
        }
      }
      p.readiness = c["readinessProbe"]["httpGet"]["path"].as<std::string>("");
      p.readiness_port = c["readinessProbe"]["httpGet"]["port"].as<std::string>("");
      p.liveness = c["livenessProbe"]["httpGet"]["path"].as<std::string>("");
      p.liveness_port = c["livenessProbe"]["httpGet"]["port"].as<std::string>("");
    }
  }
  return p;
}

TEST(DeployProbes, AskTheDaemonsOwnEndpoints) {
  for (const auto& [file, container, flag] :
       {std::tuple<std::string, std::string, std::string>{"deploy/dra/daemonset.yaml", "vgpu-dra",
                                                          "--health-listen"},
        {"deploy/node/daemonset.yaml", "vgpu-node", "--metrics-listen"}}) {
    const Probed p = Read(file, container, flag);
    EXPECT_FALSE(p.listen_port.empty()) << file << ": no " << flag;
    EXPECT_FALSE(p.port_name.empty()) << file << ": no container port " << p.listen_port;
    EXPECT_EQ(p.readiness, "/readyz") << file;
    EXPECT_EQ(p.liveness, "/healthz") << file;
    EXPECT_EQ(p.readiness_port, p.port_name) << file;
    EXPECT_EQ(p.liveness_port, p.port_name) << file;
  }
}

}  // namespace
}  // namespace vgpu::dra
