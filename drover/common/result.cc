#include "drover/common/result.h"

#include <cstdio>
#include <cstdlib>

namespace drover {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kAlreadyExists:
      return "already_exists";
    case ErrorCode::kFailedPrecondition:
      return "failed_precondition";
    case ErrorCode::kAborted:
      return "aborted";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kResourceExhausted:
      return "resource_exhausted";
    case ErrorCode::kDeadlineExceeded:
      return "deadline_exceeded";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kUnauthenticated:
      return "unauthenticated";
    case ErrorCode::kPermissionDenied:
      return "permission_denied";
  }
  return "internal";
}

std::string Error::ToString() const {
  std::string out(ErrorCodeName(code));
  out += ": ";
  out += message;
  for (const std::string& detail : details) {
    out += "\n";
    out += detail;
  }
  return out;
}

namespace internal {
void CheckFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: DROVER_CHECK failed: %s\n", file, line, condition);
  std::abort();
}
}  // namespace internal

}  // namespace drover
