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
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"

namespace drover::server {

// kSaturation: a scrape of the replica's Prometheus endpoint for the service's saturation gauge
// (model::SaturationSpec); its result carries the gauge's value.
enum class ProbeKind { kReadiness, kLiveness, kSaturation };

struct ProbeTarget {
  JobId job;
  ProbeKind kind = ProbeKind::kReadiness;
  std::string host;  // the node's address
  int port = 0;
  std::string path;
  DurationMs timeout_ms = 1'000;
  std::string metric;  // kSaturation: the gauge to read
};

struct ProbeResult {
  ProbeTarget target;
  bool ok = false;      // a 2xx answer within the timeout (kSaturation: and the metric found)
  std::string outcome;  // "200", "503", "connection refused or timed out"
  double value = 0;     // kSaturation with ok: the metric's value
};

// The sum of the samples of `metric` in a Prometheus text exposition (every label set: vLLM
// labels its gauges by model_name), or nullopt when it has none or a value is not a finite
// number. Lines are `name{labels} value [timestamp]` or `name value [timestamp]`; comments and
// other metrics (including ones `metric` is a prefix of) are skipped.
std::optional<double> SumOfSamples(std::string_view exposition, std::string_view metric);

// A probe's answer is read up to this (a metrics page of a busy vLLM is tens of KiB); more is a
// failed probe.
inline constexpr std::size_t kMaxProbeAnswerBytes = 4 << 20;

// One GET of `target` over plain HTTP (api::HttpClient): connecting within the target's timeout,
// and the whole answer, from the request sent to its last byte, within it too.
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
