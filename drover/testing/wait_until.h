#pragma once

// WaitUntil: polling a condition that another thread makes true, with a deadline.

#include <chrono>
#include <functional>

namespace drover::testing {

// Evaluates `condition` every `poll` until it holds or `deadline` has passed; returns its last
// result (so a condition that never holds costs the whole deadline and returns false).
bool WaitUntil(const std::function<bool()>& condition,
               std::chrono::milliseconds deadline = std::chrono::seconds(10),
               std::chrono::milliseconds poll = std::chrono::milliseconds(5));

}  // namespace drover::testing
