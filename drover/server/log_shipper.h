#pragma once

// The agent end of "Logs from anywhere" (docs/architecture.md): a remote agent ships its
// workers' stdout and stderr to the server as they grow, so that `drover logs` reads them there
// as it reads a local node's, with the same offsets and follow semantics.
//
// Protocol (POST /v1/agents/{node}/logs, api::ShipAgentLog): a chunk is the bytes of one stream
// from an offset; the server answers how much of the stream it keeps (its size), and the shipper
// continues from there. So a chunk sent twice, one lost, an agent restarted (it starts at 0 and is
// told the size at once) and a server whose copy was lost all converge without any state but the
// server's file. Bounds: kMaxAgentLogChunk bytes a chunk, `turn_bytes` a turn of RunAgent's loop
// (so a chatty worker delays the agent's polls by one bounded post at most), and the server's
// limit per stream (it answers `full`, and the shipper stops shipping that stream).
//
// An exit is reported only once its worker's output is shipped (Drained): the server declares a
// log finished when its worker exited and the reader reached its end, so the exit event must not
// overtake the last bytes. A stream the server refuses (it keeps no remote logs, the worker is
// not the node's, its disk fails) counts as shipped, so that no exit waits on it forever; only a
// server that cannot be reached (kUnavailable, kDeadlineExceeded, kResourceExhausted) holds it.
//
// Not thread-safe: RunAgent's loop owns it.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "drover/api/service.h"
#include "drover/common/result.h"
#include "drover/model/launch.h"

namespace drover::server {

class LogShipper {
 public:
  // Ships `data`, the bytes of `key`'s `stream` from `offset`; the server's answer.
  using Post = std::function<Result<api::RemoteLogAck>(const model::WorkerKey& key,
                                                       const std::string& stream,
                                                       std::int64_t offset, std::string_view data)>;

  // Reads the workers' logs under `runs_dir` (LocalRuntime's layout) and sends them with `post`.
  LogShipper(std::string runs_dir, Post post, std::int64_t turn_bytes = kDefaultTurnBytes);

  // Starts shipping `key`'s output (nothing when it is shipped already).
  void Track(const model::WorkerKey& key);
  // Ships what is new in every tracked stream, a chunk of each in turn, until each is shipped up
  // to its current end, `turn_bytes` went out, or the server cannot be reached.
  void Ship();
  // Whether `key`'s output is shipped up to the end the last Ship saw (true for a key not
  // tracked). For a worker that exited, whose files no longer grow, that is all of it.
  bool Drained(const model::WorkerKey& key) const;
  // Stops tracking `key` (its exit was reported).
  void Forget(const model::WorkerKey& key);

  static constexpr std::int64_t kDefaultTurnBytes = std::int64_t{1} << 20;

 private:
  struct Stream {
    std::int64_t offset = 0;  // shipped up to here (the server's size)
    bool caught_up = false;   // at the end of the file at the last look
    bool done = false;        // the server keeps no more of it
  };
  // Ships one chunk of `stream` of `key` at most; false when the server cannot be reached.
  bool ShipChunk(const model::WorkerKey& key, const std::string& stream, Stream& state,
                 std::int64_t& budget);

  const std::string runs_dir_;
  const Post post_;
  const std::int64_t turn_bytes_;
  std::map<model::WorkerKey, std::array<Stream, 2>> tracked_;  // stdout, stderr
};

}  // namespace drover::server
