// `vgpu analyze rules --dry-run`.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "analyze/report.h"
#include "analyze/rules.h"

namespace vgpu::analyze {

Result<std::string> RunRulesDryRun(const RulesRequest& r) {
  auto rules = LoadRules(r.rules);
  if (!rules) return rules.error();
  auto store = ReadSignalCsv(r.series);
  if (!store) return store.error();
  RecordingSink sink;
  DryRun(*rules, *store, &sink);
  nlohmann::json out = nlohmann::json::array();
  std::string text;
  for (const RecordingSink::Event& e : sink.events()) {
    const Action& a = e.action;
    const double t = static_cast<double>(a.at_ns) / 1e9;
    out.push_back({{"event", e.fired ? "fire" : "resolve"},
                   {"at", t},
                   {"rule", a.rule},
                   {"action", ActionName(a.type)},
                   {"target", a.target},
                   {"amount", a.amount},
                   {"detail", a.detail}});
    char b[512];
    std::snprintf(b, sizeof b, "%10.0f  %-7s  %-24s %-22s %-20s amount %g%s%s\n", t,
                  e.fired ? "fire" : "resolve", a.rule.c_str(),
                  std::string(ActionName(a.type)).c_str(), a.target.c_str(), a.amount,
                  a.detail.empty() ? "" : "  ", a.detail.c_str());
    text += b;
  }
  if (r.json) return out.dump(1) + "\n";
  return text.empty() ? std::string("no rule would have fired\n") : text;
}

}  // namespace vgpu::analyze
