#include "drover/server/service_prober.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>

#include "drover/api/http_client.h"
#include "drover/os/threads.h"

namespace drover::server {

std::optional<double> SumOfSamples(std::string_view exposition, std::string_view metric) {
  std::optional<double> sum;
  while (!exposition.empty()) {
    const std::size_t eol = exposition.find('\n');
    std::string_view line = exposition.substr(0, eol);
    exposition = eol == std::string_view::npos ? std::string_view{} : exposition.substr(eol + 1);
    if (!line.starts_with(metric) || line.size() == metric.size()) continue;
    std::string_view rest = line.substr(metric.size());
    if (rest.front() == '{') {
      // Label values may hold '}' only escaped inside quotes: skip to the closing brace
      // outside a quoted value.
      bool quoted = false;
      std::size_t i = 1;
      for (; i < rest.size(); ++i) {
        if (quoted && rest[i] == '\\') {
          ++i;
        } else if (rest[i] == '"') {
          quoted = !quoted;
        } else if (!quoted && rest[i] == '}') {
          break;
        }
      }
      if (i >= rest.size()) return std::nullopt;
      rest = rest.substr(i + 1);
    }
    if (rest.empty() || (rest.front() != ' ' && rest.front() != '\t')) continue;  // another name
    const std::size_t start = rest.find_first_not_of(" \t");
    if (start == std::string_view::npos) return std::nullopt;
    rest = rest.substr(start);
    const std::string number(rest.substr(0, rest.find_first_of(" \t\r")));
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(value)) {
      return std::nullopt;
    }
    sum = sum.value_or(0) + value;
  }
  return sum;
}

ProbeResult RunProbe(const ProbeTarget& target) {
  ProbeResult result{target, false, "", 0};
  api::ServerAddress address;
  address.host = target.host;
  address.port = std::to_string(target.port);
  address.url = "http://" + address.HostHeader();
  api::ConnectOptions options;
  options.connect_timeout_ms = target.timeout_ms;
  options.io_timeout_ms = target.timeout_ms;
  options.answer_timeout_ms = target.timeout_ms;  // a replica that trickles is cut off too
  // A replica is the user's program: what it answers a probe is read up to a bound.
  options.max_body_bytes = kMaxProbeAnswerBytes;
  api::HttpClient client(std::move(address), options, /*tls=*/nullptr);
  const api::HttpResult<api::HttpResponse> reply =
      client.Send({.method = "GET", .target = target.path});
  if (!reply) {
    result.outcome = "no answer (" + reply.error().message + ")";
    return result;
  }
  result.ok = reply->status >= 200 && reply->status < 300;
  result.outcome = "HTTP " + std::to_string(reply->status);
  if (result.ok && target.kind == ProbeKind::kSaturation) {
    const std::optional<double> value = SumOfSamples(reply->body, target.metric);
    result.ok = value.has_value();
    result.value = value.value_or(0);
    if (!value) result.outcome += ", no " + target.metric + " sample";
  }
  return result;
}

ServiceProber::ServiceProber(Due due, Report report, DurationMs period_ms, int max_parallel)
    : due_(std::move(due)),
      report_(std::move(report)),
      period_ms_(period_ms),
      max_parallel_(std::max(1, max_parallel)) {}

ServiceProber::~ServiceProber() { Stop(); }

void ServiceProber::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ServiceProber::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<ProbeResult> ServiceProber::RunAll(const std::vector<ProbeTarget>& targets) const {
  std::vector<ProbeResult> results(targets.size());
  const os::ThreadsRun ran = os::RunOnThreads(
      targets.size(), max_parallel_, [&](std::size_t i) { results[i] = RunProbe(targets[i]); });
  if (ran.refused) {
    spdlog::warn("service probes: the system would not start more threads; {} at once",
                 ran.threads);
  }
  return results;
}

void ServiceProber::Loop() {
  while (true) {
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(period_ms_), [&] { return stopping_; });
      if (stopping_) return;
    }
    std::vector<ProbeTarget> targets = due_();
    if (targets.empty()) continue;
    report_(RunAll(targets));
  }
}

}  // namespace drover::server
