#include "k8s/api/prometheus_text.h"

#include <cstdio>

namespace vgpu::k8s {

std::string EscapeLabel(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void RenderHeader(std::string* out, std::string_view name, std::string_view type,
                  std::string_view help) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

void RenderSample(std::string* out, std::string_view name, std::string_view labels, double value) {
  *out += name;
  if (!labels.empty()) {
    *out += '{';
    *out += labels;
    *out += '}';
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, " %.17g\n", value);
  *out += buf;
}

}  // namespace vgpu::k8s
