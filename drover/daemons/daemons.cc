#include "drover/daemons/daemons.h"

#include <fmt/format.h>
#include <pwd.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#include "drover/agent/executables.h"
#include "drover/api/views.h"
#include "drover/cli/table.h"
#include "drover/cli/text.h"
#include "drover/common/quantity.h"
#include "drover/exec/kubernetes/executor.h"
#include "drover/exec/slurm/slurm_executor.h"
#include "drover/model/metrics.h"
#include "drover/os/allocator.h"
#include "drover/os/files.h"
#include "drover/os/process_image.h"
#include "drover/server/data_dir_lock.h"
#include "drover/server/http_server.h"
#include "drover/server/leader_election.h"
#include "drover/server/secret.h"
#include "drover/server/secret_store.h"
#include "drover/server/token_registry.h"
#include "drover/store/postgres_lease.h"
#include "drover/store/postgres_store.h"
#include "drover/workflow/rollup.h"

namespace drover::daemons {

using cli::CurrentUser;
using cli::DescribePipeline;
using cli::FormatTimestamp;
using cli::ReadSpecFile;
using cli::ReportError;
using cli::SpecOptionsFor;
using cli::Table;

namespace {

// The name of the user this process runs as (its effective uid), whom the first admin token is
// for; "uid<N>" without a passwd entry.
std::string ServerUser() {
  if (const passwd* entry = getpwuid(geteuid())) return entry->pw_name;
  return fmt::format("uid{}", geteuid());
}

std::atomic<int> g_signal{0};

// SIGINT and SIGTERM set g_signal; the loops below poll it.
void InstallSignalHandlers() {
  struct sigaction action {};
  action.sa_handler = [](int signal) { g_signal = signal; };
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// A control plane and its API, bound but not serving yet.
struct Daemon {
  std::optional<server::DataDirLock> lock;  // held for the daemon's life; destroyed last
  std::unique_ptr<server::ControlPlane> plane;
  std::unique_ptr<server::HttpServer> http;  // after `plane`, so destroyed before it
  std::string url;                           // the API's base URL
};

// The store named by --store: SQLite in `data_dir` when empty, else PostgreSQL, its writes
// passing `fence` (null: unfenced).
// --store-wait's default: long enough for a PostgreSQL that restarts, or boots with the server.
constexpr DurationMs kDefaultStoreWait = 60 * kMillisPerSecond;

// `open()`'s result, tried again every second while it is kUnavailable (the database
// unreachable), for up to `wait` or until a signal arrives; any other error at once. A standby
// (or a leader restarted in place after losing the database) that starts while PostgreSQL
// restarts comes up when it does; a wrong address still fails, after `wait`.
template <typename Open>
auto WhileUnreachable(DurationMs wait, Open open) -> decltype(open()) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait);
  for (bool told = false;; told = true) {
    auto opened = open();
    if (opened || opened.error().code != ErrorCode::kUnavailable || g_signal != 0 ||
        std::chrono::steady_clock::now() >= give_up) {
      return opened;
    }
    if (!told) {
      std::cerr << "drover server: the database is unreachable (" << opened.error().message
                << "); trying again every second for up to " << FormatDuration(wait)
                << " (--store-wait)" << std::endl;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

Result<std::unique_ptr<store::Store>> OpenStore(const std::string& store_flag,
                                                const std::string& data_dir,
                                                std::shared_ptr<const store::WriteFence> fence,
                                                DurationMs store_wait) {
  if (store_flag.empty()) {
    return store::OpenSqliteStore((std::filesystem::path(data_dir) / "drover.db").string());
  }
  if (!store::IsPostgresUri(store_flag)) {
    return InvalidArgument(fmt::format(
        "--store: '{}' is not a postgres:// or postgresql:// URI (leave it out for SQLite in "
        "--data)",
        store::RedactConnectionString(store_flag)));
  }
  return WhileUnreachable(store_wait,
                          [&] { return store::OpenPostgresStore(store_flag, {.fence = fence}); });
}

// The Slurm executor's submission helper for --slurm-submit `mode`: drover-slurm-submit beside
// this binary for kSlurmSubmitHelper, empty (an `sbatch` process per submission) for
// kSlurmSubmitSbatch or when the helper is missing (logged at info: `sbatch` still works, and a
// server without Slurm queues needs neither).
std::string SlurmSubmitHelper(std::string_view mode) {
  if (mode == kSlurmSubmitSbatch) return "";
  std::string helper = agent::BesideSelf("drover-slurm-submit");
  if (helper.empty()) {
    spdlog::info("no drover-slurm-submit beside {}: Slurm queues submit with sbatch",
                 agent::SelfExecutable());
  }
  return helper;
}

// Opens the store and the control plane over `data_dir`, binds its API on host:port, and adds
// the local nodes of `nodes`, whose workers find the API at its URL (DROVER_SERVER). Its PostgreSQL
// store's writes pass `fence` (null: unfenced). Slurm queues submit through
// `slurm_submit_helper` (SlurmExecutorOptions::submit_helper; empty: sbatch). A bad policy file
// is an error before anything starts.
Result<Daemon> OpenControlPlane(
    const std::string& data_dir, const std::string& store_flag, const server::LocalNodeFlags& nodes,
    const std::string& fallback_gpus, const std::string& policy_file, const std::string& host,
    int port, const std::string& slurm_submit_helper, const Clock& clock,
    server::ControlPlaneOptions options = {}, const server::HttpOptions& http_options = {},
    std::shared_ptr<const store::WriteFence> fence = nullptr, DurationMs store_wait = 0) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return InvalidArgument(fmt::format("cannot create {}: {}", data_dir, ec.message()));
  Daemon daemon;
  DROVER_ASSIGN_OR_RETURN(daemon.lock, server::DataDirLock::Acquire(data_dir, "drover server"));
  std::string notice;
  DROVER_ASSIGN_OR_RETURN(auto described,
                          server::DescribeLocalNodes(nodes, fallback_gpus, &notice));
  if (!notice.empty()) std::cerr << notice << "\n";
  DROVER_ASSIGN_OR_RETURN(auto store,
                          OpenStore(store_flag, data_dir, std::move(fence), store_wait));
  options.control.value_outputs_root = (std::filesystem::path(data_dir) / "outputs").string();
  options.remote_logs_dir = (std::filesystem::path(data_dir) / "remote-logs").string();
  options.publications_dir = (std::filesystem::path(data_dir) / "publications").string();
  // Kept beside the database, not in it (server/token_registry.h says why).
  DROVER_ASSIGN_OR_RETURN(options.job_token_key,
                          server::TokenRegistry::LoadOrCreateJobKey(
                              (std::filesystem::path(data_dir) / "job-token.key").string()));
  daemon.plane = std::make_unique<server::ControlPlane>(std::move(store), clock, options);
  DROVER_ASSIGN_OR_RETURN(
      auto secrets,
      server::SecretStore::Open((std::filesystem::path(data_dir) / "secrets").string()));
  daemon.plane->SetSecretStore(std::move(secrets));
  if (!policy_file.empty()) DROVER_RETURN_IF_ERROR(daemon.plane->LoadPolicyFile(policy_file));
  DROVER_ASSIGN_OR_RETURN(daemon.http,
                          server::HttpServer::Bind(*daemon.plane, host, port, http_options));
  daemon.url = fmt::format("{}://{}:{}", http_options.tls.enabled() ? "https" : "http", host,
                           daemon.http->port());
  DROVER_ASSIGN_OR_RETURN(agent::UsageSampler::Options sampling, server::SamplingOptions(nodes));
  DROVER_RETURN_IF_ERROR(server::AddLocalNodes(*daemon.plane, described, data_dir,
                                               server::SupervisorExecutable(), daemon.url, clock,
                                               sampling));
  // Queues whose policy says `executor: slurm` hand their jobs to the Slurm cluster that
  // Slurm's commands reach from here (PATH, SLURM_CONF); it idles while none does.
  exec::slurm::SlurmExecutorOptions slurm;
  slurm.runs_dir = (std::filesystem::path(data_dir) / "runs" / "slurm").string();
  slurm.server_url = daemon.url;
  // The jobs' DROVER_BIN: the lean `drover` beside this binary, which starts faster.
  slurm.drover_bin = agent::BesideSelfOrSelf("drover");
  slurm.submit_helper = slurm_submit_helper;
  daemon.plane->AddExecutor(std::make_unique<exec::slurm::SlurmExecutor>(slurm, clock));
  return daemon;
}

// Parses `text` with `parser` into `into` when it is not empty (empty keeps the default);
// kInvalidArgument naming `flag` and what it expects (`what`) unless the value is positive.
template <typename Parser>
Status ParsePositive(const std::string& text, std::string_view flag, std::string_view what,
                     Parser parser, std::int64_t& into) {
  if (text.empty()) return OkStatus();
  auto value = parser(text);
  if (!value || *value <= 0) {
    return InvalidArgument(fmt::format("{}: expected a positive {}, got '{}'", flag, what, text));
  }
  into = *value;
  return OkStatus();
}

constexpr std::string_view kSize = "size such as 1Mi";
constexpr std::string_view kDuration = "duration";

}  // namespace

Result<std::pair<std::string, int>> SplitHostPort(const std::string& listen,
                                                  std::string_view flag) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgument(fmt::format("{}: expected HOST:PORT, e.g. 127.0.0.1:8420", flag));
  }
  try {
    int port = std::stoi(listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    return std::make_pair(listen.substr(0, colon), port);
  } catch (const std::exception&) {
    return InvalidArgument(fmt::format("{}: the port must be a number from 0 to 65535", flag));
  }
}

Result<std::string> ReadTokenFile(const std::string& path, std::string_view flag) {
  std::ifstream in(path);
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto first = token.find_first_not_of(" \t\r\n");
  const auto last = token.find_last_not_of(" \t\r\n");
  if (!in.good() && !in.eof()) {
    return InvalidArgument(fmt::format("{}: cannot read {}", flag, path));
  }
  if (first == std::string::npos) {
    return InvalidArgument(fmt::format("{}: {} holds no token", flag, path));
  }
  return token.substr(first, last - first + 1);
}

Result<server::HttpOptions> HttpOptionsOf(const ServerFlags& flags) {
  server::HttpOptions options;
  options.limits = flags.limits;
  if (!flags.agent_listen.empty()) {
    auto address = SplitHostPort(flags.agent_listen, "--agent-listen");
    if (!address) return tl::unexpected(address.error());
    std::tie(options.agent_host, options.agent_port) = *address;
  }
  if (flags.tls.cert_file.empty() != flags.tls.key_file.empty()) {
    return InvalidArgument(flags.tls.cert_file.empty() ? "--tls-cert: required with --tls-key"
                                                       : "--tls-key: required with --tls-cert");
  }
  options.tls = flags.tls;
  server::HttpLimits& limits = options.limits;
  DROVER_RETURN_IF_ERROR(
      ParsePositive(flags.max_body, "--max-body", kSize, ParseBytes, limits.max_body_bytes));
  DROVER_RETURN_IF_ERROR(ParsePositive(flags.header_timeout, "--header-timeout", kDuration,
                                       ParseDuration, limits.header_timeout_ms));
  DROVER_RETURN_IF_ERROR(ParsePositive(flags.body_timeout, "--body-timeout", kDuration,
                                       ParseDuration, limits.body_timeout_ms));
  DROVER_RETURN_IF_ERROR(ParsePositive(flags.idle_timeout, "--idle-timeout", kDuration,
                                       ParseDuration, limits.idle_timeout_ms));
  DROVER_RETURN_IF_ERROR(ParsePositive(flags.event_stream_buffer, "--event-stream-buffer", kSize,
                                       ParseBytes, limits.stream_buffer_bytes));
  DROVER_RETURN_IF_ERROR(ParsePositive(flags.event_heartbeat, "--event-heartbeat", kDuration,
                                       ParseDuration, limits.stream_heartbeat_ms));
  for (auto [count, flag] : {std::pair{flags.limits.max_connections, "--max-connections"},
                             {flags.limits.max_client_connections, "--max-client-connections"},
                             {flags.limits.max_long_polls, "--max-long-polls"},
                             {flags.limits.threads, "--http-threads"}}) {
    if (count <= 0) return InvalidArgument(fmt::format("{}: expected a positive count", flag));
  }
  return options;
}

Result<server::ControlPlaneOptions> PlaneOptionsOf(const ServerFlags& flags) {
  server::ControlPlaneOptions options;
  auto agent_timeout = ParseDuration(flags.agent_timeout);
  if (!agent_timeout) {
    return InvalidArgument("--agent-timeout: " + agent_timeout.error().message);
  }
  options.agent_timeout_ms = *agent_timeout;
  {
    int from = 0, to = 0;
    char dash = 0;
    std::istringstream ports(flags.service_ports);
    if (!(ports >> from >> dash >> to) || dash != '-' || !ports.eof() || from < 1 || to > 65535 ||
        from > to) {
      return InvalidArgument(fmt::format(
          "--service-ports: '{}' is not a port range FROM-TO within 1-65535", flags.service_ports));
    }
    options.service_port_from = from;
    options.service_port_to = to;
  }
  options.events = flags.events;
  for (auto [count, flag] :
       {std::pair{static_cast<std::int64_t>(flags.events.ring_events), "--event-ring"},
        {flags.events.max_streams, "--max-event-streams"},
        {flags.events.max_streams_per_token, "--max-event-streams-per-token"}}) {
    if (count <= 0) return InvalidArgument(fmt::format("{}: expected a positive count", flag));
  }
  spec::SpecLimits& limits = options.spec_limits;
  DROVER_RETURN_IF_ERROR(ParsePositive(flags.max_spec_size, "--max-spec-size", kSize, ParseBytes,
                                       limits.max_expanded_bytes));
  DROVER_RETURN_IF_ERROR(
      ParsePositive(flags.max_arg_size, "--max-arg-size", kSize, ParseBytes, limits.max_arg_bytes));
  DROVER_RETURN_IF_ERROR(ParsePositive(flags.max_launch_size, "--max-launch-size", kSize,
                                       ParseBytes, limits.max_launch_bytes));
  DROVER_RETURN_IF_ERROR(ParsePositive(flags.max_remote_log_size, "--max-remote-log-size", kSize,
                                       ParseBytes, options.max_remote_log_bytes));
  DROVER_RETURN_IF_ERROR(ParsePositive(flags.diagnosis_min_sampled, "--diagnosis-min-sampled",
                                       kDuration, ParseDuration, options.diagnosis.min_sampled_ms));
  if (!flags.join_token_file.empty()) {
    DROVER_ASSIGN_OR_RETURN(options.join_token,
                            ReadTokenFile(flags.join_token_file, "--join-token-file"));
  }
  if (limits.max_arg_bytes > spec::kMaxArgBytes) {
    return InvalidArgument(fmt::format(
        "--max-arg-size: at most {} bytes, the longest string Linux passes to exec, got '{}'",
        spec::kMaxArgBytes, flags.max_arg_size));
  }
  return options;
}

// The lease settings of --lease and --lease-renew; kInvalidArgument naming the flag unless both
// are positive durations and the renewal is shorter than the lease.
Result<server::LeaseOptions> LeaseOptionsOf(const ServerFlags& flags) {
  server::LeaseOptions options;
  DROVER_RETURN_IF_ERROR(
      ParsePositive(flags.lease, "--lease", kDuration, ParseDuration, options.duration));
  DROVER_RETURN_IF_ERROR(ParsePositive(flags.lease_renew, "--lease-renew", kDuration, ParseDuration,
                                       options.renew_every));
  if (options.renew_every >= options.duration) {
    return InvalidArgument(fmt::format("--lease-renew: {} must be shorter than --lease {}",
                                       FormatDuration(options.renew_every),
                                       FormatDuration(options.duration)));
  }
  return options;
}

// Replaces this process by a fresh `drover server` of the same command line, in place (same
// pid, same environment; os::ReplaceProcessImage): the way back from stepping down without a
// service manager. The listening sockets, the data folder's lock and the database's connections
// close across the exec: the new image binds, locks and connects afresh, reads the store, and
// campaigns like any server that starts. Exit status 75 (EX_TEMPFAIL) if the exec fails.
[[noreturn]] void RestartInPlace() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t start = 0; start < line.size();) {
    const std::size_t end = std::min(line.find('\0', start), line.size());
    args.push_back(line.substr(start, end - start));
    start = end + 1;
  }
  // No command line read: nothing to exec.
  const int error = args.empty() ? ENOENT : os::ReplaceProcessImage("/proc/self/exe", args);
  std::cerr << "drover server: cannot restart itself (" << std::strerror(error) << "); exiting"
            << std::endl;
  std::_Exit(75);
}

// Stops a leader whose lease a newer one took (a fenced write, or a renewal that found a newer
// epoch) or lapsed (SelfFence): at once, before anything else is written or launched, and
// restarts it in place as a standby. Running workers keep running under their supervisors, for
// the leader to adopt.
[[noreturn]] void StepDown(const Error& why) {
  std::cerr << "drover server: no longer the leader (" << why.message
            << "); restarting as a standby" << std::endl;
  RestartInPlace();
}

// Stops a leader whose lease it could not renew in time (the database unreachable) from acting
// as leader before a standby may take over: every API call is answered 503 "standby" from now
// on, and every write is refused (a refused write stops the control plane, so nothing more is
// launched). The process stays up until the database answers again; then the election releases
// the lease and steps it down (StepDown: it restarts in place, as a standby).
void SelfFence(server::HttpServer& http, store::WriteFence& fence, server::ServerMetrics& metrics,
               const std::string& advertised, const std::string& why) {
  http.SetStandby("");
  fence.Set(store::WriteFence::kNotLeader);
  metrics.SetElection(advertised, 0);
  std::cerr << "drover server: stopped acting as the leader (" << why
            << "); waiting for the database to step down" << std::endl;
}

int ServerCommand(const ServerFlags& flags) {
  InstallSignalHandlers();
  // Before the control plane allocates: its scheduling cycles' large blocks then come from the
  // arena and stay mapped between cycles (os/allocator.h says why).
  if (os::ReserveArena(os::kServerArenaBytes)) {
    spdlog::info("allocator: {} MiB of address space reserved as mimalloc's arena",
                 os::kServerArenaBytes >> 20);
  }
  auto address = SplitHostPort(flags.listen);
  if (!address) return ReportError(address.error());
  auto options = PlaneOptionsOf(flags);
  if (!options) return ReportError(options.error());
  auto http_options = HttpOptionsOf(flags);
  if (!http_options) return ReportError(http_options.error());
  // Without --join-token-file the server keeps a join token of its own: an agent is issued a
  // node credential only when it shows one (docs/security.md, "Agents").
  const std::string own_join_token =
      (std::filesystem::path(flags.data_dir) / "join.token").string();
  if (flags.join_token_file.empty()) {
    std::error_code ignored;
    std::filesystem::create_directories(flags.data_dir, ignored);
    auto token = server::LoadOrCreateSecretFile(own_join_token);
    if (!token) return ReportError(token.error());
    options->join_token = *std::move(token);
  }
  auto lease_options = LeaseOptionsOf(flags);
  if (!lease_options) return ReportError(lease_options.error());
  DurationMs store_wait = kDefaultStoreWait;
  Status wait_parsed =
      ParsePositive(flags.store_wait, "--store-wait", kDuration, ParseDuration, store_wait);
  if (!wait_parsed) return ReportError(wait_parsed.error());
  // On PostgreSQL the servers sharing the database elect a leader; this one writes nothing until
  // it leads, and exits the moment a write of its finds a newer leader (docs/operations.md "Two
  // servers on PostgreSQL").
  std::shared_ptr<store::WriteFence> fence;
  if (store::IsPostgresUri(flags.store)) {
    fence = std::make_shared<store::WriteFence>(store::WriteFence::kNotLeader, StepDown);
    // A write refused because this server stopped leading (SelfFence) stops the control plane
    // and leaves the process answering 503 until the database is back. A write that lost the
    // database (its commit's outcome unknown) restarts the process in place: the new image
    // waits for the database, reads what landed, and campaigns, while its lease lapses for
    // whichever server takes it next. Any other failed write ends the process, as on SQLite.
    options->on_store_failure = [fence](const Error& error) {
      if (fence->epoch() == store::WriteFence::kNotLeader) {
        spdlog::warn("control plane stopped: {}", error.message);
        return;
      }
      if (error.code == ErrorCode::kUnavailable) {
        spdlog::critical("lost the database, restarting so that the store is read afresh: {}",
                         error.message);
        RestartInPlace();
      }
      server::ExitForRestart(error);
    };
  }
  SystemClock clock;
  auto daemon =
      OpenControlPlane(flags.data_dir, flags.store, flags.nodes, "0", flags.policy_file,
                       address->first, address->second, SlurmSubmitHelper(flags.slurm_submit),
                       clock, *options, *http_options, fence, store_wait);
  if (!daemon) return ReportError(daemon.error());
  std::unique_ptr<server::LeaderElection> election;
  if (fence) {
    auto lease =
        WhileUnreachable(store_wait, [&] { return store::PostgresLease::Open(flags.store); });
    if (!lease) return ReportError(lease.error());
    const std::string advertised = flags.advertise_url.empty() ? daemon->url : flags.advertise_url;
    election = std::make_unique<server::LeaderElection>(
        *std::move(lease), fmt::format("{} pid {}", advertised, getpid()), advertised,
        *lease_options);
    daemon->plane->metrics().SetElection(advertised, 0);
    daemon->http->SetStandby("");
    daemon->http->Serve();
    std::string shown;
    std::optional<std::int64_t> epoch =
        election->Campaign([] { return g_signal != 0; },
                           [&](const std::string& leader) {
                             daemon->http->SetStandby(leader);
                             if (leader == shown) return;
                             shown = leader;
                             std::cout << "drover server " << daemon->url
                                       << " is a standby; the leader is " << leader << std::endl;
                           });
    if (!epoch) {
      daemon->http->Stop();
      return 0;
    }
    fence->Set(*epoch);
    election->KeepRenewing(
        *epoch,
        [](const std::string& reason) {
          StepDown(Error{ErrorCode::kAborted, reason, {}});
        },
        [&daemon, fence, advertised](const std::string& reason) {
          SelfFence(*daemon->http, *fence, daemon->plane->metrics(), advertised, reason);
        });
    daemon->plane->metrics().SetElection(advertised, *epoch);
    std::cout << "drover server " << advertised << " leads (lease epoch " << *epoch << ")"
              << std::endl;
  }
  // Kubernetes: an explicit --kubeconfig must work; a default one is used when it does.
  std::string kubeconfig = flags.kubeconfig;
  const char* home = std::getenv("HOME");
  const bool explicit_kubeconfig = !kubeconfig.empty();
  const bool default_kubeconfig =
      std::getenv("KUBECONFIG") != nullptr ||
      (home != nullptr && std::filesystem::exists(std::filesystem::path(home) / ".kube/config"));
  if (explicit_kubeconfig || default_kubeconfig) {
    auto kubernetes = exec::kubernetes::NewKubernetesExecutor(kubeconfig, flags.kube_context);
    if (kubernetes) {
      daemon->plane->AddExecutor(*std::move(kubernetes));
    } else if (explicit_kubeconfig) {
      return ReportError(kubernetes.error());
    } else {
      std::cerr << "kubernetes executor off: " << kubernetes.error().message << "\n";
    }
  }
  Status started = daemon->plane->Start();
  if (!started) return ReportError(started.error());
  const std::string admin_token = (std::filesystem::path(flags.data_dir) / "admin.token").string();
  Result<bool> admin = daemon->plane->EnsureAdminToken(admin_token, ServerUser());
  if (!admin) return ReportError(admin.error());
  if (election) {
    daemon->http->SetStandby(std::nullopt);
  } else {
    daemon->http->Serve();
  }
  const std::string& url = daemon->url;
  std::cout << "drover server listening on " << url << " (data in " << flags.data_dir;
  if (!flags.store.empty()) {
    std::cout << ", state in " << store::RedactConnectionString(flags.store);
  }
  std::cout << ")" << std::endl;
  if (*admin) {
    std::cout << "admin token written to " << admin_token
              << " (mode 0600); the drover CLI run from the data directory's parent finds it"
              << std::endl;
  }
  const std::string join_file =
      flags.join_token_file.empty() ? own_join_token : flags.join_token_file;
  if (daemon->http->agent_port() >= 0) {
    std::cout << "agents: drover agent --server " << (flags.tls.enabled() ? "https" : "http")
              << "://" << http_options->agent_host << ":" << daemon->http->agent_port()
              << " --join-token-file " << join_file << std::endl;
  } else {
    std::cout << "agents: drover agent --server " << url << " --join-token-file " << join_file
              << std::endl;
  }
  if (!flags.policy_file.empty()) {
    std::cout << "scheduling policy from " << flags.policy_file << " ("
              << daemon->plane->Queues().size() << " queues; edits are picked up when saved)"
              << std::endl;
  }
  if (!flags.ready_file.empty()) {
    if (Status written =
            os::WriteFileAtomically(flags.ready_file, url + "\n", os::Durability::kVisible);
        !written) {
      std::cerr << "drover server: " << written.error().message << std::endl;
    }
  }
  while (g_signal == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::cout << "drover server stopping; running workers keep running under their supervisors"
            << std::endl;
  daemon->http->Stop();
  daemon->plane->Stop();
  if (election) election->Stop();  // after the plane's last writes
  return 0;
}

int AgentCommand(const AgentFlags& flags) {
  InstallSignalHandlers();
  if (flags.server.empty()) {
    return ReportError(
        Error{ErrorCode::kInvalidArgument, "--server: the server's URL is required", {}});
  }
  std::string notice;
  auto nodes = server::DescribeLocalNodes(flags.nodes, "0", &notice);
  if (!nodes) return ReportError(nodes.error());
  if (!notice.empty()) std::cerr << notice << "\n";
  if (nodes->size() != 1) {
    return ReportError(Error{
        ErrorCode::kInvalidArgument,
        "an agent serves exactly one node; its node file lists " + std::to_string(nodes->size()),
        {}});
  }
  std::error_code ec;
  std::filesystem::create_directories(flags.data_dir, ec);
  if (ec) {
    return ReportError(Error{ErrorCode::kInvalidArgument,
                             fmt::format("cannot create {}: {}", flags.data_dir, ec.message()),
                             {}});
  }
  auto lock = server::DataDirLock::Acquire(flags.data_dir, "drover agent");
  if (!lock) return ReportError(lock.error());
  server::AgentOptions options;
  auto sampling = server::SamplingOptions(flags.nodes);
  if (!sampling) return ReportError(sampling.error());
  options.sampling = *sampling;
  options.server_url = flags.server;
  options.node = nodes->front();
  options.runs_dir = (std::filesystem::path(flags.data_dir) / "runs").string();
  options.supervisor_path = server::SupervisorExecutable();
  options.ca_file = flags.ca_file;
  options.credential_file =
      flags.credential_file.empty()
          ? (std::filesystem::path(flags.data_dir) / "node.credential").string()
          : flags.credential_file;
  if (!flags.join_token_file.empty()) {
    auto token = ReadTokenFile(flags.join_token_file, "--join-token-file");
    if (!token) return ReportError(token.error());
    options.join_token = *std::move(token);
  } else if (const char* token = std::getenv("DROVER_JOIN_TOKEN")) {
    options.join_token = token;
  }
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    while (g_signal == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop = true;
  });
  SystemClock clock;
  std::cout << fmt::format("drover agent for node {} ({} GPUs) serving {}",
                           options.node.name.value(), options.node.gpus.size(), flags.server)
            << std::endl;
  Status ran = server::RunAgent(options, clock, stop);
  g_signal = SIGTERM;
  watcher.join();
  if (!ran) return ReportError(ran.error());
  return 0;
}

namespace {

std::string Shorten(DurationMs ms) { return ms > 0 ? FormatDuration(ms) : "-"; }

// Prints one line per job state change of `ids`; returns true when every job has finished.
bool PrintProgress(const server::ControlPlane& plane, const std::vector<JobId>& ids, TimeMs start,
                   std::map<JobId, model::JobState>& seen) {
  bool all_done = true;
  for (JobId id : ids) {
    auto job = plane.GetJob(id);
    if (!job) continue;
    all_done = all_done && model::IsTerminal(job->state);
    auto it = seen.find(id);
    if (it != seen.end() && it->second == job->state) continue;
    seen[id] = job->state;
    std::string detail;
    if (const model::Attempt* attempt = job->current_attempt()) {
      if (job->state == model::JobState::kStarting || job->state == model::JobState::kRunning) {
        for (const model::Worker& worker : attempt->workers) {
          std::string gpus;
          for (int gpu : worker.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(gpu);
          detail += fmt::format("{}{}{}", detail.empty() ? "on " : "; ", worker.node.value(),
                                gpus.empty() ? "" : " GPU " + gpus);
        }
      }
      if (attempt->number > 1) detail = fmt::format("attempt {} {}", attempt->number, detail);
    }
    if (detail.empty()) detail = job->status_message;
    std::cout << fmt::format("[{:>7}] {:<14} {:<10} {}", FormatDuration(plane.Now() - start),
                             fmt::format("{} ({})", job->spec.name, id.value()),
                             model::JobStateName(job->state), detail)
              << std::endl;
  }
  return all_done;
}

// Suspends every cron job of `crons` and cancels their unfinished runs; returns once no job of
// theirs is running (their workers would outlive the embedded control plane).
void StopCrons(server::ControlPlane& plane, const std::vector<model::CronSpec>& crons) {
  for (model::CronSpec cron : crons) {
    cron.suspend = true;
    (void)plane.PutCron(cron, model::AdminIdentity(CurrentUser()));
  }
  std::uint64_t version = 0;
  while (true) {
    bool unfinished = false;
    for (const server::CronStatus& status : plane.Crons()) {
      for (const server::CronRun& run : status.active) {
        unfinished = true;
        for (JobId id : run.jobs)
          (void)plane.Cancel(id, model::kSystemActor, "drover run finished");
      }
    }
    if (!unfinished) return;
    version = plane.WaitForChange(version, 200);
  }
}

// `drover run` of cron jobs: creates them, prints each run as it starts and ends, and returns
// once each cron job has completed `runs` runs (see StopCrons): 0 if every completed run
// succeeded, 1 otherwise.
int RunCrons(server::ControlPlane& plane, const std::vector<model::CronSpec>& crons, int runs,
             TimeMs start) {
  for (const model::CronSpec& cron : crons) {
    auto status = plane.PutCron(cron, model::AdminIdentity(CurrentUser()));
    if (!status) return ReportError(status.error());
    std::cout << fmt::format("cron job {}: \"{}\" in {}, next run at {}", cron.name, cron.schedule,
                             cron.time_zone, FormatTimestamp(status->next_run.value_or(0)))
              << std::endl;
  }
  std::map<std::string, workflow::RunState> seen;  // run id -> state printed
  int completed_total = 0;
  int failed_total = 0;
  std::uint64_t version = 0;
  while (g_signal == 0) {
    std::map<JobId, model::Job> jobs;
    for (model::Job& job : plane.ListJobs(store::JobFilter{})) jobs.emplace(job.id, std::move(job));
    bool done = true;
    completed_total = failed_total = 0;
    for (const model::CronSpec& cron : crons) {
      int completed = 0;
      for (const server::CronRun& run : server::CronRunsOf(cron.name, jobs)) {
        const bool finished = workflow::IsFinished(run.state);
        completed += finished ? 1 : 0;
        failed_total += finished && run.state != workflow::RunState::kSucceeded ? 1 : 0;
        auto [at, added] = seen.emplace(run.id, run.state);
        if (!added && at->second == run.state) continue;
        at->second = run.state;
        std::string ids;
        for (JobId id : run.jobs) ids += (ids.empty() ? "" : ",") + std::to_string(id.value());
        std::cout << fmt::format("[{:>7}] run {:<36} {:<10} job {}",
                                 FormatDuration(plane.Now() - start), run.id,
                                 workflow::kRunStateNames.Name(run.state), ids)
                  << std::endl;
      }
      completed_total += completed;
      done = done && completed >= runs;
    }
    if (done) break;
    version = plane.WaitForChange(version, 200);
  }
  const bool interrupted = g_signal != 0;
  if (interrupted) std::cout << "interrupted: cancelling the active runs" << std::endl;
  StopCrons(plane, crons);
  std::cout << fmt::format("{} run(s) finished, {} failed\n", completed_total, failed_total);
  return interrupted || failed_total > 0 ? 1 : 0;
}

}  // namespace

int RunCommand(const RunFlags& flags) {
  InstallSignalHandlers();
  auto text = ReadSpecFile(flags.file);
  if (!text) return ReportError(text.error());
  spec::ParseOptions options = SpecOptionsFor(flags.file);
  options.hold_infeasible = flags.hold_infeasible;
  spec::ParseOutput parsed = spec::ParseDocumentsWithDiagnostics(*text, options);
  if (!parsed.diagnostics.empty()) {
    for (const auto& diagnostic : parsed.diagnostics) std::cerr << diagnostic.ToString() << "\n";
    return 2;
  }
  std::string data_dir = flags.data_dir;
  if (data_dir.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "drover-run-XXXXXX").string();
    if (!mkdtemp(pattern.data())) {
      return ReportError(Error{ErrorCode::kUnavailable, "cannot create a temporary directory", {}});
    }
    data_dir = pattern;
  }
  SystemClock clock;
  spdlog::set_level(spdlog::level::warn);
  auto daemon = OpenControlPlane(data_dir, "", flags.nodes, "4xH100-80GB", flags.policy_file,
                                 "127.0.0.1", 0, SlurmSubmitHelper(kSlurmSubmitHelper), clock);
  if (!daemon) return ReportError(daemon.error());
  server::ControlPlane& plane = *daemon->plane;
  Status started = plane.Start();
  if (!started) return ReportError(started.error());
  // The run's private admin token: for `drover get/logs --token ...` against its API meanwhile
  // (its jobs have their own, DROVER_TOKEN).
  const std::string admin_token = (std::filesystem::path(data_dir) / "admin.token").string();
  Result<bool> admin = plane.EnsureAdminToken(admin_token, CurrentUser());
  if (!admin) return ReportError(admin.error());
  daemon->http->Serve();
  for (const server::NodeStatus& node : plane.Nodes()) {
    std::string models;
    for (const model::Gpu& gpu : node.node.gpus) {
      models += (models.empty() ? "" : ",") + std::to_string(gpu.index) + ":" + gpu.model;
    }
    std::cout << fmt::format("node {}: {} CPU, {} memory, {} GPU(s) {}", node.node.name.value(),
                             FormatCpuMillis(node.node.cpu_millis),
                             FormatBytesApprox(node.node.memory_bytes), node.node.gpus.size(),
                             models)
              << std::endl;
  }
  std::cout << fmt::format("control plane: {} (SQLite in {}), API at {} (token in {})", flags.file,
                           data_dir, daemon->url, admin_token)
            << std::endl;

  const TimeMs start = clock.Now();
  if (!parsed.crons.empty()) {
    const int status = RunCrons(plane, parsed.crons, flags.cron_runs, start);
    daemon->http->Stop();
    plane.Stop();
    return status;
  }
  auto submitted = plane.Submit(*text, options, "", model::AdminIdentity(CurrentUser()));
  if (!submitted) return ReportError(submitted.error());
  const std::vector<JobId> ids = submitted->Ids();
  std::map<JobId, model::JobState> seen;
  bool cancelling = false;
  std::uint64_t version = 0;
  while (!PrintProgress(plane, ids, start, seen)) {
    if (g_signal != 0 && !cancelling) {
      cancelling = true;
      std::cout << "interrupted: cancelling every job" << std::endl;
      for (JobId id : ids) (void)plane.Cancel(id, model::kSystemActor, "interrupted by the user");
    }
    version = plane.WaitForChange(version, 200);
  }

  Table table(
      {"JOB", "NAME", "STATE", "ATTEMPTS", "QUEUE WAIT", "START-UP", "RUN TIME", "GPU-HOURS"});
  bool succeeded = true;
  TimeMs now = clock.Now();
  std::vector<model::Job> jobs;
  for (JobId id : ids) {
    if (auto job = plane.GetJob(id)) jobs.push_back(*std::move(job));
  }
  for (const model::Job& job : jobs) {
    model::JobMetrics m = model::ComputeMetrics(job, now);
    succeeded = succeeded && job.state == model::JobState::kSucceeded;
    table.AddRow({std::to_string(job.id.value()), job.spec.name,
                  std::string(model::JobStateName(job.state)), std::to_string(m.attempts),
                  Shorten(m.queue_wait), Shorten(m.startup), Shorten(m.run_time),
                  fmt::format("{:.4f}", m.gpu_hours())});
  }
  std::cout << "\n" << table.Render();
  for (const model::Job& job : jobs) {
    if (job.state != model::JobState::kSucceeded && !job.status_message.empty()) {
      std::cout << fmt::format("{} ({}): {}\n", job.spec.name, job.id.value(), job.status_message);
    }
  }
  // A pipeline run succeeds by its roll-up: skipped stages and trials cancelled by early
  // stopping are part of a run that succeeded.
  if (!jobs.empty() && jobs.front().pipeline_run != JobId()) {
    const nlohmann::json run = api::PipelineDetail(jobs, now, api::Disclosure::kFull);
    std::cout << "\n" << DescribePipeline(run);
    succeeded = run["state"].get<std::string>() ==
                workflow::kRunStateNames.Name(workflow::RunState::kSucceeded);
  }
  std::cout << fmt::format(
      "logs and state: {} (drover get/logs work against the API while it "
      "runs)\n",
      data_dir);
  daemon->http->Stop();
  plane.Stop();
  return succeeded ? 0 : 1;
}

}  // namespace drover::daemons
