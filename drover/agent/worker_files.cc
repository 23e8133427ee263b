#include "drover/agent/worker_files.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "drover/codec/json.h"
#include "drover/common/filesystem.h"
#include "drover/os/files.h"

namespace drover::agent {
namespace {

using nlohmann::json;

std::string Join(const std::string& dir, const char* name) { return dir + "/" + name; }

Result<json> ReadJsonFile(const std::string& path) {
  DROVER_ASSIGN_OR_RETURN(auto text, ReadWholeFile(path));
  auto parsed = codec::ParseJson(text);
  if (!parsed) return InvalidArgument(fmt::format("{}: {}", path, parsed.error().message));
  if (!parsed->is_object()) return InvalidArgument(fmt::format("{}: not a JSON object", path));
  return parsed;
}

// obj[key] as an integer, or kInvalidArgument.
Result<std::int64_t> IntField(const json& obj, const char* key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) {
    return InvalidArgument(fmt::format("{}: '{}' must be an integer", path, key));
  }
  return it->get<std::int64_t>();
}

}  // namespace

Status WriteSupervisorFile(const std::string& dir, const ProcessIdentity& identity) {
  json j{{"pid", identity.pid}, {"start_time", identity.start_time}};
  // Not synced: it names a process that dies with the machine. After a power loss the worker is
  // reported lost with or without it (LocalRuntime: a dead supervisor at once, a missing file
  // once launch.json is older than the start grace); a crash of the server loses nothing (the
  // rename is visible at once).
  return os::WriteFileAtomically(Join(dir, kSupervisorFile), codec::DumpJson(j),
                                 os::Durability::kVisible);
}

Result<ProcessIdentity> ReadSupervisorFile(const std::string& dir) {
  std::string path = Join(dir, kSupervisorFile);
  DROVER_ASSIGN_OR_RETURN(auto j, ReadJsonFile(path));
  DROVER_ASSIGN_OR_RETURN(auto pid, IntField(j, "pid", path));
  DROVER_ASSIGN_OR_RETURN(auto start, IntField(j, "start_time", path));
  return ProcessIdentity{static_cast<pid_t>(pid), static_cast<std::uint64_t>(start)};
}

Status WriteStartedFile(const std::string& dir, const StartedRecord& record) {
  json j{{"pid", record.pid}, {"at", record.at}};
  // Not synced, as supervisor.json: the process it records dies with the machine; a worker whose
  // started.json a power loss took is reported lost all the same (its exit is what counts, and
  // exit.json, the record of the outcome, is synced).
  return os::WriteFileAtomically(Join(dir, kStartedFile), codec::DumpJson(j),
                                 os::Durability::kVisible);
}

Result<StartedRecord> ReadStartedFile(const std::string& dir) {
  std::string path = Join(dir, kStartedFile);
  DROVER_ASSIGN_OR_RETURN(auto j, ReadJsonFile(path));
  DROVER_ASSIGN_OR_RETURN(auto pid, IntField(j, "pid", path));
  DROVER_ASSIGN_OR_RETURN(auto at, IntField(j, "at", path));
  return StartedRecord{static_cast<pid_t>(pid), at};
}

Status WriteExitFile(const std::string& dir, const ExitRecord& record) {
  json j = codec::ToJson(record.exit);
  j["at"] = record.at;
  return os::WriteFileAtomically(Join(dir, kExitFile), codec::DumpJson(j));
}

Result<ExitRecord> ReadExitFile(const std::string& dir) {
  std::string path = Join(dir, kExitFile);
  DROVER_ASSIGN_OR_RETURN(auto j, ReadJsonFile(path));
  DROVER_ASSIGN_OR_RETURN(auto at, IntField(j, "at", path));
  DROVER_ASSIGN_OR_RETURN(auto exit, codec::ExitStatusFromJson(j, path));
  return ExitRecord{std::move(exit), at};
}

Status WriteLaunchFile(const std::string& dir, const model::LaunchSpec& spec) {
  // Not synced: it is on the server's launch path (one fsync was half of a launch's cost), and
  // the supervisor it is for dies with the machine; after a power loss the worker is reported
  // lost whether the file survived or not (LocalRuntime::Adopt). Readable by the agent's user
  // alone: the env holds the values of the job's secret_env (docs/security.md, "Secrets").
  return os::WriteFileAtomically(Join(dir, kLaunchFile), codec::DumpJson(codec::ToJson(spec)),
                                 os::Durability::kVisible, 0600);
}

Result<model::LaunchSpec> ReadLaunchFile(const std::string& dir) {
  std::string path = Join(dir, kLaunchFile);
  DROVER_ASSIGN_OR_RETURN(auto j, ReadJsonFile(path));
  return codec::LaunchSpecFromJson(j, path);
}

Status WritePreemptNotice(const std::string& dir, const PreemptNotice& notice) {
  json j{{"reason", notice.reason}, {"deadline_ms", notice.deadline_ms}};
  return os::WriteFileAtomically(Join(dir, kPreemptNoticeFile), codec::DumpJson(j));
}

Result<PreemptNotice> ReadPreemptNotice(const std::string& dir) {
  std::string path = Join(dir, kPreemptNoticeFile);
  DROVER_ASSIGN_OR_RETURN(auto j, ReadJsonFile(path));
  DROVER_ASSIGN_OR_RETURN(auto deadline, IntField(j, "deadline_ms", path));
  auto reason = j.find("reason");
  if (reason == j.end() || !reason->is_string()) {
    return InvalidArgument(fmt::format("{}: 'reason' must be a string", path));
  }
  return PreemptNotice{reason->get<std::string>(), deadline};
}

Status WriteTimeoutFile(const std::string& dir, DurationMs timeout_ms) {
  return os::WriteFileAtomically(Join(dir, kTimeoutFile),
                                 codec::DumpJson(json{{"timeout_ms", timeout_ms}}),
                                 os::Durability::kVisible);
}

Result<DurationMs> ReadTimeoutFile(const std::string& dir) {
  std::string path = Join(dir, kTimeoutFile);
  DROVER_ASSIGN_OR_RETURN(auto j, ReadJsonFile(path));
  DROVER_ASSIGN_OR_RETURN(auto timeout, IntField(j, "timeout_ms", path));
  if (timeout <= 0) return InvalidArgument(fmt::format("{}: 'timeout_ms' must be > 0", path));
  return timeout;
}

std::optional<TimeMs> ModificationTimeMs(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return std::nullopt;
  return static_cast<TimeMs>(info.st_mtim.tv_sec) * kMillisPerSecond +
         info.st_mtim.tv_nsec / 1'000'000;
}

namespace {

struct ProcStat {
  char state = '?';
  std::uint64_t start_time = 0;
};

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  auto text = ReadWholeFile(fmt::format("/proc/{}/stat", pid));
  if (!text) return std::nullopt;
  // "pid (comm) state ppid ..."; comm may contain spaces and parentheses, so split after the
  // last ')'. Field 3 (state) is then the first token, field 22 (starttime) the 20th.
  std::size_t close_paren = text->rfind(')');
  if (close_paren == std::string::npos) return std::nullopt;
  std::vector<std::string_view> fields;
  std::string_view rest(*text);
  rest.remove_prefix(close_paren + 1);
  std::size_t i = 0;
  while (i < rest.size() && fields.size() < 20) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\n')) ++i;
    std::size_t start = i;
    while (i < rest.size() && rest[i] != ' ' && rest[i] != '\n') ++i;
    if (i > start) fields.push_back(rest.substr(start, i - start));
  }
  if (fields.size() < 20) return std::nullopt;
  ProcStat stat;
  stat.state = fields[0].empty() ? '?' : fields[0][0];
  try {
    stat.start_time = std::stoull(std::string(fields[19]));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return stat;
}

}  // namespace

std::optional<std::uint64_t> ProcessStartTime(pid_t pid) {
  auto stat = ReadProcStat(pid);
  if (!stat) return std::nullopt;
  return stat->start_time;
}

bool IsAlive(const ProcessIdentity& identity) {
  auto stat = ReadProcStat(identity.pid);
  if (!stat) return false;
  if (stat->state == 'Z' || stat->state == 'X' || stat->state == 'x') return false;
  return stat->start_time == identity.start_time;
}

TimeMs WallTimeMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace drover::agent
