// ControlPlane's scheduling policy (control_plane.h, docs/scheduling.md): set through the API,
// or read from the policy file, which the loop re-reads when it changes (the file is read and
// parsed without the plane's mutex; only its installation takes it).

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drover/server/control_plane.h"
#include "drover/spec/policy.h"

namespace drover::server {

Status ControlPlane::SetPolicy(const model::Policy& policy) {
  MutexLock lock(mu_);
  std::vector<std::string> dropped;
  DROVER_RETURN_IF_ERROR(controller_.SetPolicy(policy, &dropped));
  OnPolicyInstalled(dropped);
  RequestSchedule();
  return OkStatus();
}

void ControlPlane::OnPolicyInstalled(const std::vector<std::string>& dropped_history) {
  if (!dropped_history.empty()) {
    spdlog::warn(
        "the new policy has no queue {}: the fair-share history of {} was dropped (a queue of "
        "that name added later starts at 0)",
        fmt::join(dropped_history, ", "), dropped_history.size() == 1 ? "it" : "them");
  }
  policy_history_dropped_ = dropped_history;
  PublishPolicy();
  SaveFairShare();
}

void ControlPlane::PublishPolicy() {
  auto policy = std::make_shared<const model::Policy>(controller_.policy());
  MutexLock lock(published_policy_mu_);
  published_policy_ = std::move(policy);
}

model::Policy ControlPlane::Policy() const {
  std::shared_ptr<const model::Policy> policy;
  {
    MutexLock lock(published_policy_mu_);
    policy = published_policy_;
  }
  return *policy;  // copied outside the lock
}

PolicyStatus ControlPlane::PolicyInfo() const {
  MutexLock lock(mu_);
  return PolicyStatus{controller_.policy(), policy_file_, policy_loaded_at_, policy_reload_error_,
                      policy_history_dropped_};
}

Status ControlPlane::LoadPolicyFile(const std::string& path) {
  DROVER_ASSIGN_OR_RETURN(PolicyFile file, ReadPolicyFile(path));
  MutexLock lock(mu_);
  return InstallPolicyFile(path, std::move(file));
}

Status ControlPlane::ReloadPolicy() {
  std::string path;
  {
    MutexLock lock(mu_);
    path = policy_file_;
  }
  if (path.empty()) {
    return FailedPrecondition(
        "the server was started without a policy file (drover server --policy FILE)");
  }
  Result<PolicyFile> read = ReadPolicyFile(path);
  MutexLock lock(mu_);
  Status loaded =
      read ? InstallPolicyFile(path, *std::move(read)) : Status(tl::unexpected(read.error()));
  if (!loaded) policy_reload_error_ = loaded.error();
  return loaded;
}

Result<ControlPlane::PolicyFile> ControlPlane::ReadPolicyFile(const std::string& path) const {
  // Stamp first: a change while reading is seen by the next look.
  Result<FileInfo> stamp = fs_.Stat(path);
  Result<std::string> text = stamp ? fs_.Read(path) : tl::unexpected(stamp.error());
  if (!text) return InvalidArgument("policy file: " + text.error().message);
  spec::ParseOptions options;
  options.file_name = path;
  DROVER_ASSIGN_OR_RETURN(model::Policy policy, spec::ParsePolicy(*text, options));
  return PolicyFile{*stamp, std::move(policy)};
}

Status ControlPlane::InstallPolicyFile(const std::string& path, PolicyFile file) {
  std::vector<std::string> dropped;
  Status installed = controller_.SetPolicy(file.policy, &dropped);
  if (!installed) {
    Error error = installed.error();
    error.message = fmt::format("{}: {}", path, error.message);
    return tl::unexpected(std::move(error));
  }
  OnPolicyInstalled(dropped);
  policy_file_ = path;
  policy_file_seen_ = file.stamp;
  policy_loaded_at_ = clock_.Now();
  policy_reload_error_.reset();
  RequestSchedule();
  return OkStatus();
}

void ControlPlane::OnPolicyFileChanged(const std::string& path,
                                       const std::optional<FileInfo>& stamp,
                                       Result<PolicyFile> read) {
  Status loaded =
      read ? InstallPolicyFile(path, *std::move(read)) : Status(tl::unexpected(read.error()));
  if (loaded) {
    spdlog::info("policy file {} changed: the new policy is in force", path);
    return;
  }
  // InstallPolicyFile leaves the stamp alone on failure: keep the one just seen, so that an
  // unchanged bad file is reported once.
  policy_file_seen_ = stamp;
  policy_reload_error_ = loaded.error();
  std::string details;
  for (const std::string& detail : loaded.error().details) details += "\n  " + detail;
  spdlog::error("policy file {} changed but was not applied (the previous policy stays): {}{}",
                path, loaded.error().message, details);
}

}  // namespace drover::server
