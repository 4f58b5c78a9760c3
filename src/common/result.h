// Result<T>: either a value of type T or an error Status.
//
// Contract:
// - The method names follow std::expected (has_value, value, error, value_or, operator*, ->), so a
//   C++23 build can swap in std::expected by alias.
// - Constructing a Result from an OK Status is a bug; it is turned into an internal error.
// - value() on an error Result and error() on a value Result are bugs (checked in debug builds).
// - Header-only, exception-free.
#pragma once

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

#include "common/status.h"

namespace vgpu {

template <typename T>
class [[nodiscard]] Result {
 public:
  using value_type = T;

  Result(const T& value) : state_(std::in_place_index<0>, value) {}  // NOLINT: implicit by design
  Result(T&& value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  Result(Status status)  // NOLINT: implicit by design, like std::unexpected
      : state_(std::in_place_index<1>,
               status.ok() ? Status::Internal("Result constructed from an OK status")
                           : std::move(status)) {}

  template <typename U>
  requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, T> &&
           !std::is_same_v<std::decay_t<U>, Status> && !std::is_same_v<std::decay_t<U>, Result<T>>)
      Result(U&& value)
      : state_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(state_));
  }
  const Status& error() const {
    assert(!has_value());
    return std::get<1>(state_);
  }
  // The error as a Status, or OK when there is a value.
  Status status() const { return has_value() ? Status() : std::get<1>(state_); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return has_value() ? std::get<0>(state_) : static_cast<T>(std::forward<U>(fallback));
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace vgpu
