#pragma once

// The file protocol between LocalRuntime and `drover supervise` (one directory per worker).
// Every file is written atomically (os::WriteFileAtomically), so a reader sees either nothing or
// the whole file. Only exit.json and preempt-notice are also synced (fsync of the file and the
// directory), to outlive a power loss: the others record processes that die with the machine
// (see WriteLaunchFile, WriteSupervisorFile, WriteStartedFile), and each fsync costs about
// 6.5 ms on this project's VMs, on every launch's way to running:
//
//   launch.json      written by the runtime before the supervisor starts: the LaunchSpec (mode
//                    0600: its env holds the job's secret_env values)
//                    (codec::ToJson).
//   supervisor.json  written by the supervisor first thing: {"pid", "start_time"}. start_time is
//                    field 22 of /proc/PID/stat (clock ticks since boot), which tells a live
//                    supervisor from an unrelated process that reused its pid.
//   started.json     after the worker's exec succeeded: {"pid", "at"} (ms since the epoch).
//   exit.json        last, after every process of the worker is gone: the ExitStatus
//                    (codec::ToJson, with the value outputs the supervisor read) plus "at".
//   stdout.log, stderr.log   the worker's output; supervisor.log the supervisor's own.
//   outputs/NAME     the job's value outputs, written by the worker (model::NodeValueOutputPath;
//                    the folder is the job's account's).
//   preempt-notice   written by the runtime just before it sends SIGTERM to stop the worker for
//                    a preemption: {"reason", "deadline_ms"} (deadline_ms: ms since the epoch
//                    when SIGKILL follows). The worker finds it through $DROVER_PREEMPT_NOTICE;
//                    the supervisor, seeing it when SIGTERM arrives, records preempted = true
//                    instead of cancelled = true.
//   timeout.json     written by the runtime when the worker's time limit changes (drover update
//                    --timeout), before it sends SIGUSR1 to the supervisor: {"timeout_ms"}, from
//                    the worker's start; the supervisor reads it on SIGUSR1.
//
// Outside the worker directory: <checkpoint_dir>/.drover-checkpoint, touched by the worker after
// it saved a checkpoint (its mtime is the checkpoint's time).

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "drover/common/clock.h"
#include "drover/common/filesystem.h"
#include "drover/common/result.h"
#include "drover/model/job.h"
#include "drover/model/launch.h"

namespace drover::agent {

inline constexpr const char* kLaunchFile = "launch.json";
inline constexpr const char* kSupervisorFile = "supervisor.json";
inline constexpr const char* kStartedFile = "started.json";
inline constexpr const char* kExitFile = "exit.json";
inline constexpr const char* kStdoutFile = "stdout.log";
inline constexpr const char* kStderrFile = "stderr.log";
inline constexpr const char* kSupervisorLogFile = "supervisor.log";
inline constexpr const char* kPreemptNoticeFile = "preempt-notice";
inline constexpr const char* kTimeoutFile = "timeout.json";
inline constexpr const char* kCheckpointMarker = ".drover-checkpoint";

// A process named so that pid reuse is detected.
struct ProcessIdentity {
  pid_t pid = 0;
  std::uint64_t start_time = 0;  // /proc/PID/stat field 22

  friend bool operator==(const ProcessIdentity&, const ProcessIdentity&) = default;
};

struct StartedRecord {
  pid_t pid = 0;
  TimeMs at = 0;
};

struct PreemptNotice {
  std::string reason;
  TimeMs deadline_ms = 0;  // when SIGKILL follows, ms since the epoch
};

struct ExitRecord {
  model::ExitStatus exit;
  TimeMs at = 0;
};

// Encoders and decoders of the files above. Decoders return kNotFound when the file does not
// exist and kInvalidArgument when it is not what it should be.
Status WriteSupervisorFile(const std::string& dir, const ProcessIdentity& identity);
Result<ProcessIdentity> ReadSupervisorFile(const std::string& dir);
Status WriteStartedFile(const std::string& dir, const StartedRecord& record);
Result<StartedRecord> ReadStartedFile(const std::string& dir);
Status WriteExitFile(const std::string& dir, const ExitRecord& record);
Result<ExitRecord> ReadExitFile(const std::string& dir);
Status WriteLaunchFile(const std::string& dir, const model::LaunchSpec& spec);
Result<model::LaunchSpec> ReadLaunchFile(const std::string& dir);
Status WritePreemptNotice(const std::string& dir, const PreemptNotice& notice);
Result<PreemptNotice> ReadPreemptNotice(const std::string& dir);
// timeout.json: the worker's new time limit (> 0), from its start.
Status WriteTimeoutFile(const std::string& dir, DurationMs timeout_ms);
Result<DurationMs> ReadTimeoutFile(const std::string& dir);

// The modification time of `path` in ms since the epoch; nullopt if it cannot be stat'ed.
std::optional<TimeMs> ModificationTimeMs(const std::string& path);

// Field 22 of /proc/PID/stat; nullopt if the process does not exist.
std::optional<std::uint64_t> ProcessStartTime(pid_t pid);
// True while `identity` names a running (not zombie) process: same pid and start time.
bool IsAlive(const ProcessIdentity& identity);

// Current wall time in ms since the epoch (the supervisor has no injected clock).
TimeMs WallTimeMs();

}  // namespace drover::agent
