#pragma once

// SseReader: an incremental reader of a Server-Sent Events stream (the streamed replies of
// /v1/chat/completions and /v1/completions), fed the bytes as they arrive in any split. The
// gateway passes the bytes through unchanged and uses the events only to count: each `data:`
// event other than `[DONE]` is one chunk (one output token for engines that send a token per
// chunk, as vLLM and the stand-in engine do), and a chunk's `usage` object, when the engine
// sends one, gives exact token counts. Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace drover::gateway {

class SseReader {
 public:
  // Reads `bytes`; returns the data of each event completed by them (its `data:` lines joined by
  // "\n"), in order. Lines end with "\n" or "\r\n"; an event ends with an empty line; comments
  // (":") and other fields are skipped. A line (or an event's data) longer than kMaxLineBytes is
  // dropped (counted in dropped_lines()) so that a hostile stream cannot grow the buffer without
  // bound.
  std::vector<std::string> Feed(std::string_view bytes);

  bool done() const { return done_; }  // `data: [DONE]` was read
  std::int64_t dropped_lines() const { return dropped_lines_; }

  static constexpr std::size_t kMaxLineBytes = 1 << 20;

 private:
  void Line(std::string_view line, std::vector<std::string>& events);

  std::string line_;
  std::string data_;
  bool has_data_ = false;
  bool skipping_ = false;
  bool done_ = false;
  std::int64_t dropped_lines_ = 0;
};

}  // namespace drover::gateway
