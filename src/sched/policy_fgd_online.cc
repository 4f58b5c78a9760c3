// fgd-online: FGD whose target workload is learned from the pods seen so far, never from the
// future trace.
//
//   M_t     = typical set of the pods observed up to now (workload.h: top specs by count up to
//             95% coverage, weights = renormalized counts), re-checked every 2% more pods and
//             adopted when it changed by more than 0.02 in L1 weight distance (fgd_core.h)
//   score   = int64( 100 * sigmoid( (F_n(M_t) - F_n'(M_t)) / 1000 ) )
//
// Everything else (GPU choice, tie-break) is FGD's (policy_fgd.cc).
// Options: coverage (0.5..1, default 0.95), check_growth (0..1, default 0.02),
// tolerance (0..2, default 0.02).
#include <memory>

#include "sched/fgd_core.h"
#include "sched/policies.h"

namespace vgpu::sched {

Result<std::unique_ptr<Policy>> MakeFgdOnlinePolicy(const PolicyArgs& args) {
  constexpr std::string_view kName = "fgd-online";
  VGPU_RETURN_IF_ERROR(CheckParams(kName, args, {"coverage", "check_growth", "tolerance"}));
  FgdOnlineOptions o;
  auto coverage = GetNumberParam(kName, args, "coverage", o.coverage, 0.5, 1.0);
  if (!coverage) return coverage.error();
  auto growth = GetNumberParam(kName, args, "check_growth", o.check_growth, 0.0, 1.0);
  if (!growth) return growth.error();
  auto tolerance = GetNumberParam(kName, args, "tolerance", o.tolerance, 0.0, 2.0);
  if (!tolerance) return tolerance.error();
  o.coverage = *coverage;
  o.check_growth = *growth;
  o.tolerance = *tolerance;
  return MakeFgdFromCore(std::string(kName), std::make_shared<FgdCore>(o, args.models));
}

}  // namespace vgpu::sched
