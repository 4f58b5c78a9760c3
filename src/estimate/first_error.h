// FirstError: reads a series of Result<T> values and keeps the first error, so that a parser can
// read every field in a row and check once (instead of a returning macro per field).
#pragma once

#include "common/result.h"

namespace vgpu::estimate {

class FirstError {
 public:
  // The value of `r`, or `fallback` (and the error kept, if it is the first) when it has none.
  template <typename T>
  T Take(Result<T> r, T fallback) {
    if (r) return *r;
    if (status_.ok()) status_ = r.error();
    return fallback;
  }
  // Keeps `s` when it is the first error.
  void Note(const Status& s) {
    if (status_.ok() && !s.ok()) status_ = s;
  }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

}  // namespace vgpu::estimate
