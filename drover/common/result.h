#pragma once

// Error values for every fallible operation in Drover.
//
// Choosing a code (after absl/status/status.h):
//   kInvalidArgument     the caller's input is wrong regardless of system state (bad spec).
//   kNotFound            a named entity (job, node, file) does not exist.
//   kAlreadyExists       a create collided with an existing entity.
//   kFailedPrecondition  the system is not in the state the operation needs (cancel a finished
//   job). kAborted             a concurrency conflict; the caller may retry the whole operation.
//   kUnavailable         a transient failure (server unreachable); retrying later may work.
//   kResourceExhausted   a quota or limit was hit.
//   kDeadlineExceeded    the operation did not finish in time.
//   kInternal            an invariant broke; a bug.
//   kUnauthenticated     the caller's credential is missing or not valid (HTTP 401).
//   kPermissionDenied    the caller is known but may not do this (HTTP 403).

#include <iterator>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <utility>
#include <vector>

namespace drover {

enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kAborted,
  kUnavailable,
  kResourceExhausted,
  kDeadlineExceeded,
  kInternal,
  kUnauthenticated,
  kPermissionDenied,
};

// Every ErrorCode, for decoding names and for tests that cover each.
inline constexpr ErrorCode kErrorCodes[] = {
    ErrorCode::kInvalidArgument,    ErrorCode::kNotFound,         ErrorCode::kAlreadyExists,
    ErrorCode::kFailedPrecondition, ErrorCode::kAborted,          ErrorCode::kUnavailable,
    ErrorCode::kResourceExhausted,  ErrorCode::kDeadlineExceeded, ErrorCode::kInternal,
    ErrorCode::kUnauthenticated,    ErrorCode::kPermissionDenied,
};
static_assert(std::size(kErrorCodes) == static_cast<std::size_t>(ErrorCode::kPermissionDenied) + 1);

// "invalid_argument", "not_found", ...: the stable spelling used in JSON and logs.
std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  // One line per item, e.g. each diagnostic of an invalid spec ("FILE:LINE:COL: error: ...").
  std::vector<std::string> details;

  // "invalid_argument: message" followed by the details, one per line.
  std::string ToString() const;
};

// Result<T> holds a T or an Error. [[nodiscard]] so a failure cannot be dropped silently.
template <typename T>
class [[nodiscard]] Result : public tl::expected<T, Error> {
 public:
  using tl::expected<T, Error>::expected;
  Result(const tl::expected<T, Error>& other) : tl::expected<T, Error>(other) {}
  Result(tl::expected<T, Error>&& other) : tl::expected<T, Error>(std::move(other)) {}
};

using Status = Result<void>;

inline Status OkStatus() { return {}; }

inline tl::unexpected<Error> MakeError(ErrorCode code, std::string message,
                                       std::vector<std::string> details = {}) {
  return tl::unexpected<Error>(Error{code, std::move(message), std::move(details)});
}

inline tl::unexpected<Error> InvalidArgument(std::string message) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message));
}
inline tl::unexpected<Error> NotFound(std::string message) {
  return MakeError(ErrorCode::kNotFound, std::move(message));
}
inline tl::unexpected<Error> FailedPrecondition(std::string message) {
  return MakeError(ErrorCode::kFailedPrecondition, std::move(message));
}
inline tl::unexpected<Error> Unavailable(std::string message) {
  return MakeError(ErrorCode::kUnavailable, std::move(message));
}
inline tl::unexpected<Error> ResourceExhausted(std::string message) {
  return MakeError(ErrorCode::kResourceExhausted, std::move(message));
}
inline tl::unexpected<Error> Internal(std::string message) {
  return MakeError(ErrorCode::kInternal, std::move(message));
}
inline tl::unexpected<Error> Unauthenticated(std::string message) {
  return MakeError(ErrorCode::kUnauthenticated, std::move(message));
}
inline tl::unexpected<Error> PermissionDenied(std::string message) {
  return MakeError(ErrorCode::kPermissionDenied, std::move(message));
}

// Returns the error of `expr` (a Result or Status) from the enclosing function if it failed.
#define DROVER_RETURN_IF_ERROR(expr)                                    \
  do {                                                                  \
    auto drover_status_ = (expr);                                       \
    if (!drover_status_) return tl::unexpected(drover_status_.error()); \
  } while (0)

// Evaluates `expr` (a Result<T>); returns its error from the enclosing function, or moves its
// value into `lhs` (a declaration such as `auto x`, or an existing variable). Expands to more
// than one statement: not for the body of an unbraced if or loop.
#define DROVER_ASSIGN_OR_RETURN(lhs, expr) \
  DROVER_ASSIGN_OR_RETURN_IMPL(DROVER_CONCAT(drover_result_, __LINE__), lhs, expr)
#define DROVER_CONCAT_INNER(a, b) a##b
#define DROVER_CONCAT(a, b) DROVER_CONCAT_INNER(a, b)
#define DROVER_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)       \
  auto tmp = (expr);                                       \
  if (!tmp) return tl::unexpected(std::move(tmp).error()); \
  lhs = *std::move(tmp)

// For conditions that cannot happen unless Drover has a bug. Never for input validation.
#define DROVER_CHECK(cond)                                                   \
  do {                                                                       \
    if (!(cond)) ::drover::internal::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (0)

namespace internal {
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line);
}  // namespace internal

}  // namespace drover
