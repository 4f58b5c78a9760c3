// The Prometheus text exposition format (0.0.4), the pieces the extender's and the webhook's
// /metrics share: a HELP/TYPE header, one sample line, an escaped label value.
//
// Contract: RenderHeader and RenderSample append to *out; a sample's labels are the text between
// the braces, already escaped (EscapeLabel: backslash, quote and newline), "" for none; values
// print with 17 significant digits.
#pragma once

#include <string>
#include <string_view>

namespace vgpu::k8s {

std::string EscapeLabel(std::string_view v);
void RenderHeader(std::string* out, std::string_view name, std::string_view type,
                  std::string_view help);
void RenderSample(std::string* out, std::string_view name, std::string_view labels, double value);

}  // namespace vgpu::k8s
