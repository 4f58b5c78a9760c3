#include "dra/gpu_config.h"

#include <map>

namespace vgpu::dra {

using nlohmann::json;

Result<slice::ComputeSettings> ParseGpuConfig(const json& parameters, const std::string& where) {
  if (!parameters.is_object()) return Status::InvalidArgument(where + ": must be an object");
  auto text_of = [&](const char* field) -> Result<std::string> {
    const json& v = parameters[field];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
    return Status::InvalidArgument(where + "." + field + ": must be a string or an integer");
  };
  // JSON field -> key of slice::ParseComputeSettings.
  static const std::map<std::string, std::string> kFields = {
      {"priority", "priority"}, {"guarantee", "guarantee"},   {"mode", "mode"},
      {"weight", "weight"},     {"timeSlice", "time-slice"},  {"copyH2D", "copy-h2d"},
      {"copyD2H", "copy-d2h"},  {"copyBorrow", "copy-borrow"}};
  slice::ComputeSettings settings;
  for (const auto& [field, value] : parameters.items()) {
    if (field == "apiVersion") {
      if (value != kConfigApiVersion) {
        return Status::InvalidArgument(where + ".apiVersion: must be " +
                                       std::string(kConfigApiVersion) + ", got " + value.dump());
      }
      continue;
    }
    if (field == "kind") {
      if (value != kConfigKind) {
        return Status::InvalidArgument(where + ".kind: must be " + std::string(kConfigKind) +
                                       ", got " + value.dump());
      }
      continue;
    }
    auto it = kFields.find(field);
    if (it == kFields.end()) {
      return Status::InvalidArgument(where + "." + field +
                                     ": unknown field (priority, guarantee, mode, weight, "
                                     "timeSlice, copyH2D, copyD2H, copyBorrow)");
    }
    auto v = text_of(field.c_str());
    if (!v) return v.error();
    if (v->find_first_of(",;=") != std::string::npos) {
      return Status::InvalidArgument(where + "." + field + ": invalid value \"" + *v + "\"");
    }
    auto one = slice::ParseComputeSettings(it->second + "=" + *v, where + "." + field);
    if (!one) return one.error();
    settings.OverrideWith(*one);
  }
  if (!parameters.contains("apiVersion") || !parameters.contains("kind")) {
    return Status::InvalidArgument(where + ": apiVersion " + std::string(kConfigApiVersion) +
                                   " and kind " + std::string(kConfigKind) + " are required");
  }
  return settings;
}

}  // namespace vgpu::dra
