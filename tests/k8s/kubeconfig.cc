#include "kubeconfig.h"

#include "k8s/api/encoding.h"
#include "test_pki.h"

namespace vgpu::k8s::testing {

std::string WriteKubeconfig(const FakeApiServer& api, const std::string& dir) {
  const std::string path = dir + "/kubeconfig";
  WriteFile(path,
            "apiVersion: v1\nkind: Config\ncurrent-context: test\nclusters:\n- name: fake\n"
            "  cluster:\n    server: " +
                api.url() +
                "\n    certificate-authority-data: " + Base64Encode(api.pki().ca_cert_pem) +
                "\ncontexts:\n- name: test\n  context: {cluster: fake, user: sa}\nusers:\n"
                "- name: sa\n  user:\n    token: test-token\n");
  return path;
}

}  // namespace vgpu::k8s::testing
