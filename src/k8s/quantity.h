// Kubernetes resource quantities ("4", "4096", "8Gi", "1.5k", "2e3", "500m") as whole numbers.
//
// Contract: ParseWholeQuantity accepts the Kubernetes quantity grammar (optional sign, decimal
// number, then a binary suffix Ki..Ei, a decimal suffix n u m k M G T P E, or an exponent e<int>)
// and returns its value when that is a whole number within int64. Fractions ("500m" = 0.5) and
// overflow are kInvalidArgument with the text quoted. A JSON number is accepted too.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/result.h"
#include "k8s/kube_client.h"

namespace vgpu::k8s {

Result<int64_t> ParseWholeQuantity(std::string_view text);
Result<int64_t> WholeQuantityOf(const Json& value);

}  // namespace vgpu::k8s
