#include "drover/cli/watch.h"

#include <unistd.h>

#include <iostream>

#include "drover/cli/text.h"

namespace drover::cli {

int WatchEvents(const ClientFlags& flags, const std::string& query,
                const std::function<std::optional<int>()>& draw) {
  api::ApiClient stream = ClientOf(flags);
  std::string last_id;
  std::optional<int> done;
  while (!done) {
    Status read = stream.Events("/v1/events?" + query, last_id, [&](const api::StreamEvent& event) {
      if (!event.id.empty()) last_id = event.id;
      done = draw();
      std::cout.flush();
      return !done.has_value();
    });
    if (!read) return ReportError(read.error());
  }
  return *done;
}

void ClearForRedraw() {
  if (::isatty(STDOUT_FILENO)) std::cout << "\033[H\033[2J";
}

}  // namespace drover::cli
