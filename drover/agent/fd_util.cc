#include "drover/agent/fd_util.h"

#include <unistd.h>

#include <climits>

namespace drover::agent {
namespace {

// Without close_range (Linux < 5.9) descriptors up to this bound are closed one by one.
constexpr unsigned kFallbackFdLimit = 65536;

void CloseRange(unsigned low, unsigned high) {
  if (low > high) return;
  if (close_range(low, high, 0) == 0) return;
  for (unsigned fd = low; fd <= high && fd < kFallbackFdLimit; ++fd) close(static_cast<int>(fd));
}

}  // namespace

void CloseFdsFrom(int first, int keep) {
  if (keep >= first) {
    if (keep > first) CloseRange(static_cast<unsigned>(first), static_cast<unsigned>(keep - 1));
    CloseRange(static_cast<unsigned>(keep + 1), UINT_MAX);
  } else {
    CloseRange(static_cast<unsigned>(first), UINT_MAX);
  }
}

}  // namespace drover::agent
