// agent_load: agents at cluster scale (issue 15; docs/benchmarks.md, "Agents at scale").
//
// Runs what `drover server --agent-listen` assembles (a ControlPlane over SQLite in a temporary
// directory, an HttpServer with an agent listener on 127.0.0.1) and simulates N agents in the
// same process with one epoll thread driving one non-blocking loopback connection per agent.
// Each agent speaks the agent protocol as `drover agent` does, one request at a time: it
// registers (sending back the "credential" of the registration reply, when there is one, as
// `Authorization: Bearer`), long-polls for commands (wait_ms, acknowledging what it carried
// out), and answers each launch with a started and an exited event (exit code 0) in one post.
// Once every agent's poll is parked, J one-CPU jobs are submitted (ControlPlane::Submit) and
// the tool waits until all have succeeded, then idles until the run has lasted --seconds.
//
// Reported: the process's threads (most seen in /proc/self/task, sampled every 100 ms, less the
// tool's own 3: the agents' loop, the sampler and main) and its peak RSS (VmHWM, the simulated
// agents included); launch latency p50/p99 from the job's placement (Attempt::placed_at: the
// launch command is queued in the same step) to the agent receiving it, and from submission;
// jobs completed per second (first submission to last success); nodes declared lost (all false:
// every agent keeps polling). Usage:
//   agent_load [--agents N] [--jobs J] [--wait-ms W] [--seconds S]   (1000, 3000, 10000, 45)

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "drover/codec/json.h"
#include "drover/common/clock.h"
#include "drover/server/control_plane.h"
#include "drover/server/http_server.h"
#include "drover/store/store.h"
#include "drover/testing/loopback.h"
#include "drover/testing/temp_dir.h"
#include "drover/testing/threads.h"

namespace drover::server {
namespace {

using nlohmann::json;

struct Flags {
  int agents = 1000;
  int jobs = 3000;
  DurationMs wait_ms = 10 * kMillisPerSecond;
  int seconds = 45;
};

// VmHWM of /proc/self/status in MiB.
double PeakRssMib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  std::size_t rank = static_cast<std::size_t>(q * static_cast<double>(values.size()) + 0.999999);
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

// One simulated agent: its connection and where it is in the protocol.
struct Agent {
  enum class Step { kRegister, kPoll, kPost };
  int fd = -1;
  std::string node;
  std::string credential;
  Step step = Step::kRegister;
  std::string out;  // the request being sent
  std::size_t written = 0;
  std::string in;  // what came of the response
  api::AgentAck ack;
  json events = json::array();  // to post
};

// The simulated agents on one epoll thread. Launches received: job id -> wall-clock ms.
class Agents {
 public:
  Agents(int port, int count) : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
    agents_.resize(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
      Agent& agent = agents_[static_cast<std::size_t>(i)];
      agent.node = fmt::format("sim-{:05d}", i);
      agent.fd = testing::ConnectLoopback(port);
      if (agent.fd < 0) {
        std::perror("connect");
        std::exit(1);
      }
      int yes = 1;
      ::setsockopt(agent.fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
      model::Node node;
      node.name = NodeId(agent.node);
      node.address = "127.0.0.1";
      node.cpu_millis = 4'000;
      node.memory_bytes = std::int64_t{16} << 30;
      Send(agent, "POST", "/v1/agents/register", codec::DumpJson(codec::ToJson(node)));
      epoll_event event{};
      event.events = EPOLLIN | EPOLLOUT;
      event.data.u32 = static_cast<std::uint32_t>(i);
      ::epoll_ctl(epoll_, EPOLL_CTL_ADD, agent.fd, &event);
    }
  }
  ~Agents() {
    for (Agent& agent : agents_) ::close(agent.fd);
    ::close(epoll_);
  }

  // Drives every agent until `stop`; `wait_ms` is each poll's wait.
  void Run(DurationMs wait_ms, const std::atomic<bool>& stop) {
    wait_ms_ = wait_ms;
    epoll_event events[256];
    while (!stop) {
      int n = ::epoll_wait(epoll_, events, 256, 100);
      for (int i = 0; i < n; ++i) OnEvent(agents_[events[i].data.u32], events[i].events);
    }
  }

  int registered() const { return registered_; }
  int errors() const { return errors_; }
  std::map<std::int64_t, TimeMs> Received() {
    std::lock_guard lock(mu_);
    return received_;
  }

 private:
  void Send(Agent& agent, const std::string& method, const std::string& target,
            const std::string& body) {
    agent.out = fmt::format("{} {} HTTP/1.1\r\nHost: sim\r\nContent-Length: {}\r\n", method, target,
                            body.size());
    if (!body.empty()) agent.out += "Content-Type: application/json\r\n";
    if (!agent.credential.empty())
      agent.out += "Authorization: Bearer " + agent.credential + "\r\n";
    agent.out += "\r\n" + body;
    agent.written = 0;
  }

  void Poll(Agent& agent) {
    agent.step = Agent::Step::kPoll;
    Send(agent, "GET",
         fmt::format("/v1/agents/{}/commands?wait_ms={}&epoch={}&ack={}", agent.node, wait_ms_,
                     agent.ack.epoch, agent.ack.seq),
         "");
  }

  void OnEvent(Agent& agent, std::uint32_t events) {
    if (events & EPOLLOUT) {
      while (agent.written < agent.out.size()) {
        ssize_t n = ::send(agent.fd, agent.out.data() + agent.written,
                           agent.out.size() - agent.written, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0) break;
        agent.written += static_cast<std::size_t>(n);
      }
    }
    if (!(events & EPOLLIN)) return;
    char buffer[16 << 10];
    while (true) {
      ssize_t n = ::recv(agent.fd, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n <= 0) break;
      agent.in.append(buffer, static_cast<std::size_t>(n));
    }
    std::size_t head = agent.in.find("\r\n\r\n");
    if (head == std::string::npos) return;
    std::size_t at = agent.in.find("Content-Length: ");
    std::size_t length = at == std::string::npos ? 0 : std::stoul(agent.in.substr(at + 16));
    if (agent.in.size() < head + 4 + length) return;
    const int status = std::atoi(agent.in.c_str() + 9);
    json body = json::parse(agent.in.substr(head + 4, length), nullptr, false);
    agent.in.erase(0, head + 4 + length);
    if (status != 200) {
      ++errors_;
      spdlog::warn("{}: HTTP {}: {}", agent.node, status, body.dump());
    }
    switch (agent.step) {
      case Agent::Step::kRegister:
        if (status == 200) {
          ++registered_;
          agent.credential = body.value("credential", "");
        }
        return status == 200 ? Poll(agent) : Send(agent, "POST", "/v1/agents/register", "");
      case Agent::Step::kPoll:
        if (status == 200) Carry(agent, body);
        if (agent.events.empty()) return Poll(agent);
        agent.step = Agent::Step::kPost;
        return Send(agent, "POST", fmt::format("/v1/agents/{}/events", agent.node),
                    json{{"events", agent.events}}.dump());
      case Agent::Step::kPost:
        if (status == 200) agent.events = json::array();
        return Poll(agent);
    }
  }

  // Carries out a poll's commands: each launch not seen before exits at once, successfully.
  void Carry(Agent& agent, const json& body) {
    const std::int64_t epoch = body.value("epoch", std::int64_t{0});
    if (epoch != agent.ack.epoch) agent.ack = api::AgentAck{epoch, 0};
    const TimeMs now = SystemClock().Now();
    for (const json& command : body.value("commands", json::array())) {
      const std::int64_t seq = command.value("seq", std::int64_t{0});
      if (seq <= agent.ack.seq) continue;
      agent.ack.seq = seq;
      if (command.value("kind", "") != "launch") continue;
      auto launch = codec::LaunchSpecFromJson(command["launch"]);
      if (!launch) {
        ++errors_;
        continue;
      }
      model::WorkerEvent started;
      started.key = launch->key;
      started.kind = model::WorkerEvent::Kind::kStarted;
      started.at = now;
      model::WorkerEvent exited = started;
      exited.kind = model::WorkerEvent::Kind::kExited;
      exited.exit.exit_code = 0;
      agent.events.push_back(codec::ToJson(started));
      agent.events.push_back(codec::ToJson(exited));
      std::lock_guard lock(mu_);
      received_.emplace(started.key.job.value(), now);
    }
  }

  const int epoll_;
  std::vector<Agent> agents_;
  DurationMs wait_ms_ = 0;
  std::atomic<int> registered_{0};
  std::atomic<int> errors_{0};
  std::mutex mu_;
  std::map<std::int64_t, TimeMs> received_;  // GUARDED_BY(mu_)
};

int Run(const Flags& flags) {
  spdlog::set_level(spdlog::level::warn);
  testing::TempDir dir("drover-agent-load");
  auto store = store::OpenSqliteStore(dir.path() + "/drover.db");
  if (!store) return std::fprintf(stderr, "%s\n", store.error().ToString().c_str()), 1;
  SystemClock clock;
  ControlPlaneOptions options;
  options.agent_timeout_ms = 30 * kMillisPerSecond;
  ControlPlane plane(*std::move(store), clock, options);
  if (Status started = plane.Start(); !started) {
    return std::fprintf(stderr, "%s\n", started.error().ToString().c_str()), 1;
  }
  HttpOptions http_options;
  http_options.agent_host = "127.0.0.1";
  http_options.agent_port = 0;
  http_options.limits.max_connections = std::max(1024, flags.agents + 64);
  auto http = HttpServer::Start(plane, "127.0.0.1", 0, http_options);
  if (!http) return std::fprintf(stderr, "%s\n", http.error().ToString().c_str()), 1;

  std::atomic<bool> stop{false};
  std::atomic<int> max_threads{0};
  std::atomic<int> max_lost{0};
  std::thread sampler([&] {
    int tick = 0;
    while (!stop) {
      max_threads = std::max(max_threads.load(), testing::CountThreads());
      if (++tick % 10 == 0) {
        int lost = 0;
        for (const api::NodeStatus& node : plane.Nodes()) lost += node.lost;
        max_lost = std::max(max_lost.load(), lost);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const auto run_start = std::chrono::steady_clock::now();
  Agents agents((*http)->agent_port(), flags.agents);
  std::thread loop([&] { agents.Run(flags.wait_ms, stop); });
  while (agents.registered() < flags.agents || (*http)->Stats().parked < flags.agents) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double connect_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();

  std::map<std::int64_t, TimeMs> submitted_at;
  const TimeMs first_submit = clock.Now();
  for (int i = 0; i < flags.jobs; ++i) {
    auto submitted = plane.Submit(
        "kind: Job\nname: trivial\nresources: {cpu: 1, memory: 64Mi}\ncommand: [\"true\"]\n",
        spec::ParseOptions{}, "", model::AdminIdentity("bench"));
    if (!submitted) return std::fprintf(stderr, "%s\n", submitted.error().ToString().c_str()), 1;
    submitted_at[submitted->jobs.at(0).id.value()] = clock.Now();
  }
  TimeMs last_done = 0;
  std::vector<double> from_placed, from_submit;
  for (auto& [id, at] : submitted_at) {
    while (true) {
      auto job = plane.GetJob(JobId(id));
      if (job && job->state == model::JobState::kSucceeded) {
        const model::Attempt& attempt = job->attempts.back();
        last_done = std::max(last_done, attempt.finished_at);
        auto received = agents.Received();
        from_placed.push_back(static_cast<double>(received.at(id) - attempt.placed_at));
        from_submit.push_back(static_cast<double>(received.at(id) - at));
        break;
      }
      if (job && model::IsTerminal(job->state)) {
        std::fprintf(stderr, "job %lld ended %s\n", static_cast<long long>(id),
                     std::string(model::JobStateName(job->state)).c_str());
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  const double jobs_per_s = flags.jobs * 1000.0 / static_cast<double>(last_done - first_submit);
  while (std::chrono::steady_clock::now() - run_start < std::chrono::seconds(flags.seconds)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  int lost = 0;
  for (const api::NodeStatus& node : plane.Nodes()) lost += node.lost;
  stop = true;
  loop.join();
  sampler.join();
  constexpr int kOwnThreads = 3;
  std::printf(
      "agents %d (registered and parked in %.1f s), jobs %d, poll wait %lld ms, run %d s\n"
      "server threads (max seen) %d, peak RSS %.0f MiB (agents included)\n"
      "launch latency placed->agent p50 %.0f ms p99 %.0f ms; submit->agent p50 %.0f ms "
      "p99 %.0f ms\n"
      "jobs completed %.0f/s; nodes declared lost %d (most at once %d); agent HTTP errors %d\n",
      flags.agents, connect_s, flags.jobs, static_cast<long long>(flags.wait_ms), flags.seconds,
      max_threads.load() - kOwnThreads, PeakRssMib(), Quantile(from_placed, 0.5),
      Quantile(from_placed, 0.99), Quantile(from_submit, 0.5), Quantile(from_submit, 0.99),
      jobs_per_s, lost, max_lost.load(), agents.errors());
  (*http)->Stop();
  plane.Stop();
  return lost == 0 && max_lost == 0 ? 0 : 2;
}

}  // namespace
}  // namespace drover::server

int main(int argc, char** argv) {
  drover::server::Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i];
    const long long value = std::atoll(argv[i + 1]);
    if (name == "--agents") {
      flags.agents = static_cast<int>(value);
    } else if (name == "--jobs") {
      flags.jobs = static_cast<int>(value);
    } else if (name == "--wait-ms") {
      flags.wait_ms = value;
    } else if (name == "--seconds") {
      flags.seconds = static_cast<int>(value);
    } else {
      std::fprintf(stderr, "unknown flag %s; see the file's first comment\n", name.c_str());
      return 1;
    }
  }
  return drover::server::Run(flags);
}
