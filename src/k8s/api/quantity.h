// Kubernetes resource quantities ("4", "4096", "8Gi", "1.5k", "2e3", "500m") as whole numbers.
//
// Contract: ParseWholeQuantity accepts the Kubernetes quantity grammar (optional sign, decimal
// number, then a binary suffix Ki..Ei, a decimal suffix n u m k M G T P E, or an exponent e<int>)
// and returns its value when that is a whole number within int64. Fractions ("500m" = 0.5) and
// overflow are kInvalidArgument with the text quoted. A JSON number is accepted too.
// ParseCeilQuantity returns value * 10^scale10 rounded up, as Kubernetes' Quantity.Value()
// (scale10 0) and MilliValue() (scale10 3) do: "0.5" CPUs = 500 milli, "1Ki" bytes = 1024, "1m"
// bytes = 1. A negative value is kInvalidArgument.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/result.h"
#include "k8s/api/kube_client.h"

namespace vgpu::k8s {

Result<int64_t> ParseWholeQuantity(std::string_view text);
Result<int64_t> WholeQuantityOf(const Json& value);
Result<int64_t> ParseCeilQuantity(std::string_view text, int scale10);
Result<int64_t> CeilQuantityOf(const Json& value, int scale10);

}  // namespace vgpu::k8s
