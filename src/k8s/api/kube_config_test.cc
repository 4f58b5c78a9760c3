#include "k8s/api/kube_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "k8s/api/encoding.h"
#include "support/temp_dir.h"

namespace vgpu::k8s {
namespace {

namespace fs = std::filesystem;

class KubeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
  }
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  vgpu::testing::TempDir tmp_{
      "vgpu-kubeconfig-" +
      std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())};
  fs::path dir_;
};

constexpr const char* kTwoContexts = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: Q0EtUEVN
- name: dev-cluster
  cluster:
    server: https://dev.example:443
    certificate-authority: ca.pem
    insecure-skip-tls-verify: true
contexts:
- name: prod
  context: {cluster: prod-cluster, user: admin, namespace: gpu}
- name: dev
  context: {cluster: dev-cluster, user: dev}
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: dev
  user:
    tokenFile: token.txt
)";

TEST_F(KubeConfigTest, CurrentContextWithInlineData) {
  const std::string path = Write("config", kTwoContexts);
  auto c = LoadKubeconfig(path);
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "CA-PEM");
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_EQ(c->namespace_, "gpu");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
}

TEST_F(KubeConfigTest, NamedContextWithRelativeFiles) {
  Write("ca.pem", "FILE-CA");
  Write("token.txt", "s3cret\n");
  const std::string path = Write("config", kTwoContexts);
  auto c = LoadKubeconfig(path, "dev");
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->server, "https://dev.example:443");
  EXPECT_EQ(c->ca_pem, "FILE-CA");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->token, "s3cret");
  EXPECT_EQ(c->token_file, (dir_ / "token.txt").string());
}

TEST_F(KubeConfigTest, ErrorsNameFileLineAndColumn) {
  const std::string path = Write("config", R"(current-context: a
contexts:
- name: a
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster: {server: "https://x"}
users:
- name: u
  user:
    exec: {command: aws}
)");
  auto c = LoadKubeconfig(path);
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message().find(path + ":11:11"), std::string::npos) << c.error().message();
  EXPECT_NE(c.error().message().find("'exec'"), std::string::npos);

  auto missing = LoadKubeconfig(path, "nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("no entry named 'nope'"), std::string::npos);

  const std::string bad = Write("bad", "clusters: [\n  - {name: x\n");
  auto syntax = LoadKubeconfig(bad);
  ASSERT_FALSE(syntax.has_value());
  EXPECT_EQ(syntax.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(syntax.error().message().find(bad + ":"), std::string::npos);

  auto absent = LoadKubeconfig((dir_ / "absent").string());
  ASSERT_FALSE(absent.has_value());
  EXPECT_EQ(absent.error().code(), StatusCode::kNotFound);
}

TEST_F(KubeConfigTest, MissingReferencedFileNamesTheField) {
  const std::string path = Write("config", kTwoContexts);
  auto c = LoadKubeconfig(path, "dev");  // ca.pem and token.txt not written
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message().find("certificate-authority"), std::string::npos);
}

TEST_F(KubeConfigTest, InClusterReadsServiceAccount) {
  Write("token", "tok\n");
  Write("ca.crt", "CA");
  Write("namespace", "vgpu-system");
  auto c = InClusterConfigFrom("10.96.0.1", "443", dir_.string());
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token, "tok");
  EXPECT_EQ(c->token_file, (dir_ / "token").string());
  EXPECT_EQ(c->ca_pem, "CA");
  EXPECT_EQ(c->namespace_, "vgpu-system");
  auto v6 = InClusterConfigFrom("fd00::1", "6443", dir_.string());
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->server, "https://[fd00::1]:6443");
  auto none = InClusterConfigFrom("", "", dir_.string());
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace vgpu::k8s
