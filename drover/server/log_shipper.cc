#include "drover/server/log_shipper.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "drover/api/agent_handlers.h"
#include "drover/common/filesystem.h"

namespace drover::server {

namespace {

constexpr std::array<const char*, 2> kStreams = {"stdout", "stderr"};

// Errors that say the server was not reached or is busy: the chunk is sent again next turn.
bool Transient(ErrorCode code) {
  return code == ErrorCode::kUnavailable || code == ErrorCode::kDeadlineExceeded ||
         code == ErrorCode::kResourceExhausted;
}

}  // namespace

LogShipper::LogShipper(std::string runs_dir, Post post, std::int64_t turn_bytes)
    : runs_dir_(std::move(runs_dir)), post_(std::move(post)), turn_bytes_(turn_bytes) {}

void LogShipper::Track(const model::WorkerKey& key) { tracked_.try_emplace(key); }

void LogShipper::Forget(const model::WorkerKey& key) { tracked_.erase(key); }

bool LogShipper::Drained(const model::WorkerKey& key) const {
  auto it = tracked_.find(key);
  if (it == tracked_.end()) return true;
  return std::all_of(it->second.begin(), it->second.end(),
                     [](const Stream& s) { return s.done || s.caught_up; });
}

void LogShipper::Ship() {
  for (auto& [key, streams] : tracked_) {
    for (Stream& stream : streams) stream.caught_up = false;
  }
  // Rounds of one chunk per stream, so that a chatty worker does not starve the others.
  std::int64_t budget = turn_bytes_;
  for (bool more = true; more;) {
    more = false;
    for (auto& [key, streams] : tracked_) {
      for (std::size_t i = 0; i < kStreams.size(); ++i) {
        Stream& stream = streams[i];
        if (stream.done || stream.caught_up) continue;
        if (budget <= 0 || !ShipChunk(key, kStreams[i], stream, budget)) return;
        more = more || !(stream.done || stream.caught_up);
      }
    }
  }
}

bool LogShipper::ShipChunk(const model::WorkerKey& key, const std::string& stream, Stream& state,
                           std::int64_t& budget) {
  const std::string path =
      fmt::format("{}/{}/{}/{}/{}.log", runs_dir_, key.job.value(), key.attempt, key.rank, stream);
  Result<std::string> data = RealFileSystem().Read(
      path, state.offset, std::min<std::int64_t>(api::kMaxAgentLogChunk, budget));
  if (!data) {  // not written yet (or never: a launch that failed)
    state.caught_up = true;
    return true;
  }
  if (data->empty()) {
    state.caught_up = true;
    return true;
  }
  budget -= static_cast<std::int64_t>(data->size());
  Result<api::RemoteLogAck> ack = post_(key, stream, state.offset, *data);
  if (!ack) {
    if (Transient(ack.error().code)) return false;
    spdlog::warn("agent: the server keeps no more of {} of job {} attempt {} worker {}: {}", stream,
                 key.job.value(), key.attempt, key.rank, ack.error().ToString());
    state.done = true;
    return true;
  }
  state.offset = ack->size;
  state.done = ack->full;
  return true;
}

}  // namespace drover::server
