// WriteKubeconfig: a kubeconfig file through which a `vgpu` process reaches a FakeApiServer.
#pragma once

#include <string>

#include "fake_api_server.h"

namespace vgpu::k8s::testing {

// Writes `dir`/kubeconfig and returns its path. It has one cluster (the server's URL, its test
// CA as certificate-authority-data), one user with the bearer token "test-token", and one
// context, the current one, joining them.
std::string WriteKubeconfig(const FakeApiServer& api, const std::string& dir);

}  // namespace vgpu::k8s::testing
