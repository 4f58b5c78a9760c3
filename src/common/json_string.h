// JSON string literals for output written by hand (without a JSON library's DOM): one escape for
// every room that prints JSON.
//
// Contract: quoted, with '"' and '\\' escaped, \n \r \t as such and every other control byte
// (below 0x20) as \u00XX; all other bytes (UTF-8 included) as they are, which is what
// nlohmann::json's dump() writes for valid UTF-8. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace vgpu {

// Appends `s` as a JSON string literal (quoted, escaped).
void AppendJsonString(std::string* out, std::string_view s);

// `s` as a JSON string literal (quoted, escaped).
inline std::string JsonString(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

}  // namespace vgpu
