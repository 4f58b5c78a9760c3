// vgpu mig profiles / vgpu mig plan: the MIG profile table of a model, and where profiles would
// go in a layout (pure planning, no GPU touched).
//
//   vgpu mig profiles --model H200 [--json]
//   vgpu mig plan --model H200 [--layout 3g.71gb@0,1g.18gb@4] --add 2g.35gb[,PROFILE...]
//                 [--rule ours|first-fit|hami] [--json]
//
// plan: each added profile's start, or why it cannot go (per legal start, the instances and
// memory slices that block it, or the limit reached); then the resulting layout. Exit status 0
// when every profile fits, 1 when one does not, 2 for bad input (an unknown model or profile,
// a layout that overlaps or breaks a max count), naming the item.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/mig/mig_commands.h"
#include "mig/choice.h"
#include "mig/layout.h"

namespace vgpu::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string Placements(const mig::Profile& p) {
  std::string out;
  for (int s : p.Starts()) out += (out.empty() ? "" : ",") + std::to_string(s);
  return "{" + out + "}:" + std::to_string(p.memory_slices);
}

Json ProfileJson(const mig::Profile& p) {
  Json placements = Json::array();
  for (int s : p.Starts()) placements.push_back({{"start", s}, {"size", p.memory_slices}});
  return {{"name", p.name},
          {"profile_id", p.profile_id},
          {"nvml_index", p.nvml_index},
          {"memory_slices", p.memory_slices},
          {"compute_slices", p.compute_slices},
          {"sm_count", p.sm_count},
          {"memory_mib", p.memory_mib},
          {"max_count", p.max_count},
          {"placements", placements},
          {"engines",
           {{"copy", p.engines.copy},
            {"decoder", p.engines.decoder},
            {"encoder", p.engines.encoder},
            {"jpeg", p.engines.jpeg},
            {"ofa", p.engines.ofa}}},
          {"media_extensions", p.media_extensions},
          {"resource", mig::ResourceNameOf(p)}};
}

int RunMigProfiles(int argc, char** argv) {
  std::string model;
  bool json = false;
  CLI::App app(
      "Prints the MIG GPU instance profiles of a GPU model: NVML profile id, memory and compute "
      "slices, SMs, memory, most instances, legal placements ({starts}:size in memory slices) and "
      "engines. The figures are the tables vgpu plans with; on a GPU, what NVML reports wins.",
      "vgpu mig profiles");
  app.add_option("--model", model,
                 "model key (" + mig::ModelKeys() + ") or exact NVML name (\"NVIDIA H200\")")
      ->required();
  app.add_flag("--json", json, "print JSON");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  const mig::ModelTable* m = MigModelOrReport("profiles", model);
  if (m == nullptr) return kExitBadInput;
  const std::string memory_slices = "/" + std::to_string(m->memory_slices);
  const std::string compute_slices = "/" + std::to_string(m->compute_slices);
  if (json) {
    Json profiles = Json::array();
    for (const mig::Profile& p : m->profiles) profiles.push_back(ProfileJson(p));
    char pci[16];
    Json ids = Json::array();
    for (uint32_t id : m->gpu->pci_device_ids) {
      std::snprintf(pci, sizeof pci, "0x%08X", id);
      ids.push_back(pci);
    }
    Json out = {{"model", m->key},
                {"name", m->gpu->display},
                {"nvml_names",
                 std::vector<std::string>(m->gpu->nvml_names.begin(), m->gpu->nvml_names.end())},
                {"pci_device_ids", ids},
                {"sm_count", m->gpu->sm_count},
                {"memory_mib", m->gpu->memory_mib},
                {"memory_slices", m->memory_slices},
                {"compute_slices", m->compute_slices},
                {"max_instances", m->max_instances},
                {"placements_confirmed", m->placements_confirmed},
                {"source", m->source},
                {"profiles", profiles}};
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%.*s (%.*s): %d SMs, %lld MiB, %d memory slices, %d compute slices\n",
              static_cast<int>(m->key.size()), m->key.data(),
              static_cast<int>(m->gpu->display.size()), m->gpu->display.data(), m->gpu->sm_count,
              static_cast<long long>(m->gpu->memory_mib), m->memory_slices, m->compute_slices);
  std::printf("memory sizes: the smallest published nvidia-smi mig -lgip figures (docs/mig.md)\n");
  if (!m->placements_confirmed) {
    std::printf("placements: the chip family's, not yet read from this model (unconfirmed)\n");
  }
  std::printf("%-12s %3s %4s %4s %4s %10s %4s  %-18s %s\n", "PROFILE", "ID", "MEM", "SM", "SMS",
              "MEMORY_MIB", "MAX", "PLACEMENTS", "CE/DEC/ENC/JPEG/OFA");
  for (const mig::Profile& p : m->profiles) {
    const std::string mem = std::to_string(p.memory_slices) + memory_slices;
    const std::string sm = std::to_string(p.compute_slices) + compute_slices;
    std::printf("%-12.*s %3d %4s %4s %4d %10lld %4d  %-18s %d/%d/%d/%d/%d\n",
                static_cast<int>(p.name.size()), p.name.data(), p.profile_id, mem.c_str(),
                sm.c_str(), p.sm_count, static_cast<long long>(p.memory_mib), p.max_count,
                Placements(p).c_str(), p.engines.copy, p.engines.decoder, p.engines.encoder,
                p.engines.jpeg, p.engines.ofa);
  }
  return kExitOk;
}

// Why `profile` cannot be added to `layout` at each of its legal starts.
std::vector<std::string> Blockers(const mig::Layout& layout, int profile) {
  std::vector<std::string> out;
  const mig::Profile& p = layout.table->profiles[profile];
  for (int s : p.Starts()) {
    const mig::AddCheck c = mig::CheckAdd(layout, {profile, s});
    if (c.ok() || c.refusal == mig::Refusal::kIllegalStart) continue;
    out.push_back("start " + std::to_string(s) + ": " + mig::RefusalText(layout, {profile, s}, c));
  }
  return out;
}

// "0-3 3g.71gb@0, 4 1g.18gb@4, 5-7 free".
std::string SliceMap(const mig::Layout& layout) {
  std::string out;
  const uint8_t used = mig::UsedSlices(layout);
  int s = 0;
  size_t next = 0;
  while (s < layout.table->memory_slices) {
    if (next < layout.instances.size() && layout.instances[next].start == s) {
      const mig::Instance& inst = layout.instances[next++];
      const int size = layout.table->profiles[inst.profile].memory_slices;
      out += (out.empty() ? "" : ", ") +
             mig::SliceText(layout.table->profiles[inst.profile].SliceMask(s)) + " " +
             mig::InstanceName(*layout.table, inst);
      s += size;
      continue;
    }
    uint8_t free = 0;
    while (s < layout.table->memory_slices && !((used >> s) & 1))
      free |= static_cast<uint8_t>(1u << s++);
    if (free) out += (out.empty() ? "" : ", ") + mig::SliceText(free) + " free";
  }
  return out;
}

int RunMigPlan(int argc, char** argv) {
  std::string model, layout_text, rule_text = "ours";
  std::vector<std::string> adds;
  bool json = false;
  CLI::App app(
      "Plans MIG instances: where each added profile goes in a layout, or which memory slices "
      "(instances) or limits block it. Several profiles are placed together when they can all "
      "fit (a search over their placements); otherwise one by one. Exit status 1 when a profile "
      "does not fit.",
      "vgpu mig plan");
  app.add_option("--model", model, "model key (" + mig::ModelKeys() + ") or exact NVML name")
      ->required();
  app.add_option("--layout", layout_text,
                 "instances that exist, PROFILE@START,... (e.g. 3g.71gb@0,1g.18gb@4)");
  app.add_option("--add", adds, "profiles to place, comma separated (e.g. 2g.35gb,1g.18gb)")
      ->required()
      ->delimiter(',');
  app.add_option("--rule", rule_text,
                 "placement rule for one-by-one placement: ours (fragmentation-aware, default), "
                 "first-fit (NVIDIA's placement order) or hami")
      ->check(CLI::IsMember({"ours", "first-fit", "hami"}));
  app.add_flag("--json", json, "print JSON");
  AllowEmptyValues(app, {"--layout"});
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  const mig::ModelTable* m = MigModelOrReport("plan", model);
  if (m == nullptr) return kExitBadInput;
  auto layout = mig::ParseLayout(*m, layout_text);
  if (!layout) {
    std::fprintf(stderr, "vgpu mig plan: --layout: %s\n", layout.error().message().c_str());
    return kExitBadInput;
  }
  std::vector<int> profiles;
  for (const std::string& a : adds) {
    const int q = m->IndexOf(a);
    if (q < 0) {
      std::fprintf(stderr, "vgpu mig plan: --add: %.*s has no MIG profile '%s'\n",
                   static_cast<int>(m->key.size()), m->key.data(), a.c_str());
      return kExitBadInput;
    }
    profiles.push_back(q);
  }
  mig::Plan plan;
  if (rule_text == "ours") {
    plan = mig::PlanAdds(*layout, profiles);
  } else {
    const mig::PlacementRule rule =
        rule_text == "hami" ? mig::PlacementRule::kHami : mig::PlacementRule::kFirstFit;
    plan.result = *layout;
    plan.all_fit = true;
    for (int q : profiles) {
      mig::PlannedInstance item{q, mig::ChooseStart(plan.result, q, rule), {}};
      if (item.start) {
        (void)mig::Add(&plan.result, {q, *item.start});
      } else {
        plan.all_fit = false;
      }
      plan.items.push_back(item);
    }
  }
  // A refusal is explained against the layout the item met: the given one plus the items placed
  // before it (refusals happen only in one-by-one placement, in request order).
  std::vector<std::vector<std::string>> blocked;
  mig::Layout met = *layout;
  for (const mig::PlannedInstance& it : plan.items) {
    blocked.push_back(it.start ? std::vector<std::string>() : Blockers(met, it.profile));
    if (it.start && !plan.all_fit) (void)mig::Add(&met, {it.profile, *it.start});
  }
  if (json) {
    Json items = Json::array();
    for (size_t i = 0; i < plan.items.size(); ++i) {
      const mig::PlannedInstance& it = plan.items[i];
      Json j = {{"profile", m->profiles[it.profile].name}};
      if (it.start) {
        j["start"] = *it.start;
        j["size"] = m->profiles[it.profile].memory_slices;
      } else {
        j["start"] = nullptr;
        j["blocked"] = blocked[i];
      }
      items.push_back(j);
    }
    Json out = {{"model", m->key},
                {"layout", mig::FormatLayout(*layout)},
                {"rule", rule_text},
                {"all_fit", plan.all_fit},
                {"placed", items},
                {"result", mig::FormatLayout(plan.result)},
                {"placements_confirmed", m->placements_confirmed}};
    std::printf("%s\n", out.dump(2).c_str());
    return plan.all_fit ? kExitOk : kExitFailure;
  }
  std::printf("%.*s layout: %s\n", static_cast<int>(m->key.size()), m->key.data(),
              layout->instances.empty() ? "(empty)" : SliceMap(*layout).c_str());
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const mig::PlannedInstance& it = plan.items[i];
    const mig::Profile& p = m->profiles[it.profile];
    if (it.start) {
      std::printf("  %-12.*s -> %s (memory slices %s)\n", static_cast<int>(p.name.size()),
                  p.name.data(), mig::InstanceName(*m, {it.profile, *it.start}).c_str(),
                  mig::SliceText(p.SliceMask(*it.start)).c_str());
    } else {
      std::printf("  %-12.*s -> does not fit:\n", static_cast<int>(p.name.size()), p.name.data());
      for (const std::string& why : blocked[i]) {
        std::printf("       %s\n", why.c_str());
      }
    }
  }
  std::printf("result: %s\n",
              plan.result.instances.empty() ? "(empty)" : SliceMap(plan.result).c_str());
  if (!m->placements_confirmed) {
    std::printf("note: %.*s placements are its chip family's, unconfirmed on this model\n",
                static_cast<int>(m->key.size()), m->key.data());
  }
  return plan.all_fit ? kExitOk : kExitFailure;
}

}  // namespace

[[maybe_unused]] static const bool kMigProfiles = RegisterMigSubcommand(
    {"profiles", "the MIG profiles of a GPU model, with their placements", RunMigProfiles});
[[maybe_unused]] static const bool kMigPlan = RegisterMigSubcommand(
    {"plan", "where MIG profiles go in a layout, or what blocks them", RunMigPlan});

}  // namespace vgpu::cli
