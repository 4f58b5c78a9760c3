#include "node/metrics/process_owner.h"

#include <cctype>
#include <fstream>
#include <sstream>

namespace vgpu::node {
namespace {

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Finds "pod" followed by a UUID written with '-' or '_' separators.
std::optional<std::string> FindPodUid(const std::string& path) {
  static constexpr int kGroups[] = {8, 4, 4, 4, 12};
  for (size_t pos = path.find("pod"); pos != std::string::npos; pos = path.find("pod", pos + 1)) {
    size_t i = pos + 3;
    std::string uid;
    bool ok = true;
    for (int g = 0; g < 5 && ok; ++g) {
      for (int k = 0; k < kGroups[g]; ++k, ++i) {
        if (i >= path.size() || !IsHex(path[i])) {
          ok = false;
          break;
        }
        uid += static_cast<char>(std::tolower(static_cast<unsigned char>(path[i])));
      }
      if (!ok) break;
      if (g < 4) {
        if (i >= path.size() || (path[i] != '-' && path[i] != '_')) {
          ok = false;
          break;
        }
        uid += '-';
        ++i;
      }
    }
    if (ok) return uid;
  }
  return std::nullopt;
}

std::string ContainerIdOf(const std::string& path) {
  std::string last = path.substr(path.rfind('/') + 1);
  for (const char* prefix : {"cri-containerd-", "docker-", "crio-", "cri-o-"}) {
    std::string p(prefix);
    if (last.compare(0, p.size(), p) == 0) last = last.substr(p.size());
  }
  if (last.size() > 6 && last.compare(last.size() - 6, 6, ".scope") == 0) {
    last.resize(last.size() - 6);
  }
  if (last.size() < 12) return "";
  for (char c : last) {
    if (!IsHex(c)) return "";
  }
  return last;
}

}  // namespace

std::optional<ProcessOwner> ParseCgroupOwner(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // hierarchy-id:controllers:path
    size_t second = line.find(':', line.find(':') + 1);
    if (second == std::string::npos) continue;
    std::string path = line.substr(second + 1);
    auto uid = FindPodUid(path);
    if (!uid) continue;
    return ProcessOwner{*uid, ContainerIdOf(path)};
  }
  return std::nullopt;
}

std::optional<ProcessOwner> OwnerOfProcess(const std::string& proc_root, uint32_t pid) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/cgroup");
  if (!in) return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  return ParseCgroupOwner(buf.str());
}

}  // namespace vgpu::node
