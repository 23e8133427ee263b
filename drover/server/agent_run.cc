#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "drover/agent/local_runtime.h"
#include "drover/api/client.h"
#include "drover/api/request.h"
#include "drover/api/tls_client.h"
#include "drover/codec/json.h"
#include "drover/os/files.h"
#include "drover/server/agent_link.h"
#include "drover/server/log_shipper.h"

namespace drover::server {

using nlohmann::json;

AgentCommandRunner::AgentCommandRunner(agent::WorkerRuntime& runtime, const Clock& clock,
                                       std::string node)
    : runtime_(runtime), clock_(clock), node_(std::move(node)) {}

void AgentCommandRunner::RunBatch(const CommandBatch& batch,
                                  std::vector<model::WorkerEvent>& events) {
  if (batch.epoch != ack_.epoch) ack_ = api::AgentAck{batch.epoch, 0};
  for (const AgentCommand& command : batch.commands) {
    if (command.seq <= ack_.seq) continue;  // carried out already; its acknowledgement was lost
    Run(command, events);
    ack_.seq = command.seq;
  }
}

void AgentCommandRunner::Run(const AgentCommand& command, std::vector<model::WorkerEvent>& events) {
  switch (command.kind) {
    case AgentCommand::Kind::kLaunch: {
      Status launched = runtime_.Launch(command.launch);
      if (launched || launched.error().code == ErrorCode::kAlreadyExists) {
        running_.insert(command.launch.key);
      } else {
        model::WorkerEvent failed;
        failed.key = command.launch.key;
        failed.kind = model::WorkerEvent::Kind::kExited;
        failed.at = clock_.Now();
        failed.exit.message = "launch failed: " + launched.error().message;
        events.push_back(failed);
      }
      break;
    }
    case AgentCommand::Kind::kStop:
      Stop(command.key, command.stop);
      break;
    case AgentCommand::Kind::kSetTimeout:
      // A worker that has exited has nothing to change: its exit is reported anyway.
      if (Status changed = runtime_.SetTimeout(command.key, command.timeout_ms);
          !changed && changed.error().code != ErrorCode::kNotFound) {
        spdlog::warn("set_timeout of job {} attempt {} rank {}: {}", command.key.job.value(),
                     command.key.attempt, command.key.rank, changed.error().ToString());
      }
      break;
    case AgentCommand::Kind::kAdopt:
      running_.insert(command.keys.begin(), command.keys.end());
      for (const model::WorkerKey& key : runtime_.Adopt(command.keys)) {
        running_.erase(key);
        model::WorkerEvent lost;
        lost.key = key;
        lost.kind = model::WorkerEvent::Kind::kExited;
        lost.at = clock_.Now();
        lost.exit.message = "lost: never launched on node " + node_;
        events.push_back(lost);
      }
      break;
  }
}

void AgentCommandRunner::RetryStops() {
  for (const PendingStop& stop : std::exchange(pending_stops_, {})) Stop(stop.key, stop.request);
}

void AgentCommandRunner::Observe(const std::vector<model::WorkerEvent>& events) {
  for (const model::WorkerEvent& event : events) {
    if (event.kind == model::WorkerEvent::Kind::kExited) running_.erase(event.key);
  }
}

std::size_t AgentCommandRunner::Fence(const std::string& reason) {
  model::StopRequest request;
  request.reason = reason;
  for (const model::WorkerKey& key : running_) Stop(key, request);
  return running_.size();
}

void AgentCommandRunner::Stop(const model::WorkerKey& key, const model::StopRequest& request) {
  Status stopped = runtime_.Stop(key, request);
  if (!stopped && stopped.error().code == ErrorCode::kUnavailable) {
    pending_stops_.push_back({key, request});
  }
}

namespace {

// The credential kept in `path`; "" when there is none (no file yet, or no path).
Result<std::string> ReadCredential(const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return std::string();
    return InvalidArgument(
        fmt::format("{}: cannot read the node credential: {}", path, std::strerror(errno)));
  }
  std::string credential;
  std::getline(in, credential);
  return credential;
}

// Writes `credential` to `path` with mode 0600, atomically (os::WriteFileAtomically): a crash
// leaves the old credential or the new one.
Status WriteCredential(const std::string& path, const std::string& credential) {
  if (path.empty()) return OkStatus();
  return os::WriteFileAtomically(path, credential + "\n", os::Durability::kSynced, 0600);
}

// Self-fencing (docs/architecture.md, "Agent liveness"). The server declares a node lost once
// its agent has been silent for its agent timeout T, and may then run the node's jobs elsewhere;
// an agent cut off from the server stops its own workers after T/2 without reaching it, so that
// a job does not run on both sides of a partition. Measured from when the last call that reached
// the server was sent, which is no later than when the server last heard from the agent.
class Fence {
 public:
  // The server's agent timeout, as its registration reply says (0 or absent: never fence).
  void SetTimeout(DurationMs agent_timeout_ms) { fence_after_ms_ = agent_timeout_ms / 2; }
  // How long one call may take: an eighth of the timeout (250 ms to 10 s), so that a turn of
  // the loop (at most two calls) into a partition ends within T/4 and the workers are stopped
  // between T/2 and 3T/4 after the last contact (then their kill grace applies).
  DurationMs CallTimeout() const {
    return fence_after_ms_ > 0 ? std::clamp<DurationMs>(fence_after_ms_ / 4, 250, kCallTimeoutMs)
                               : kCallTimeoutMs;
  }
  // A call sent at `sent_at` answered `reply`: anything but kUnavailable (no connection, a
  // timeout, or the server's own 503) means the server was reached.
  template <typename Reply>
  void Called(TimeMs sent_at, const Reply& reply) {
    if (reply || reply.error().code != ErrorCode::kUnavailable) {
      reached_at_ = sent_at;
      fenced_ = false;
    }
  }
  // Whether the workers must be stopped now: once per loss of contact.
  bool Due(TimeMs now) {
    if (fenced_ || fence_after_ms_ <= 0 || reached_at_ == 0 ||
        now - reached_at_ <= fence_after_ms_) {
      return false;
    }
    fenced_ = true;
    return true;
  }
  DurationMs silence(TimeMs now) const { return now - reached_at_; }

  static constexpr DurationMs kCallTimeoutMs = 10 * kMillisPerSecond;

 private:
  DurationMs fence_after_ms_ = 0;
  TimeMs reached_at_ = 0;
  bool fenced_ = false;
};

}  // namespace

Status RunAgent(const AgentOptions& options, const Clock& clock, const std::atomic<bool>& stop) {
  agent::LocalRuntime::Options runtime_options;
  runtime_options.runs_dir = options.runs_dir;
  runtime_options.supervisor_path = options.supervisor_path;
  runtime_options.server_url = options.server_url;
  if (!options.ca_file.empty()) {
    runtime_options.server_ca = std::filesystem::absolute(options.ca_file).string();
  }
  DROVER_ASSIGN_OR_RETURN(std::unique_ptr<agent::LocalRuntime> owned_runtime,
                          agent::LocalRuntime::Create(runtime_options, clock));
  agent::LocalRuntime& runtime = *owned_runtime;

  const std::string node = options.node.name.value();
  const std::string node_path = "/v1/agents/" + api::UrlEncode(node);
  Fence fence;
  auto client = std::make_unique<api::ApiClient>(options.server_url, fence.CallTimeout(),
                                                 options.ca_file, api::ConnectTls);
  DROVER_ASSIGN_OR_RETURN(std::string credential, ReadCredential(options.credential_file));
  client->SetBearer(credential);
  std::map<std::string, std::string> register_headers;
  if (!options.join_token.empty()) {
    register_headers[std::string(api::kJoinTokenHeader)] = options.join_token;
  }
  bool registered = false;
  std::vector<model::WorkerEvent> unsent;  // kept until the server accepts them
  AgentCommandRunner runner(runtime, clock, node);
  LogShipper shipper(
      runtime.runs_dir(),
      [&](const model::WorkerKey& key, const std::string& stream, std::int64_t offset,
          std::string_view data) -> Result<api::RemoteLogAck> {
        const TimeMs sent_at = clock.Now();
        auto reply = client->Post(
            fmt::format("{}/logs?job={}&attempt={}&rank={}&stream={}&offset={}", node_path,
                        key.job.value(), key.attempt, key.rank, stream, offset),
            std::string(data), "application/octet-stream");
        fence.Called(sent_at, reply);
        if (!reply) return tl::unexpected(reply.error());
        if (!reply->json.is_object()) return Internal("the server's answer is no JSON object");
        return api::RemoteLogAck{reply->json.value("size", offset),
                                 reply->json.value("full", false)};
      });

  // Usage batches from the sampler's thread, posted by the loop (bounded: the oldest dropped).
  std::mutex usage_mu;
  std::deque<model::UsageBatch> usage_unsent;
  std::unique_ptr<agent::UsageSampler> sampler = agent::MakeNodeSampler(
      options.node, options.sampling, runtime,
      [&](model::UsageBatch batch) {
        std::lock_guard lock(usage_mu);
        usage_unsent.push_back(std::move(batch));
        while (usage_unsent.size() > kMaxUnsentUsageBatches) usage_unsent.pop_front();
      },
      clock);
  sampler->Start();
  // Posts the waiting batches in order until one fails (put back for the next turn, if there
  // is room) or all went. A batch the server refuses (kInvalidArgument) is dropped.
  auto post_usage = [&] {
    while (true) {
      model::UsageBatch batch;
      {
        std::lock_guard lock(usage_mu);
        if (usage_unsent.empty()) return;
        batch = std::move(usage_unsent.front());
        usage_unsent.pop_front();
      }
      const TimeMs sent_at = clock.Now();
      auto posted = client->Post(node_path + "/usage", codec::DumpJson(codec::ToJson(batch)),
                                 "application/json");
      fence.Called(sent_at, posted);
      if (posted) continue;
      if (posted.error().code == ErrorCode::kInvalidArgument) {
        spdlog::warn("agent {}: usage refused: {}", node, posted.error().message);
        continue;
      }
      std::lock_guard lock(usage_mu);
      if (usage_unsent.size() < kMaxUnsentUsageBatches) usage_unsent.push_front(std::move(batch));
      return;
    }
  };

  while (!stop) {
    runner.RetryStops();
    if (fence.Due(clock.Now())) {
      const std::size_t stopped = runner.Fence(fmt::format(
          "fenced: node {} has not reached the server for {} s; the server declares it lost "
          "after its agent timeout and may run its jobs elsewhere",
          node, fence.silence(clock.Now()) / kMillisPerSecond));
      spdlog::warn("agent {}: no contact with the server for {} ms: stopped {} worker(s)", node,
                   fence.silence(clock.Now()), stopped);
    }
    if (!registered) {
      const TimeMs sent_at = clock.Now();
      auto reply = client->Post("/v1/agents/register", codec::DumpJson(codec::ToJson(options.node)),
                                "application/json", register_headers);
      fence.Called(sent_at, reply);
      if (!reply) {
        spdlog::warn("agent {}: cannot register: {}", node, reply.error().ToString());
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        continue;
      }
      if (const auto timeout = reply->json.find("agent_timeout_ms");
          timeout != reply->json.end() && timeout->is_number_integer()) {
        fence.SetTimeout(timeout->get<DurationMs>());
        client = std::make_unique<api::ApiClient>(options.server_url, fence.CallTimeout(),
                                                  options.ca_file, api::ConnectTls);
        client->SetBearer(credential);
      }
      if (const auto issued = reply->json.find("credential");
          issued != reply->json.end() && issued->is_string()) {
        credential = issued->get<std::string>();
        client->SetBearer(credential);
        if (Status kept = WriteCredential(options.credential_file, credential); !kept) {
          spdlog::error("agent {}: cannot keep the node credential: {}", node,
                        kept.error().message);
        }
      }
      registered = true;
      spdlog::info("agent {}: registered with {}", node, options.server_url);
    }
    const api::AgentAck ack = runner.ack();
    const TimeMs polled_at = clock.Now();
    auto reply = client->Get(fmt::format("{}/commands?wait_ms={}&epoch={}&ack={}", node_path,
                                         options.poll_ms, ack.epoch, ack.seq));
    fence.Called(polled_at, reply);
    if (!reply) {
      // A restarted server forgets remote nodes, and one that stopped hearing from us declared
      // the node lost: register again, which also re-adopts (and stops what was lost).
      ErrorCode code = reply.error().code;
      if (code == ErrorCode::kNotFound) {
        spdlog::warn("agent {}: {}; registering again", node, reply.error().message);
      }
      // kUnauthenticated: the credential was replaced (the node was taken over while lost).
      if (code == ErrorCode::kNotFound || code == ErrorCode::kUnavailable ||
          code == ErrorCode::kUnauthenticated) {
        registered = false;
      }
      if (code == ErrorCode::kUnavailable)
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } else {
      CommandBatch batch;
      batch.epoch = reply->json.value("epoch", std::int64_t{0});
      for (const json& item : reply->json.value("commands", json::array())) {
        auto command = AgentCommandFromJson(item);
        if (!command) {
          spdlog::error("agent {}: bad command: {}", node, command.error().message);
          continue;
        }
        batch.commands.push_back(*std::move(command));
      }
      runner.RunBatch(batch, unsent);
    }
    std::vector<model::WorkerEvent> polled = runtime.Poll();
    runner.Observe(polled);
    for (model::WorkerEvent& event : polled) unsent.push_back(std::move(event));
    if (!registered) continue;
    // Logs first: an exit is posted only once its worker's output is shipped (LogShipper).
    for (const model::WorkerKey& key : runner.running()) shipper.Track(key);
    for (const model::WorkerEvent& event : unsent) shipper.Track(event.key);
    shipper.Ship();
    post_usage();
    json events = json::array();
    std::vector<model::WorkerEvent> held;  // exits whose output is not all shipped yet
    std::vector<model::WorkerKey> exited;  // those posted now
    for (const model::WorkerEvent& event : unsent) {
      const bool exit = event.kind == model::WorkerEvent::Kind::kExited;
      if (exit && !shipper.Drained(event.key)) {
        held.push_back(event);
        continue;
      }
      events.push_back(codec::ToJson(event));
      if (exit) exited.push_back(event.key);
    }
    if (events.empty()) continue;
    const TimeMs sent_at = clock.Now();
    auto posted = client->Post(node_path + "/events", codec::DumpJson(json{{"events", events}}),
                               "application/json");
    fence.Called(sent_at, posted);
    if (posted) {
      for (const model::WorkerKey& key : exited) shipper.Forget(key);
      unsent = std::move(held);
    }
  }
  return OkStatus();
}

}  // namespace drover::server
