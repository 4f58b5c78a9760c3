// vgpu bench oversub: the slowdown of managed memory against working set on the simulated GPU's
// UVM model, and what a spilling low-priority tenant costs a high-priority one. Pure model: no
// processes, deterministic (seeded).
//
//   vgpu bench oversub --sim [--device-memory SIZE] [--link RATE] [--fault-latency DUR] [--json]
//
// `vgpu bench oversub-tenant` is the tenant program of the oversubscription scenario (internal;
// tests/oversub/oversub_test.sh). The flags are read here; the model and the tenant are
// bench/oversub.h's.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/oversub.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/units.h"

namespace vgpu::cli {

int RunBenchOversub(int argc, char** argv) {
  bool sim = false, json = false;
  std::string device = "16GiB", link = "55GB/s", latency = "20us";
  CLI::App app(
      "Slowdown of managed memory against working set on the simulated GPU's UVM model (2 MiB "
      "pages, LRU eviction, high-priority pages never evicted), and what a low-priority tenant "
      "spilling twice its share costs a high-priority one.\n"
      "Example: vgpu bench oversub --sim --link 25GB/s",
      "vgpu bench oversub");
  app.add_flag("--sim", sim, "use the simulated GPU's model (required: no real-GPU mode yet)");
  app.add_option("--device-memory", device, "device memory of the model (default 16GiB)");
  app.add_option("--link", link, "host link bandwidth per direction (default 55GB/s)");
  app.add_option("--fault-latency", latency, "time of one far fault (default 20us)");
  app.add_flag("--json", json, "print JSON");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  auto bad = [](const std::string& m) {
    return ReportStatus("bench oversub", Status::InvalidArgument(m));
  };
  if (!sim) return bad("--sim: the model runs on the simulated GPU only (give --sim)");
  Result<uint64_t> mem = ParseByteSize(device, "--device-memory");
  if (!mem.has_value()) return ReportStatus("bench oversub", mem.error());
  if (*mem < (64ULL << 20) || *mem > (256ULL << 30)) {
    return bad("--device-memory: \"" + device + "\": must be between 64MiB and 256GiB");
  }
  Result<uint64_t> rate = ParseRate(link, "--link");
  if (!rate.has_value()) return ReportStatus("bench oversub", rate.error());
  if (*rate < 1'000'000 || *rate > 10'000'000'000'000ULL) {
    return bad("--link: \"" + link + "\": must be between 1MB/s and 10TB/s");
  }
  Result<int64_t> lat = ParseDuration(latency, "--fault-latency");
  if (!lat.has_value()) return ReportStatus("bench oversub", lat.error());
  if (*lat > 1'000'000'000) return bad("--fault-latency: \"" + latency + "\": at most 1s");
  bench::OversubModel model;
  model.device_bytes = *mem;
  model.link_bytes_per_s = *rate;
  model.fault_latency_ns = static_cast<uint64_t>(*lat);
  std::fputs(bench::RunOversub(model, json).c_str(), stdout);
  return kExitOk;
}

int RunBenchOversubTenant(int argc, char** argv) {
  bench::OversubTenantOptions o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--bytes") {
      o.bytes = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--chunk") {
      o.chunk = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--kernel-ns") {
      o.kernel_ns = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--start-at-ns") {
      o.start_at_ns = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--depth") {
      o.depth = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--seconds") {
      o.seconds = std::strtod(v.c_str(), nullptr);
    } else {
      std::fprintf(stderr, "vgpu bench oversub-tenant: unknown option %s\n", k.c_str());
      return kExitBadInput;
    }
  }
  if (o.bytes == 0 || o.chunk == 0 || o.depth == 0 || o.depth > 1000 ||
      !(o.seconds > 0 && o.seconds <= 600)) {
    std::fprintf(stderr,
                 "vgpu bench oversub-tenant: --bytes N (>0), --chunk N, --seconds (0-600s] "
                 "[--kernel-ns N] [--depth 1-1000] [--start-at-ns REALTIME_NS] are needed\n");
    return kExitBadInput;
  }
  return bench::RunOversubTenant(o);
}

}  // namespace vgpu::cli
