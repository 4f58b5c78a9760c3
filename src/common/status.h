// Status: the outcome of an operation that can fail, with a code and a human-readable message.
//
// Contract:
// - A default-constructed Status is OK. Error statuses come from the named factories
//   (Status::InvalidArgument(...), ...) and always carry a message that says what was wrong and
//   where (file:line, flag, value).
// - Header-only and exception-free, so the interception library can use it.
// - Thread safety: a Status is a value; distinct objects may be used from distinct threads.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace vgpu {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad input from a user, a file or a peer
  kNotFound,            // a named thing does not exist
  kAlreadyExists,       // a thing to create exists already
  kOutOfRange,          // a value outside the accepted range
  kFailedPrecondition,  // the system is not in a state that allows the operation
  kResourceExhausted,   // out of memory, quota or slots
  kPermissionDenied,    // access refused
  kUnavailable,         // a peer or device is not reachable now; retrying may help
  kDeadlineExceeded,    // timed out
  kIoError,             // the operating system refused a read or write
  kInternal,            // a broken invariant: a bug in vgpu
};

// Returns a stable lowercase name for `code`, e.g. "invalid argument".
constexpr std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kAlreadyExists:
      return "already exists";
    case StatusCode::kOutOfRange:
      return "out of range";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kResourceExhausted:
      return "resource exhausted";
    case StatusCode::kPermissionDenied:
      return "permission denied";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kDeadlineExceeded:
      return "deadline exceeded";
    case StatusCode::kIoError:
      return "I/O error";
    case StatusCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) {
    return {StatusCode::kDeadlineExceeded, std::move(m)};
  }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid argument: <message>", or "ok".
  std::string ToString() const {
    if (ok()) return "ok";
    std::string s(StatusCodeName(code_));
    s += ": ";
    s += message_;
    return s;
  }

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(std::string_view context) const {
    if (ok()) return *this;
    std::string m(context);
    m += ": ";
    m += message_;
    return Status(code_, std::move(m));
  }

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// InvalidArgument "WHERE: WHAT", the shape of a bad-input message: WHERE names the input (a flag,
// a field's path, FILE:LINE), WHAT says what is wrong with it.
inline Status InvalidAt(std::string_view where, std::string_view what) {
  std::string m(where);
  m += ": ";
  m += what;
  return Status::InvalidArgument(std::move(m));
}

}  // namespace vgpu

// Evaluates `expr` (a Status); if it is not OK, returns it from the calling function.
// The only macro in the project that returns.
#define VGPU_RETURN_IF_ERROR(expr)                       \
  do {                                                   \
    ::vgpu::Status vgpu_status_tmp_ = (expr);            \
    if (!vgpu_status_tmp_.ok()) return vgpu_status_tmp_; \
  } while (0)
