#include "topo/topo_json.h"

#include <cstdio>

namespace vgpu::topo {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string TopologyJson(const Topology& t, const BandwidthModel& model) {
  std::string out = "{\"gpus\":[";
  for (int a = 0; a < t.size(); ++a) {
    if (a > 0) out += ",";
    out += "{\"index\":" + std::to_string(a) +
           ",\"numa_node\":" + std::to_string(t.Gpu(a).numa_node) +
           ",\"cpu_affinity\":" + Quote(t.Gpu(a).cpu_affinity) + "}";
  }
  out += "],\"pcie_generation\":" + std::to_string(t.pcie_generation) +
         ",\"pcie_width\":" + std::to_string(t.pcie_width) +
         ",\"pcie_from_driver\":" + (t.pcie_from_driver ? "true" : "false");
  out += ",\"links\":[";
  bool first = true;
  for (int a = 0; a < t.size(); ++a) {
    for (int b = a + 1; b < t.size(); ++b) {
      const PairLink& l = t.Link(a, b);
      char bw[32];
      std::snprintf(bw, sizeof bw, "%.1f",
                    PairBandwidth(model, l, t.pcie_generation, t.pcie_width));
      out += first ? "" : ",";
      first = false;
      out += "{\"a\":" + std::to_string(a) + ",\"b\":" + std::to_string(b) +
             ",\"token\":" + Quote(t.Token(a, b)) + ",\"nvlinks\":" + std::to_string(l.nvlinks) +
             ",\"nvswitch\":" + (l.via_nvswitch ? "true" : "false") +
             ",\"pcie\":" + Quote(std::string(PcieLevelToken(l.pcie))) +
             ",\"pcie_inferred\":" + (l.pcie_inferred ? "true" : "false") +
             ",\"p2p\":" + (l.p2p ? "true" : "false") + ",\"bandwidth_gbps\":" + bw + "}";
    }
  }
  out += "]}\n";
  return out;
}

}  // namespace vgpu::topo
