#pragma once

// `drover ls -w` and `drover get -w ID`: a listing or record drawn again on each live event
// (GET /v1/events; docs/api.md, "Events").

#include <functional>
#include <optional>
#include <string>

#include "drover/cli/commands.h"

namespace drover::cli {

// Opens the event stream GET /v1/events?`query` and calls `draw` on its first frame (the stream
// is positioned by then, so nothing that happens after the drawing is missed) and after every
// event, until `draw` returns an exit status. A stream the server ends (a reader too slow:
// `dropped`) is opened again after the last id seen. The error's status (ReportError) when the
// stream cannot be opened; runs until interrupted (Ctrl-C) otherwise.
int WatchEvents(const ClientFlags& flags, const std::string& query,
                const std::function<std::optional<int>()>& draw);

// Clears the terminal before a redraw when standard output is one (nothing otherwise: a pipe
// gets each drawing after the last).
void ClearForRedraw();

}  // namespace drover::cli
