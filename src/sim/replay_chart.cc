#include "sim/replay_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/replay_options.h"

namespace vgpu::sim {
namespace {

constexpr double kWidth = 980, kPanelH = 250, kHeader = 74, kGap = 52;
constexpr double kLeft = 70, kRight = 230;
constexpr const char* kShared = "#1f77b4";
constexpr const char* kWhole = "#d62728";

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string Label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '"') {
      out += "&quot;";
    } else {
      out += c;
    }
  }
  return out;
}

// A round step giving about `ticks` intervals over [0, max].
double NiceStep(double max, int ticks) {
  const double raw = std::max(max, 1e-9) / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

const ReplayRun* FindRun(const ReplayExperiment& e, const std::string& policy, QueueDiscipline q,
                         size_t load, uint64_t seed, Allocation a) {
  for (const ReplayRun& r : e.runs) {
    if (r.policy == policy && r.queue == q && r.load == load && r.seed == seed &&
        r.allocation == a) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace

std::string RenderReplayChart(const ReplayExperiment& e, const ReplayPlan& plan,
                              const std::string& title) {
  struct Panel {
    QueueDiscipline queue;
    size_t load;
  };
  std::vector<Panel> panels;
  for (QueueDiscipline q : plan.queues) {
    for (size_t l = 0; l < plan.loads.size() && panels.size() < kMaxPanels; ++l) {
      panels.push_back({q, l});
    }
  }
  const size_t all_panels = plan.queues.size() * plan.loads.size();
  const double height = kHeader + static_cast<double>(panels.size()) * (kPanelH + kGap) + 10;
  const double plot_w = kWidth - kLeft - kRight;
  const std::string& policy = plan.policies.front();
  const uint64_t seed = plan.seeds.front();

  std::string svg;
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(kWidth) + "\" height=\"" +
         Num(height) + "\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(height) +
         "\" font-family=\"Helvetica, Arial, sans-serif\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + Num(kLeft) + "\" y=\"28\" font-size=\"18\" font-weight=\"bold\">" +
         Escape(title) + "</text>\n";
  std::string sub = "policy " + policy + ", seed " + std::to_string(seed) +
                    "; allocated GPU % of the cluster over time";
  if (all_panels > panels.size()) {
    sub += " (first " + std::to_string(panels.size()) + " of " + std::to_string(all_panels) +
           " panels)";
  }
  svg += "<text x=\"" + Num(kLeft) + "\" y=\"50\" font-size=\"13\" fill=\"#555\">" + Escape(sub) +
         "</text>\n";

  for (size_t p = 0; p < panels.size(); ++p) {
    const Panel& panel = panels[p];
    const double top = kHeader + static_cast<double>(p) * (kPanelH + kGap) + 16;
    const ReplayRun* runs[2] = {
        FindRun(e, policy, panel.queue, panel.load, seed, Allocation::kShared),
        FindRun(e, policy, panel.queue, panel.load, seed, Allocation::kWhole)};
    const double horizon_s = static_cast<double>(e.horizon_us[panel.load]) / 1e6;
    double unit = 86400;
    std::string unit_name = "days";
    if (horizon_s < 2 * 3600) {
      unit = 60;
      unit_name = "minutes";
    } else if (horizon_s < 3 * 86400) {
      unit = 3600;
      unit_name = "hours";
    }
    const double x_max = horizon_s / unit;
    double y_max = 5, q_max = 1;
    for (const ReplayRun* r : runs) {
      if (r == nullptr) continue;
      for (const ReplaySample& s : r->result.series) {
        y_max = std::max({y_max, s.allocated_pct, s.demand_pct});
        q_max = std::max(q_max, static_cast<double>(s.queued));
      }
    }
    const double y_step = NiceStep(y_max, 5);
    y_max = std::ceil(y_max / y_step - 1e-9) * y_step;
    const double q_step = NiceStep(q_max, 5);
    q_max = std::ceil(q_max / q_step - 1e-9) * q_step;
    const double x_step = NiceStep(x_max, 8);
    auto X = [&](double t_s) { return kLeft + t_s / unit / std::max(x_max, 1e-9) * plot_w; };
    auto Y = [&](double v) { return top + (1.0 - v / y_max) * kPanelH; };
    auto YQ = [&](double v) { return top + (1.0 - v / q_max) * kPanelH; };

    const LoadPoint& l = plan.loads[panel.load];
    std::string head = "queue " + std::string(QueueName(panel.queue)) + ", time-compress " +
                       Label(l.time_compress) + ", cluster-scale " + Label(l.cluster_scale);
    if (runs[0] != nullptr) {
      head += " (" + std::to_string(runs[0]->result.gpus) + " GPUs), horizon " +
              FormatTimeSpan(horizon_s);
    }
    svg += "<text x=\"" + Num(kLeft) + "\" y=\"" + Num(top - 6) +
           "\" font-size=\"13\" font-weight=\"bold\">" + Escape(head) + "</text>\n";
    svg += "<g stroke=\"#e5e5e5\" stroke-width=\"1\">\n";
    for (double y = 0; y <= y_max + 1e-9; y += y_step) {
      svg += "<line x1=\"" + Num(kLeft) + "\" y1=\"" + Num(Y(y)) + "\" x2=\"" +
             Num(kLeft + plot_w) + "\" y2=\"" + Num(Y(y)) + "\"/>\n";
    }
    svg += "</g>\n<g font-size=\"11\" fill=\"#333\">\n";
    for (double y = 0; y <= y_max + 1e-9; y += y_step) {
      svg += "<text x=\"" + Num(kLeft - 6) + "\" y=\"" + Num(Y(y) + 4) + "\" text-anchor=\"end\">" +
             Label(y) + "%</text>\n";
    }
    for (double q = 0; q <= q_max + 1e-9; q += q_step) {
      svg += "<text x=\"" + Num(kLeft + plot_w + 6) + "\" y=\"" + Num(YQ(q) + 4) + "\">" +
             Label(q) + "</text>\n";
    }
    for (double x = 0; x <= x_max + 1e-9; x += x_step) {
      svg += "<text x=\"" + Num(X(x * unit)) + "\" y=\"" + Num(top + kPanelH + 15) +
             "\" text-anchor=\"middle\">" + Label(x) + "</text>\n";
    }
    svg += "</g>\n";
    svg += "<text x=\"" + Num(kLeft + plot_w / 2) + "\" y=\"" + Num(top + kPanelH + 32) +
           "\" font-size=\"12\" text-anchor=\"middle\" fill=\"#555\">time (" + unit_name +
           ")</text>\n";
    svg += "<text x=\"" + Num(kLeft + plot_w + 6) + "\" y=\"" + Num(top - 6) +
           "\" font-size=\"11\" fill=\"#555\">queued pods</text>\n";
    svg += "<rect x=\"" + Num(kLeft) + "\" y=\"" + Num(top) + "\" width=\"" + Num(plot_w) +
           "\" height=\"" + Num(kPanelH) + "\" fill=\"none\" stroke=\"#333\"/>\n";

    auto line = [&](const ReplayRun* r, auto value, auto y_of, const char* color, double width,
                    const char* dash, const std::string& name) {
      if (r == nullptr || r->result.series.empty()) return;
      std::string pts;
      for (const ReplaySample& s : r->result.series) {
        pts += Num(X(static_cast<double>(s.time_us) / 1e6)) + "," + Num(y_of(value(s))) + " ";
      }
      svg += "<polyline points=\"" + pts + "\" fill=\"none\" stroke=\"" + color +
             "\" stroke-width=\"" + Num(width) + "\"" +
             (dash[0] != 0 ? std::string(" stroke-dasharray=\"") + dash + "\"" : "") +
             " stroke-linejoin=\"round\"><title>" + Escape(name) + "</title></polyline>\n";
    };
    const ReplayRun* any = runs[0] != nullptr ? runs[0] : runs[1];
    line(
        any, [](const ReplaySample& s) { return s.demand_pct; }, Y, "#999", 1.4, "5,4",
        "demand if nothing waited");
    line(
        runs[1], [](const ReplaySample& s) { return static_cast<double>(s.queued); }, YQ, kWhole,
        1.0, "2,3", "queued pods, whole GPUs");
    line(
        runs[0], [](const ReplaySample& s) { return static_cast<double>(s.queued); }, YQ, kShared,
        1.0, "2,3", "queued pods, shared");
    line(
        runs[1], [](const ReplaySample& s) { return s.allocated_pct; }, Y, kWhole, 1.8, "",
        "allocated %, whole GPUs");
    line(
        runs[0], [](const ReplaySample& s) { return s.allocated_pct; }, Y, kShared, 1.8, "",
        "allocated %, shared");

    if (p == 0) {
      const double lx = kLeft + plot_w + 52;
      double ly = top + 12;
      struct Entry {
        const char* color;
        const char* dash;
        double width;
        const char* text;
      };
      for (const Entry& en : {Entry{kShared, "", 2.5, "allocated, shared"},
                              Entry{kWhole, "", 2.5, "allocated, whole GPUs"},
                              Entry{"#999", "5,4", 1.5, "demand, nothing waiting"},
                              Entry{kShared, "2,3", 1.2, "queued, shared"},
                              Entry{kWhole, "2,3", 1.2, "queued, whole GPUs"}}) {
        svg += "<line x1=\"" + Num(lx) + "\" y1=\"" + Num(ly) + "\" x2=\"" + Num(lx + 22) +
               "\" y2=\"" + Num(ly) + "\" stroke=\"" + en.color + "\" stroke-width=\"" +
               Num(en.width) + "\"" +
               (en.dash[0] != 0 ? std::string(" stroke-dasharray=\"") + en.dash + "\"" : "") +
               "/>\n";
        svg += "<text x=\"" + Num(lx + 27) + "\" y=\"" + Num(ly + 4) + "\" font-size=\"11\">" +
               en.text + "</text>\n";
        ly += 18;
      }
    }
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace vgpu::sim
