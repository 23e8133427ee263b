#pragma once

// The subcommands of `drover`. Each returns the process exit status: 0 success, 1 failure,
// 2 invalid input (a spec that does not validate, a bad flag).

#include <string>

namespace drover::cli {

struct ClientFlags {
  std::string server;            // base URL of the API
  std::string output = "table";  // "table" or "json"
};

int ValidateCommand(const std::string& file);
int SubmitCommand(const ClientFlags& flags, const std::string& file,
                  const std::string& idempotency_key);
struct ListFlags {
  std::string state, owner, team, queue, name;
  bool active = false;
  int limit = 0;
};
int ListCommand(const ClientFlags& flags, const ListFlags& list);
int GetCommand(const ClientFlags& flags, const std::string& id);
struct LogFlags {
  bool follow = false;
  int attempt = 0;
  int rank = 0;
  bool stderr_stream = false;
  int tail_lines = 0;  // > 0: start with the last N lines (of the last 1 MiB)
};
int LogsCommand(const ClientFlags& flags, const std::string& id, const LogFlags& logs);
int CancelCommand(const ClientFlags& flags, const std::string& id);
int ExplainCommand(const ClientFlags& flags, const std::string& id);
int NodesCommand(const ClientFlags& flags);
// `drover queues`: the queue tree with quotas, usage, borrowing and pending jobs.
int QueuesCommand(const ClientFlags& flags);
// `drover why ID`: the job's scheduling decisions (placements, reservations, preemptions).
int WhyCommand(const ClientFlags& flags, const std::string& id);
// `drover checkpoint ID`: reports that a running job saved a checkpoint now.
int CheckpointCommand(const ClientFlags& flags, const std::string& id);

}  // namespace drover::cli
