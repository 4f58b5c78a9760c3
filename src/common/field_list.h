// Comma-separated "field=value" lists, as flags such as --tenant-levels and --spill-thrash take
// them ("warn=1,limit=3"). Pure, header-only.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace vgpu {

struct FieldItem {
  std::string field;
  std::string value;
  bool has_value = false;  // the item had a '='
};

// Splits `text` at commas; empty items are skipped. Each item is split at its first '='.
inline std::vector<FieldItem> SplitFieldList(const std::string& text) {
  std::vector<FieldItem> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() : comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      out.push_back({std::move(item), "", false});
    } else {
      out.push_back({item.substr(0, eq), item.substr(eq + 1), true});
    }
  }
  return out;
}

}  // namespace vgpu
