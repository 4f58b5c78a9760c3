// Test helper: a limits-file text and environment entries combined as libvgpu.so combines them.
#pragma once

#include <string>
#include <vector>

#include "intercept/config/config.h"

namespace vgpu::intercept {

struct CombinedConfig {
  Config config;
  ConfigErrors errors;
};

// `file_text` "" stands for no file (an empty file is rejected: limits_file_test.cc); `visible`
// is the number of CUDA_VISIBLE_DEVICES entries.
inline CombinedConfig Combine(const std::string& file_text, std::vector<std::string> env_entries,
                              int visible = 0) {
  CombinedConfig r;
  SourceSettings file, env;
  if (!file_text.empty()) {
    ParseLimitsFile(file_text.data(), file_text.size(), "limits", &file, &r.errors);
  }
  std::vector<char*> envp;
  for (std::string& e : env_entries) envp.push_back(e.data());
  envp.push_back(nullptr);
  ParseEnvironment(envp.data(), &env, &r.config, &r.errors);
  CombineSettings(file, env, visible, 1000, &r.config, &r.errors);
  return r;
}

inline std::string Errors(const ConfigErrors& e) {
  std::string s;
  for (int i = 0; i < e.count; ++i) s += std::string(e.messages[i]) + "\n";
  return s;
}

}  // namespace vgpu::intercept
