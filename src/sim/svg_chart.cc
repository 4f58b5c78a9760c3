#include "sim/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace vgpu::sim {
namespace {

constexpr double kWidth = 960, kHeight = 560;
constexpr double kLeft = 72, kRight = 210, kTop = 70, kBottom = 64;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string RenderChart(const std::vector<PolicySummary>& summaries, const ChartOptions& opt) {
  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  double y_max = 5;
  for (const PolicySummary& s : summaries) {
    for (const LevelStats& l : s.levels) {
      if (l.arrived_pct >= opt.x_min && l.arrived_pct <= opt.x_max) {
        y_max = std::max(y_max, l.unallocated.mean);
      }
    }
  }
  y_max = std::max(y_max, 100.0 - opt.x_min);
  y_max = std::ceil(y_max / 5.0) * 5.0;
  const double x_span = std::max(1, opt.x_max - opt.x_min);
  auto X = [&](double x) { return kLeft + (x - opt.x_min) / x_span * plot_w; };
  auto Y = [&](double y) { return kTop + (1.0 - y / y_max) * plot_h; };

  std::string svg;
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(kWidth) + "\" height=\"" +
         Num(kHeight) + "\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(kHeight) +
         "\" font-family=\"Helvetica, Arial, sans-serif\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + Num(kLeft) + "\" y=\"30\" font-size=\"18\" font-weight=\"bold\">" +
         Escape(opt.title) + "</text>\n";
  svg += "<text x=\"" + Num(kLeft) + "\" y=\"52\" font-size=\"13\" fill=\"#555\">" +
         Escape(opt.subtitle) + "</text>\n";

  // Grid and ticks.
  svg += "<g stroke=\"#e5e5e5\" stroke-width=\"1\">\n";
  for (int x = opt.x_min; x <= opt.x_max; ++x) {
    if (x % 5 != 0) continue;
    svg += "<line x1=\"" + Num(X(x)) + "\" y1=\"" + Num(kTop) + "\" x2=\"" + Num(X(x)) +
           "\" y2=\"" + Num(kTop + plot_h) + "\"/>\n";
  }
  for (double y = 0; y <= y_max + 1e-9; y += 5) {
    svg += "<line x1=\"" + Num(kLeft) + "\" y1=\"" + Num(Y(y)) + "\" x2=\"" + Num(kLeft + plot_w) +
           "\" y2=\"" + Num(Y(y)) + "\"/>\n";
  }
  svg += "</g>\n<g font-size=\"12\" fill=\"#333\">\n";
  for (int x = opt.x_min; x <= opt.x_max; ++x) {
    if (x % 5 != 0) continue;
    svg += "<text x=\"" + Num(X(x)) + "\" y=\"" + Num(kTop + plot_h + 18) +
           "\" text-anchor=\"middle\">" + std::to_string(x) + "</text>\n";
  }
  for (double y = 0; y <= y_max + 1e-9; y += 5) {
    svg += "<text x=\"" + Num(kLeft - 8) + "\" y=\"" + Num(Y(y) + 4) + "\" text-anchor=\"end\">" +
           Num(y).substr(0, Num(y).size() - 2) + "</text>\n";
  }
  svg += "</g>\n";
  svg += "<rect x=\"" + Num(kLeft) + "\" y=\"" + Num(kTop) + "\" width=\"" + Num(plot_w) +
         "\" height=\"" + Num(plot_h) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  svg += "<text x=\"" + Num(kLeft + plot_w / 2) + "\" y=\"" + Num(kHeight - 18) +
         "\" font-size=\"14\" text-anchor=\"middle\">Arrived workload (% of GPU capacity)</text>\n";
  svg += "<text transform=\"translate(22," + Num(kTop + plot_h / 2) +
         ") rotate(-90)\" font-size=\"14\" text-anchor=\"middle\">Unallocated GPUs (%)</text>\n";

  // Ideal line: every arrived pod placed.
  std::string ideal;
  for (int x = opt.x_min; x <= opt.x_max; ++x) {
    ideal += Num(X(x)) + "," + Num(Y(std::max(0.0, 100.0 - x))) + " ";
  }
  svg += "<polyline points=\"" + ideal +
         "\" fill=\"none\" stroke=\"#999\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n";

  // One line per policy.
  double legend_y = kTop + 8;
  const double legend_x = kLeft + plot_w + 18;
  for (size_t i = 0; i < summaries.size(); ++i) {
    const PolicySummary& s = summaries[i];
    const std::string color = kColors[i % (sizeof kColors / sizeof kColors[0])];
    std::string points;
    for (const LevelStats& l : s.levels) {
      if (l.arrived_pct < opt.x_min || l.arrived_pct > opt.x_max) continue;
      points += Num(X(l.arrived_pct)) + "," + Num(Y(l.unallocated.mean)) + " ";
    }
    svg += "<polyline points=\"" + points + "\" fill=\"none\" stroke=\"" + color +
           "\" stroke-width=\"2.2\" stroke-linejoin=\"round\"><title>" + Escape(s.policy) +
           "</title></polyline>\n";
    std::string label = s.policy;
    if (const LevelStats* at100 = FindLevel(s, 100)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " (%.2f%%)", at100->unallocated.mean);
      label += buf;
    }
    svg += "<line x1=\"" + Num(legend_x) + "\" y1=\"" + Num(legend_y) + "\" x2=\"" +
           Num(legend_x + 24) + "\" y2=\"" + Num(legend_y) + "\" stroke=\"" + color +
           "\" stroke-width=\"3\"/>\n";
    svg += "<text x=\"" + Num(legend_x + 30) + "\" y=\"" + Num(legend_y + 4) +
           "\" font-size=\"13\">" + Escape(label) + "</text>\n";
    legend_y += 22;
  }
  svg += "<line x1=\"" + Num(legend_x) + "\" y1=\"" + Num(legend_y) + "\" x2=\"" +
         Num(legend_x + 24) + "\" y2=\"" + Num(legend_y) +
         "\" stroke=\"#999\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n";
  svg += "<text x=\"" + Num(legend_x + 30) + "\" y=\"" + Num(legend_y + 4) +
         "\" font-size=\"13\" fill=\"#555\">ideal (all placed)</text>\n";
  svg += "<text x=\"" + Num(legend_x) + "\" y=\"" + Num(legend_y + 30) +
         "\" font-size=\"11\" fill=\"#777\">(value at 100% arrived)</text>\n";
  svg += "</svg>\n";
  return svg;
}

}  // namespace vgpu::sim
