#pragma once

// ServiceProber: the HTTP probes of services' replicas (docs/inference.md, "Probes"), off the
// control plane's lock. One thread wakes every `period_ms`, asks `due` (ControlPlane::DueProbes,
// which takes the plane's mutex briefly) for the probes due now, runs them on at most
// `max_parallel` threads at once (each a GET with the probe's timeout, connection and read
// bounded alike), and hands every result to `report` (ControlPlane::OnProbeResults). A round
// lasts as long as its slowest probe: at most the largest probe timeout.
//
// Thread-safety: Start and Stop from one thread (the plane's owner); `due` and `report` are
// called from the prober's threads only.

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"

namespace drover::server {

enum class ProbeKind { kReadiness, kLiveness };

struct ProbeTarget {
  JobId job;
  ProbeKind kind = ProbeKind::kReadiness;
  std::string host;  // the node's address
  int port = 0;
  std::string path;
  DurationMs timeout_ms = 1'000;
};

struct ProbeResult {
  ProbeTarget target;
  bool ok = false;      // a 2xx answer within the timeout
  std::string outcome;  // "200", "503", "connection refused or timed out"
};

// One GET of `target`; never throws.
ProbeResult RunProbe(const ProbeTarget& target);

class ServiceProber {
 public:
  using Due = std::function<std::vector<ProbeTarget>()>;
  using Report = std::function<void(std::vector<ProbeResult>)>;

  ServiceProber(Due due, Report report, DurationMs period_ms = 100, int max_parallel = 8);
  ~ServiceProber();
  ServiceProber(const ServiceProber&) = delete;
  ServiceProber& operator=(const ServiceProber&) = delete;

  void Start();
  // Waits for the round in progress to end.
  void Stop();

 private:
  void Loop();
  std::vector<ProbeResult> RunAll(const std::vector<ProbeTarget>& targets) const;

  Due due_;
  Report report_;
  const DurationMs period_ms_;
  const int max_parallel_;
  std::mutex mu_;  // guards stopping_
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace drover::server
