// ControlPlane's worker logs (docs/architecture.md, "Logs from anywhere"): reading a worker's
// output wherever it ran, and keeping what remote agents ship of it.

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "drover/model/names.h"
#include "drover/server/control_plane.h"

namespace drover::server {

namespace {

// DIR/<job>/<attempt>/<rank>/<stream>.log: the layout of an agent's worker directories, which
// the remote logs a server keeps repeat under DIR/<node>.
std::string LogPath(const std::string& dir, const model::WorkerKey& key,
                    const std::string& stream) {
  return fmt::format("{}/{}/{}/{}/{}.log", dir, key.job.value(), key.attempt, key.rank, stream);
}

Status CheckStream(const std::string& stream) {
  if (stream != "stdout" && stream != "stderr") {
    return InvalidArgument(fmt::format("stream: must be stdout or stderr, not '{}'", stream));
  }
  return OkStatus();
}

}  // namespace

Result<LogChunk> ControlPlane::ReadLog(JobId id, int attempt, int rank, const std::string& stream,
                                       std::int64_t offset, std::int64_t max_bytes) const {
  DROVER_RETURN_IF_ERROR(CheckStream(stream));
  LogChunk chunk;
  chunk.next_offset = offset;
  std::string path;
  bool exited = false;
  {
    MutexLock lock(mu_);
    const model::Job* job = controller_.Find(id);
    if (!job) return NotFound(fmt::format("job {} does not exist", id.value()));
    chunk.job_state = std::string(model::kJobStateNames.Name(job->state));
    // Nothing to read: yet (no attempt, or a current one not placed: a reservation), or ever
    // for a job that ended.
    const model::Attempt* current = job->current_attempt();
    if (attempt == 0 && (current == nullptr || current->workers.empty())) {
      chunk.started = false;
      chunk.finished = model::IsTerminal(job->state);
      return chunk;
    }
    const model::Attempt* chosen = nullptr;
    for (const model::Attempt& a : job->attempts) {
      if (a.number == attempt || (attempt == 0 && &a == job->current_attempt())) chosen = &a;
    }
    if (!chosen) return NotFound(fmt::format("job {} has no attempt {}", id.value(), attempt));
    if (rank < 0 || rank >= static_cast<int>(chosen->workers.size())) {
      return NotFound(
          fmt::format("job {} attempt {} has no worker {}", id.value(), chosen->number, rank));
    }
    chunk.attempt = chosen->number;
    const model::Worker& worker = chosen->workers[rank];
    const model::WorkerKey key{id, chosen->number, rank};
    auto it = nodes_.find(worker.node);
    if (it != nodes_.end() && !it->second.runs_dir.empty()) {
      path = LogPath(it->second.runs_dir, key, stream);
    } else if (!options_.remote_logs_dir.empty()) {
      path = LogPath(options_.remote_logs_dir + "/" + worker.node.value(), key, stream);
    } else {
      return Unavailable(
          fmt::format("the logs of worker {} are kept on its node {}", rank, worker.node.value()));
    }
    exited = worker.state == model::WorkerState::kExited;
  }
  Result<FileInfo> info = fs_.Stat(path);
  const std::int64_t size = info ? info->size : 0;
  if (offset < 0) offset = std::max<std::int64_t>(0, size + offset);  // negative: from the end
  if (offset > size) offset = size;
  chunk.next_offset = offset;
  Result<std::string> data = info ? fs_.Read(path, offset, std::min(max_bytes, size - offset))
                                  : tl::unexpected(info.error());
  if (!data) {  // not written yet, or gone
    chunk.finished = exited;
    return chunk;
  }
  chunk.data = *std::move(data);
  chunk.next_offset = offset + static_cast<std::int64_t>(chunk.data.size());
  chunk.finished = exited && chunk.next_offset >= size;
  return chunk;
}

Result<api::RemoteLogAck> ControlPlane::AppendRemoteLog(const NodeId& node,
                                                        const model::WorkerKey& key,
                                                        const std::string& stream,
                                                        std::int64_t offset,
                                                        std::string_view data) {
  DROVER_RETURN_IF_ERROR(CheckStream(stream));
  if (offset < 0) return InvalidArgument(fmt::format("offset: must be 0 or more, not {}", offset));
  if (options_.remote_logs_dir.empty()) {
    return FailedPrecondition("this server keeps no logs of remote workers");
  }
  {
    MutexLock lock(mu_);
    const model::Worker* worker = controller_.FindWorker(key);
    if (worker == nullptr || worker->node != node) {
      return NotFound(fmt::format("node {} runs no worker {} of job {} attempt {}", node.value(),
                                  key.rank, key.job.value(), key.attempt));
    }
  }
  const std::string dir = options_.remote_logs_dir + "/" + node.value();
  const std::string path = LogPath(dir, key, stream);
  const std::int64_t max = options_.max_remote_log_bytes;
  MutexLock lock(log_mu_);
  Result<FileInfo> info = fs_.Stat(path);
  if (!info && info.error().code != ErrorCode::kNotFound) return tl::unexpected(info.error());
  const std::int64_t size = info ? info->size : 0;
  // Only the bytes from the end of what is kept on: those before are kept already, and a chunk
  // that starts past the end would leave a hole (the agent ships from `size` again).
  // (offset > size is tested first: offset + data.size() cannot overflow once offset <= size.)
  if (offset > size || offset + static_cast<std::int64_t>(data.size()) <= size || size >= max) {
    return api::RemoteLogAck{size, size >= max};
  }
  std::string_view fresh = data.substr(static_cast<std::size_t>(size - offset));
  fresh = fresh.substr(0, static_cast<std::size_t>(std::min<std::int64_t>(
                              static_cast<std::int64_t>(fresh.size()), max - size)));
  if (!info) {
    DROVER_RETURN_IF_ERROR(fs_.CreateDirectories(
        fmt::format("{}/{}/{}/{}", dir, key.job.value(), key.attempt, key.rank)));
  }
  DROVER_RETURN_IF_ERROR(fs_.Append(path, fresh));
  const std::int64_t kept = size + static_cast<std::int64_t>(fresh.size());
  return api::RemoteLogAck{kept, kept >= max};
}

}  // namespace drover::server
