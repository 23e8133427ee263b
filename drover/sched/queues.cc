#include "drover/sched/queues.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <tuple>
#include <utility>

#include "drover/common/quantity.h"
#include "drover/sched/cluster_index.h"

namespace drover::sched {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr double kLn2 = 0.693147180559945309417;

// a + b for non-negative a and b, saturating at kMax.
std::int64_t SatAdd(std::int64_t a, std::int64_t b) { return b > kMax - a ? kMax : a + b; }

std::int64_t At(const std::vector<std::int64_t>& values, int index) {
  return static_cast<std::size_t>(index) < values.size() ? values[index] : 0;
}
double At(const std::vector<double>& values, int index) {
  return static_cast<std::size_t>(index) < values.size() ? values[index] : 0.0;
}
void Set(std::vector<std::int64_t>& values, int index, std::int64_t value) {
  if (static_cast<std::size_t>(index) >= values.size()) values.resize(index + 1, 0);
  values[index] = value;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsGpu(std::string_view resource) { return resource == "gpu" || resource.starts_with("gpu:"); }

// "cpu", "memory", "gpu" or "gpu:<model>" with a non-empty lower-case model without spaces.
bool ValidResourceName(std::string_view name) {
  if (name == "cpu" || name == "memory" || name == "gpu") return true;
  if (!name.starts_with("gpu:") || name.size() == 4) return false;
  for (char c : name.substr(4)) {
    auto u = static_cast<unsigned char>(c);
    if (std::isupper(u) || std::isspace(u) || c == ':' || c == '/') return false;
  }
  return true;
}

// As the policy file writes it: GPUs "8" or "2500m", cpu "8" or "500m", memory "64Gi".
std::string FormatAmount(std::string_view resource, std::int64_t value) {
  if (IsGpu(resource)) {
    return value % internal::kShareMillisPerGpu == 0
               ? std::to_string(value / internal::kShareMillisPerGpu)
               : std::to_string(value) + "m";
  }
  if (resource == "cpu") return FormatCpuMillis(value);
  if (resource == "memory") return FormatBytes(value);
  return std::to_string(value);
}

// For sentences: "12 GPUs", "1 H100 GPU", "2500m GPUs", "8 CPUs", "64Gi of memory", "5 jobs".
std::string Describe(std::string_view resource, std::int64_t value) {
  if (resource == "jobs") return value == 1 ? "1 job" : fmt::format("{} jobs", value);
  if (IsGpu(resource)) {
    std::string model;
    if (resource.size() > 4) {
      model = std::string(resource.substr(4));
      for (char& c : model) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      model += ' ';
    }
    return fmt::format("{} {}{}", FormatAmount(resource, value), model,
                       value == internal::kShareMillisPerGpu ? "GPU" : "GPUs");
  }
  if (resource == "cpu") return FormatCpuMillis(value) + (value == 1000 ? " CPU" : " CPUs");
  if (resource == "memory") return FormatBytes(value) + " of memory";
  return fmt::format("{} {}", value, resource);
}

void CollectGoverned(const model::QueueConfig& config, std::set<std::string>& governed) {
  for (const auto& [resource, amount] : config.nominal) {
    if (ValidResourceName(resource)) governed.insert(resource);
  }
  for (const model::QueueConfig& child : config.children) CollectGoverned(child, governed);
}

// Checks a Limits value; errors name `where` (e.g. "queue org/a: user_limits") and the field.
Status ValidateLimits(const model::Limits& limits, const std::string& where) {
  if (limits.max_running_jobs && *limits.max_running_jobs < 0) {
    return InvalidArgument(fmt::format("{}.max_running_jobs: must not be negative (is {})", where,
                                       *limits.max_running_jobs));
  }
  for (const auto& [resource, amount] : limits.max_resources) {
    if (!ValidResourceName(resource)) {
      return InvalidArgument(fmt::format(
          "{}.max_resources.{}: unknown resource (expected cpu, memory, gpu or gpu:<model>, "
          "lower case)",
          where, resource));
    }
    if (amount < 0) {
      return InvalidArgument(fmt::format("{}.max_resources.{}: must not be negative (is {})", where,
                                         resource, amount));
    }
  }
  return OkStatus();
}

bool Empty(const std::vector<std::int64_t>& usage, const std::vector<double>& history) {
  return std::all_of(usage.begin(), usage.end(), [](std::int64_t v) { return v == 0; }) &&
         std::all_of(history.begin(), history.end(), [](double v) { return v == 0.0; });
}

}  // namespace

namespace {

// Calls add(resource, amount) for each amount ChargeAmounts(spec, gpu_model) holds, in
// ascending resource name order (the order FlatAmounts keeps).
template <typename Add>
void ForEachChargeAmount(const model::JobSpec& spec, std::string_view gpu_model, Add&& add) {
  const model::Requirements& req = spec.requirements;
  const std::int64_t workers = std::max(spec.workers, 0);
  const std::int64_t gpu_millis = model::MilliGpusPerWorker(req);
  if (req.per_worker.cpu_millis > 0) add("cpu", workers * req.per_worker.cpu_millis);
  if (gpu_millis > 0 && workers > 0) {
    add("gpu", workers * gpu_millis);
    if (!gpu_model.empty()) add("gpu:" + Lower(gpu_model), workers * gpu_millis);
  }
  if (req.per_worker.memory_bytes > 0) add("memory", workers * req.per_worker.memory_bytes);
}

}  // namespace

FlatAmounts ChargeAmounts(const model::JobSpec& spec, std::string_view gpu_model) {
  FlatAmounts out;
  out.reserve(4);  // the most ForEachChargeAmount gives: one allocation
  ForEachChargeAmount(spec, gpu_model, [&](std::string resource, std::int64_t amount) {
    out.Append(std::move(resource), amount);
  });
  return out;
}

std::string AdmitVerdict::Render() const {
  const std::string needs = "; this job needs " + Describe(resource, requested);
  switch (code) {
    case Code::kOk:
      return "admitted";
    case Code::kQuota: {
      const std::string from = lender.empty() ? "the other top-level queues" : lender;
      std::string out =
          used <= nominal
              ? fmt::format("{} is using {} of its {}", scope, FormatAmount(resource, used),
                            Describe(resource, nominal))
              : fmt::format("{} is using {}, {} of them borrowed from {}", scope,
                            Describe(resource, used), FormatAmount(resource, used - nominal), from);
      const std::int64_t more = limit - std::max(used, nominal);
      if (more > 0) {
        out += fmt::format("; it may borrow {} more from {}", FormatAmount(resource, more), from);
      } else {
        out += limit == nominal ? "; it may not borrow" : "; it may borrow no more";
      }
      return out + needs;
    }
    case Code::kCohort:
      return fmt::format(
          "{} lend each other {}: {} borrowed now, and this job would borrow {} more",
          lender.empty() ? "the top-level queues" : "the queues under " + lender,
          Describe(resource, limit), FormatAmount(resource, used),
          FormatAmount(resource, requested));
    case Code::kLimit:
      if (resource == "jobs") {
        return fmt::format("{} is running {} of at most {}", scope, used,
                           Describe(resource, limit));
      }
      return fmt::format("{} is using {} of at most {}", scope, FormatAmount(resource, used),
                         Describe(resource, limit)) +
             needs;
  }
  return "admitted";
}

QueueTree::QueueTree() {
  nodes_.resize(2);
  nodes_[0].children = {1};
  nodes_[1].name = "default";
  nodes_[1].path = "default";
  nodes_[1].parent = 0;
  nodes_[1].depth = 1;
  nodes_[1].track_users = true;
  leaves_.emplace("default", 1);
  half_life_ = model::Policy{}.fair_share_half_life;
}

Result<QueueTree> QueueTree::Create(const model::Policy& policy) {
  QueueTree tree;
  tree.half_life_ = std::max<DurationMs>(policy.fair_share_half_life, 0);
  DROVER_RETURN_IF_ERROR(ValidateLimits(policy.pipeline_limits, "pipeline_limits"));
  if (!policy.queues.empty()) {
    std::set<std::string> governed;
    for (const model::QueueConfig& root : policy.queues) CollectGoverned(root, governed);
    for (const std::string& resource : governed) tree.Intern(resource);
    tree.governed_ = static_cast<int>(governed.size());
    tree.nodes_.resize(1);
    tree.nodes_[0].children.clear();
    tree.leaves_.clear();
    const std::size_t g = governed.size();
    tree.nodes_[0].nominal.assign(g, 0);
    tree.nodes_[0].lending.assign(g, 0);
    tree.nodes_[0].bound.assign(g, kUnlimited);
    tree.nodes_[0].pool.assign(g, 0);
    tree.nodes_[0].pool_use.assign(g, 0);
    std::vector<const model::QueueConfig*> configs = {nullptr};  // by node id
    for (const model::QueueConfig& root : policy.queues) {
      DROVER_RETURN_IF_ERROR(tree.AddNode(root, 0, configs));
    }
    // Children have larger ids than their parent (pre-order), so going down the ids settles
    // every child before its parent: a parent's unset nominal is the sum of its children's.
    for (std::size_t n = tree.nodes_.size() - 1; n >= 1; --n) {
      Node& node = tree.nodes_[n];
      const model::QueueConfig& config = *configs[n];
      for (std::size_t r = 0; r < g; ++r) {
        const std::string& resource = tree.resource_names_[r];
        auto nominal = config.nominal.find(resource);
        if (nominal != config.nominal.end()) {
          node.nominal[r] = nominal->second;
        } else {
          node.nominal[r] = 0;
          for (int child : node.children) {
            node.nominal[r] = SatAdd(node.nominal[r], tree.nodes_[child].nominal[r]);
          }
        }
        auto lending = config.lending_limit.find(resource);
        node.lending[r] = lending == config.lending_limit.end() ? node.nominal[r] : lending->second;
        if (node.lending[r] > node.nominal[r]) {
          return InvalidArgument(fmt::format(
              "queue {}: lending_limit.{}: {} is above the nominal {}{}", tree.Path(n), resource,
              FormatAmount(resource, node.lending[r]), FormatAmount(resource, node.nominal[r]),
              nominal == config.nominal.end() && !node.children.empty()
                  ? " (the sum of its children's)"
                  : ""));
        }
        if (auto it = config.borrowing_limit.find(resource); it != config.borrowing_limit.end()) {
          node.bound[r] = SatAdd(node.nominal[r], it->second);
        }
      }
    }
    for (std::size_t n = 1; n < tree.nodes_.size(); ++n) {
      Node& parent = tree.nodes_[tree.nodes_[n].parent];
      for (std::size_t r = 0; r < g; ++r) {
        parent.pool[r] = SatAdd(parent.pool[r], tree.nodes_[n].lending[r]);
      }
    }
  }
  for (const auto& [resource, amount] : policy.pipeline_limits.max_resources) {
    tree.pipeline_limits_.max_resources.emplace_back(tree.Intern(resource), amount);
  }
  tree.pipeline_limits_.max_running_jobs = policy.pipeline_limits.max_running_jobs;
  return tree;
}

Status QueueTree::AddNode(const model::QueueConfig& config, int parent,
                          std::vector<const model::QueueConfig*>& configs) {
  const int id = static_cast<int>(nodes_.size());
  nodes_.emplace_back();
  configs.push_back(&config);
  nodes_[id].name = config.name;
  nodes_[id].parent = parent;
  nodes_[id].depth = nodes_[parent].depth + 1;
  nodes_[id].weight = config.weight;
  nodes_[id].path = parent == 0 ? config.name : nodes_[parent].path + "/" + config.name;
  const std::string& path = nodes_[id].path;
  auto fail = [&](const std::string& field, const std::string& message) -> drover::Status {
    return InvalidArgument(fmt::format("queue {}: {}: {}", path, field, message));
  };
  if (config.name.empty()) {
    return InvalidArgument(fmt::format("queue {}: name: must not be empty",
                                       parent == 0 ? "at the top level" : "under " + Path(parent)));
  }
  for (int sibling : nodes_[parent].children) {
    if (nodes_[sibling].name == config.name) {
      return fail("name", parent == 0
                              ? "duplicate name: two top-level queues have it"
                              : "duplicate name: two queues under " + Path(parent) + " have it");
    }
  }
  nodes_[parent].children.push_back(id);
  if (!(config.weight > 0) || !std::isfinite(config.weight)) {
    return fail("weight", fmt::format("must be above 0 (is {})", config.weight));
  }
  auto check_amounts = [&](const model::ResourceAmounts& amounts,
                           const std::string& field) -> drover::Status {
    for (const auto& [resource, amount] : amounts) {
      if (!ValidResourceName(resource)) {
        return fail(field + "." + resource,
                    "unknown resource (expected cpu, memory, gpu or gpu:<model>, lower case)");
      }
      if (amount < 0) {
        return fail(field + "." + resource, fmt::format("must not be negative (is {})", amount));
      }
    }
    return OkStatus();
  };
  DROVER_RETURN_IF_ERROR(check_amounts(config.nominal, "nominal"));
  DROVER_RETURN_IF_ERROR(check_amounts(config.lending_limit, "lending_limit"));
  DROVER_RETURN_IF_ERROR(check_amounts(config.borrowing_limit, "borrowing_limit"));
  for (const auto& [resource, amount] : config.lending_limit) {
    // Ungoverned: nominal 0 everywhere. Governed: checked once the nominals are known.
    if (!Governs(resource) && amount > 0) {
      return fail("lending_limit." + resource,
                  fmt::format("{} is above the nominal 0", FormatAmount(resource, amount)));
    }
  }
  for (const auto& [resource, amount] : config.borrowing_limit) {
    if (!Governs(resource)) {
      return fail("borrowing_limit." + resource,
                  "no queue sets a nominal amount of this resource, so quotas do not limit it");
    }
  }
  DROVER_RETURN_IF_ERROR(ValidateLimits(config.limits, fmt::format("queue {}: limits", path)));
  DROVER_RETURN_IF_ERROR(
      ValidateLimits(config.user_limits, fmt::format("queue {}: user_limits", path)));

  // Quota amounts are settled by Create once the whole tree is known.
  const std::size_t g = static_cast<std::size_t>(governed_);
  nodes_[id].nominal.assign(g, 0);
  nodes_[id].lending.assign(g, 0);
  nodes_[id].bound.assign(g, kUnlimited);
  nodes_[id].pool.assign(g, 0);
  nodes_[id].pool_use.assign(g, 0);
  auto dense = [&](const model::Limits& limits) {
    DenseLimits out;
    out.max_running_jobs = limits.max_running_jobs;
    for (const auto& [resource, amount] : limits.max_resources) {
      out.max_resources.emplace_back(Intern(resource), amount);
    }
    return out;
  };
  DenseLimits limits = dense(config.limits);
  DenseLimits user_limits = dense(config.user_limits);
  nodes_[id].limits = std::move(limits);
  nodes_[id].user_limits = std::move(user_limits);
  nodes_[id].track_users = !nodes_[id].user_limits.empty();
  if (config.children.empty()) {
    auto [it, inserted] = leaves_.emplace(config.name, id);
    if (!inserted) {
      return fail("name", "duplicate leaf name (queue " + Path(it->second) +
                              " has it too; leaf names are unique in the whole tree)");
    }
    nodes_[id].track_users = true;
  }
  for (const model::QueueConfig& child : config.children) {
    DROVER_RETURN_IF_ERROR(AddNode(child, id, configs));
  }
  return OkStatus();
}

int QueueTree::Intern(const std::string& resource) {
  auto it = resource_index_.find(resource);
  if (it != resource_index_.end()) return it->second;
  const int index = static_cast<int>(resource_names_.size());
  resource_names_.push_back(resource);
  resource_index_.emplace(resource, index);
  return index;
}

QueueTree::DenseAmounts QueueTree::Known(const FlatAmounts& amounts) const {
  DenseAmounts out;
  out.reserve(amounts.size());
  for (const auto& [resource, amount] : amounts) {
    if (amount <= 0) continue;
    auto it = resource_index_.find(resource);
    if (it != resource_index_.end()) out.emplace_back(it->second, amount);
  }
  return out;
}

QueueTree::DenseAmounts QueueTree::Intern(const FlatAmounts& amounts) {
  DenseAmounts out;
  out.reserve(amounts.size());
  for (const auto& [resource, amount] : amounts) {
    if (amount > 0) out.emplace_back(Intern(resource), amount);
  }
  return out;
}

bool QueueTree::IsLeaf(int node) const {
  return node > 0 && static_cast<std::size_t>(node) < nodes_.size() &&
         nodes_[node].children.empty();
}

std::optional<int> QueueTree::FindLeaf(std::string_view name) const {
  auto it = leaves_.find(name);
  if (it == leaves_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> QueueTree::LeafNames() const {
  // Node ids are assigned in pre-order, so id order is tree order.
  std::vector<std::string> names;
  for (std::size_t n = 1; n < nodes_.size(); ++n) {
    if (nodes_[n].children.empty()) names.push_back(nodes_[n].name);
  }
  return names;
}

const std::string& QueueTree::Name(int node) const {
  DROVER_CHECK(node >= 0 && static_cast<std::size_t>(node) < nodes_.size());
  return nodes_[node].name;
}

const std::string& QueueTree::Path(int node) const {
  DROVER_CHECK(node >= 0 && static_cast<std::size_t>(node) < nodes_.size());
  return nodes_[node].path;
}

bool QueueTree::Governs(std::string_view resource) const {
  auto it = resource_index_.find(resource);
  return it != resource_index_.end() && it->second < governed_;
}

bool QueueTree::GovernsAnyModel() const {
  for (const auto& [resource, index] : resource_index_) {
    if (index < governed_ && resource.rfind("gpu:", 0) == 0) return true;
  }
  return false;
}

std::optional<AdmitVerdict> QueueTree::CheckQuota(int n, const DenseAmounts& amounts) const {
  const Node& node = nodes_[n];
  const Node& parent = nodes_[node.parent];
  for (const auto& [r, amount] : amounts) {
    if (r >= governed_) continue;
    const std::int64_t used = At(node.own.usage, r);
    const std::int64_t after = SatAdd(used, amount);
    if (node.bound[r] != kUnlimited && after > node.bound[r]) {
      AdmitVerdict v;
      v.code = AdmitVerdict::Code::kQuota;
      v.scope = "queue " + Path(n);
      v.resource = resource_names_[r];
      v.used = used;
      v.requested = amount;
      v.limit = node.bound[r];
      v.nominal = node.nominal[r];
      if (node.parent != 0) v.lender = Path(node.parent);
      return v;
    }
    const std::int64_t protected_amount = node.nominal[r] - node.lending[r];
    const std::int64_t draw = std::max<std::int64_t>(0, after - protected_amount) -
                              std::max<std::int64_t>(0, used - protected_amount);
    if (draw > 0 && SatAdd(parent.pool_use[r], draw) > parent.pool[r]) {
      AdmitVerdict v;
      v.code = AdmitVerdict::Code::kCohort;
      v.scope = "cohort of " + Path(n);
      v.resource = resource_names_[r];
      v.used = parent.pool_use[r];
      v.requested = draw;
      v.limit = parent.pool[r];
      if (node.parent != 0) v.lender = Path(node.parent);
      return v;
    }
  }
  return std::nullopt;
}

std::optional<AdmitVerdict> QueueTree::CheckLimits(const DenseLimits& limits,
                                                   const UsageRecord* record,
                                                   const DenseAmounts& amounts) const {
  if (limits.max_running_jobs) {
    const std::int64_t running = record ? record->running_jobs : 0;
    if (running + 1 > *limits.max_running_jobs) {
      AdmitVerdict v;
      v.code = AdmitVerdict::Code::kLimit;
      v.resource = "jobs";
      v.used = running;
      v.requested = 1;
      v.limit = *limits.max_running_jobs;
      return v;
    }
  }
  for (const auto& [r, max] : limits.max_resources) {
    // Both lists are short (a handful of resources); a nested scan beats building a map.
    for (const auto& [cr, amount] : amounts) {
      if (cr != r) continue;
      const std::int64_t used = record ? At(record->usage, r) : 0;
      if (SatAdd(used, amount) > max) {
        AdmitVerdict v;
        v.code = AdmitVerdict::Code::kLimit;
        v.resource = resource_names_[r];
        v.used = used;
        v.requested = amount;
        v.limit = max;
        return v;
      }
    }
  }
  return std::nullopt;
}

AdmitVerdict QueueTree::CheckAdmit(const Charge& charge) const {
  return CheckAdmit(charge.leaf, charge.user, charge.pipeline, Known(charge.amounts));
}

AdmitVerdict QueueTree::CheckAdmit(int leaf, const model::JobSpec& spec,
                                   std::string_view gpu_model) const {
  DenseAmounts amounts;
  amounts.reserve(4);  // cpu, gpu, gpu:MODEL, memory: one allocation, not one per doubling
  ForEachChargeAmount(spec, gpu_model, [&](const std::string& resource, std::int64_t amount) {
    auto it = resource_index_.find(resource);
    if (it != resource_index_.end()) amounts.emplace_back(it->second, amount);
  });
  return CheckAdmit(leaf, spec.owner, spec.pipeline, amounts);
}

AdmitVerdict QueueTree::CheckAdmit(int leaf, const std::string& user, const std::string& pipeline,
                                   const DenseAmounts& amounts) const {
  DROVER_CHECK(IsLeaf(leaf));
  if (governed_ > 0) {
    for (int n = leaf; n != 0; n = nodes_[n].parent) {
      if (auto verdict = CheckQuota(n, amounts)) return *verdict;
    }
  }
  for (int n = leaf; n != 0; n = nodes_[n].parent) {
    const Node& node = nodes_[n];
    if (!node.limits.empty()) {
      if (auto verdict = CheckLimits(node.limits, &node.own, amounts)) {
        verdict->scope = "queue " + Path(n);
        return *verdict;
      }
    }
    if (!node.user_limits.empty()) {
      auto it = node.users.find(user);
      if (auto verdict = CheckLimits(node.user_limits,
                                     it == node.users.end() ? nullptr : &it->second, amounts)) {
        verdict->scope = fmt::format("user {} in queue {}", user, Path(n));
        return *verdict;
      }
    }
  }
  if (!pipeline.empty() && !pipeline_limits_.empty()) {
    auto it = pipelines_.find(pipeline);
    if (auto verdict = CheckLimits(pipeline_limits_, it == pipelines_.end() ? nullptr : &it->second,
                                   amounts)) {
      verdict->scope = "pipeline " + pipeline;
      return *verdict;
    }
  }
  return AdmitVerdict{};
}

void QueueTree::Apply(const Charge& charge, int sign) {
  DROVER_CHECK(IsLeaf(charge.leaf));
  const DenseAmounts amounts = sign > 0 ? Intern(charge.amounts) : Known(charge.amounts);
  // Records that accrue history are brought up to date before their usage changes.
  auto update = [&](UsageRecord& record, bool accrues) {
    if (accrues) Accrue(record);
    for (const auto& [r, amount] : amounts) {
      const std::int64_t old = At(record.usage, r);
      Set(record.usage, r,
          sign > 0 ? SatAdd(old, amount) : std::max<std::int64_t>(0, old - amount));
    }
    record.running_jobs = std::max<std::int64_t>(0, record.running_jobs + sign);
  };
  // Leaves and nodes with user limits keep a record per user; one that holds nothing and has
  // no history is dropped so that the maps hold only active users.
  auto update_keyed = [&](std::unordered_map<std::string, UsageRecord>& records,
                          const std::string& key, bool accrues) {
    if (sign > 0) {
      auto [it, inserted] = records.try_emplace(key);
      // A new record has no past: it accrues from now.
      if (inserted && last_advance_) it->second.accrued_at = *last_advance_;
      update(it->second, accrues);
      return;
    }
    auto it = records.find(key);
    if (it == records.end()) return;
    update(it->second, accrues);
    if (it->second.running_jobs == 0 && Empty(it->second.usage, it->second.history)) {
      records.erase(it);
    }
  };
  for (int n = charge.leaf; n >= 0; n = nodes_[n].parent) {
    Node& node = nodes_[n];
    if (n != 0) {
      Node& parent = nodes_[node.parent];
      for (const auto& [r, amount] : amounts) {
        if (r >= governed_) continue;
        const std::int64_t old = At(node.own.usage, r);
        const std::int64_t now =
            sign > 0 ? SatAdd(old, amount) : std::max<std::int64_t>(0, old - amount);
        const std::int64_t protected_amount = node.nominal[r] - node.lending[r];
        parent.pool_use[r] += std::max<std::int64_t>(0, now - protected_amount) -
                              std::max<std::int64_t>(0, old - protected_amount);
      }
    }
    update(node.own, /*accrues=*/true);
    // Only a leaf's users accrue history (a limit-keeping inner node's users do not).
    if (node.track_users) update_keyed(node.users, charge.user, node.children.empty());
  }
  if (!charge.pipeline.empty() && !pipeline_limits_.empty()) {
    update_keyed(pipelines_, charge.pipeline, /*accrues=*/false);
  }
}

void QueueTree::Add(const Charge& charge) { Apply(charge, +1); }
void QueueTree::Remove(const Charge& charge) { Apply(charge, -1); }

bool QueueTree::WithinNominal(int leaf, const FlatAmounts& amounts) const {
  DROVER_CHECK(IsLeaf(leaf));
  const Node& node = nodes_[leaf];
  for (const auto& [r, amount] : Known(amounts)) {
    if (r >= governed_) continue;
    if (SatAdd(At(node.own.usage, r), amount) > node.nominal[r]) return false;
  }
  return true;
}

bool QueueTree::Borrowing(int leaf, std::string_view resource) const {
  DROVER_CHECK(IsLeaf(leaf));
  auto it = resource_index_.find(resource);
  if (it == resource_index_.end() || it->second >= governed_) return false;
  const int r = it->second;
  for (int n = leaf; n != 0; n = nodes_[n].parent) {
    if (At(nodes_[n].own.usage, r) > nodes_[n].nominal[r]) return true;
  }
  return false;
}

void QueueTree::Advance(TimeMs now, const model::ResourceAmounts& capacity) {
  // The capacity changes only with the nodes: most cycles give the last one again.
  if (capacity != capacity_given_) {
    capacity_given_ = capacity;
    SetCapacity(capacity);
  }
  Advance(now);
}

void QueueTree::SetCapacity(const model::ResourceAmounts& capacity) {
  std::vector<std::pair<int, std::int64_t>> dense;
  for (const auto& [resource, amount] : capacity) dense.emplace_back(Intern(resource), amount);
  capacity_.assign(resource_names_.size(), 0);
  for (const auto& [r, amount] : dense) capacity_[r] = std::max<std::int64_t>(0, amount);
}

void QueueTree::Advance(TimeMs now) {
  if (last_advance_ && now <= *last_advance_) return;
  const bool first = !last_advance_;
  last_advance_ = now;
  // Before the first call nothing accrued: every record's history starts here.
  if (first) MarkAccruedAt(now);
}

void QueueTree::MarkAccruedAt(TimeMs at) {
  for (Node& node : nodes_) {
    node.own.accrued_at = at;
    for (auto& [user, record] : node.users) record.accrued_at = at;
  }
}

QueueTree::Decay QueueTree::DecaySince(TimeMs from) const {
  if (!last_advance_ || *last_advance_ <= from || half_life_ <= 0) return Decay{};
  const double dt = static_cast<double>(*last_advance_ - from);
  const double keep = std::exp2(-dt / static_cast<double>(half_life_));
  return Decay{keep, static_cast<double>(half_life_) / kLn2 * (1.0 - keep)};
}

double QueueTree::Decayed(double history, std::int64_t usage, const Decay& decay) {
  if (decay.keep == 1.0 && decay.gain == 0.0) return history;
  constexpr double kNegligible = 1.0;
  const double h = history * decay.keep + static_cast<double>(usage) * decay.gain;
  return h < kNegligible && usage == 0 ? 0.0 : h;
}

void QueueTree::Accrue(UsageRecord& record) const {
  if (!last_advance_ || record.accrued_at >= *last_advance_) return;
  const Decay decay = DecaySince(record.accrued_at);
  record.accrued_at = *last_advance_;
  if (record.history.size() < record.usage.size()) record.history.resize(record.usage.size(), 0.0);
  for (std::size_t r = 0; r < record.history.size(); ++r) {
    record.history[r] = Decayed(record.history[r], At(record.usage, static_cast<int>(r)), decay);
  }
}

double QueueTree::ShareOf(const UsageRecord& record, double weight) const {
  double current = 0.0;
  double history = 0.0;
  const double horizon = static_cast<double>(half_life_) / kLn2;
  const Decay decay = DecaySince(record.accrued_at);
  for (std::size_t r = 0; r < capacity_.size(); ++r) {
    if (capacity_[r] <= 0) continue;
    const double cap = static_cast<double>(capacity_[r]);
    const std::int64_t usage = At(record.usage, static_cast<int>(r));
    current = std::max(current, static_cast<double>(usage) / cap);
    if (half_life_ > 0) {
      const double h = Decayed(At(record.history, static_cast<int>(r)), usage, decay);
      history = std::max(history, h / (cap * horizon));
    }
  }
  return (current + history) / weight;
}

model::FairShareHistory QueueTree::History() const {
  model::FairShareHistory out;
  out.advanced_at = last_advance_;
  auto add = [&](const std::string& queue, const std::string& user, const UsageRecord& record) {
    model::FairShareHistory::Entry entry{queue, user, {}};
    const Decay decay = DecaySince(record.accrued_at);
    const std::size_t resources = std::max(record.history.size(), record.usage.size());
    for (std::size_t r = 0; r < resources; ++r) {
      const int index = static_cast<int>(r);
      const double h = Decayed(At(record.history, index), At(record.usage, index), decay);
      if (h > 0.0) entry.usage[resource_names_[r]] = h;
    }
    if (!entry.usage.empty()) out.entries.push_back(std::move(entry));
  };
  for (std::size_t n = 1; n < nodes_.size(); ++n) {
    const Node& node = nodes_[n];
    const std::string path = Path(static_cast<int>(n));
    add(path, "", node.own);
    // Only leaves accrue their users' history (Advance).
    if (!node.children.empty()) continue;
    for (const auto& [user, record] : node.users) add(path, user, record);
  }
  std::sort(out.entries.begin(), out.entries.end(), [](const auto& a, const auto& b) {
    return std::tie(a.queue, a.user) < std::tie(b.queue, b.user);
  });
  return out;
}

std::vector<std::string> QueueTree::RestoreHistory(const model::FairShareHistory& history) {
  std::map<std::string, int, std::less<>> by_path;
  for (std::size_t n = 1; n < nodes_.size(); ++n) {
    Node& node = nodes_[n];
    by_path.emplace(Path(static_cast<int>(n)), static_cast<int>(n));
    node.own.history.clear();
    for (auto it = node.users.begin(); it != node.users.end();) {
      it->second.history.clear();
      if (it->second.running_jobs == 0 && Empty(it->second.usage, it->second.history)) {
        it = node.users.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::set<std::string> dropped;
  for (const model::FairShareHistory::Entry& entry : history.entries) {
    auto found = by_path.find(entry.queue);
    if (found == by_path.end()) {
      dropped.insert(entry.queue);
      continue;
    }
    Node& node = nodes_[found->second];
    if (!entry.user.empty() && !node.children.empty()) continue;
    UsageRecord& record = entry.user.empty() ? node.own : node.users[entry.user];
    for (const auto& [resource, amount] : entry.usage) {
      if (!(amount > 0.0) || !std::isfinite(amount)) continue;
      const std::size_t r = static_cast<std::size_t>(Intern(resource));
      if (record.history.size() <= r) record.history.resize(r + 1, 0.0);
      record.history[r] = amount;
    }
    if (!entry.user.empty() && record.running_jobs == 0 && Empty(record.usage, record.history)) {
      node.users.erase(entry.user);
    }
  }
  last_advance_ = history.advanced_at;
  // The restored history is as of advanced_at; the current usage accrues from there.
  MarkAccruedAt(last_advance_.value_or(0));
  return {dropped.begin(), dropped.end()};
}

double QueueTree::Share(int node) const {
  DROVER_CHECK(node >= 0 && static_cast<std::size_t>(node) < nodes_.size());
  return ShareOf(nodes_[node].own, nodes_[node].weight);
}

double QueueTree::UserShare(int leaf, std::string_view user) const {
  DROVER_CHECK(IsLeaf(leaf));
  auto it = nodes_[leaf].users.find(std::string(user));
  return it == nodes_[leaf].users.end() ? 0.0 : ShareOf(it->second, 1.0);
}

bool QueueTree::Before(int a, int b) const {
  DROVER_CHECK(a >= 0 && static_cast<std::size_t>(a) < nodes_.size());
  DROVER_CHECK(b >= 0 && static_cast<std::size_t>(b) < nodes_.size());
  if (a == b) return false;
  int x = a;
  int y = b;
  while (nodes_[x].depth > nodes_[y].depth) x = nodes_[x].parent;
  while (nodes_[y].depth > nodes_[x].depth) y = nodes_[y].parent;
  if (x == y) return nodes_[a].depth < nodes_[b].depth;  // an ancestor before its descendants
  while (nodes_[x].parent != nodes_[y].parent) {
    x = nodes_[x].parent;
    y = nodes_[y].parent;
  }
  const double sx = Share(x);
  const double sy = Share(y);
  if (sx != sy) return sx < sy;
  if (nodes_[x].name != nodes_[y].name) return nodes_[x].name < nodes_[y].name;
  return x < y;
}

std::vector<QueueStatus> QueueTree::Status() const {
  const std::size_t g = static_cast<std::size_t>(governed_);
  // lent[n][r]: per cohort (the children of one parent) and governed resource, what the members
  // borrow is split among the members with unused lendable quota, in proportion to it.
  std::vector<std::vector<std::int64_t>> lent(nodes_.size(), std::vector<std::int64_t>(g, 0));
  for (const Node& parent : nodes_) {
    const std::vector<int>& members = parent.children;
    for (std::size_t r = 0; r < g; ++r) {
      std::int64_t borrowed = 0;
      std::int64_t lendable = 0;
      std::vector<std::int64_t> unused(members.size(), 0);
      for (std::size_t i = 0; i < members.size(); ++i) {
        const Node& m = nodes_[members[i]];
        const std::int64_t used = At(m.own.usage, static_cast<int>(r));
        borrowed = SatAdd(borrowed, std::max<std::int64_t>(0, used - m.nominal[r]));
        unused[i] = std::min(m.lending[r], std::max<std::int64_t>(0, m.nominal[r] - used));
        lendable = SatAdd(lendable, unused[i]);
      }
      if (borrowed == 0 || lendable == 0) continue;
      const std::int64_t give = std::min(borrowed, lendable);
      std::int64_t assigned = 0;
      std::vector<std::pair<__int128, std::size_t>> remainders;
      for (std::size_t i = 0; i < members.size(); ++i) {
        const __int128 product = static_cast<__int128>(give) * unused[i];
        const auto share = static_cast<std::int64_t>(product / lendable);
        lent[members[i]][r] = share;
        assigned += share;
        remainders.emplace_back(product % lendable, i);
      }
      std::stable_sort(remainders.begin(), remainders.end(),
                       [](const auto& p, const auto& q) { return p.first > q.first; });
      for (std::size_t k = 0; k < remainders.size() && assigned < give; ++k, ++assigned) {
        ++lent[members[remainders[k].second]][r];
      }
    }
  }

  std::vector<QueueStatus> rows;
  rows.reserve(nodes_.size() - 1);
  // Node ids are assigned in pre-order, so id order is tree order.
  for (std::size_t n = 1; n < nodes_.size(); ++n) {
    const Node& node = nodes_[n];
    QueueStatus row;
    row.node = static_cast<int>(n);
    row.name = node.name;
    row.path = Path(row.node);
    row.depth = node.depth - 1;
    row.leaf = node.children.empty();
    row.weight = node.weight;
    for (std::size_t r = 0; r < resource_names_.size(); ++r) {
      const std::string& resource = resource_names_[r];
      const std::int64_t used = At(node.own.usage, static_cast<int>(r));
      if (r < g) {
        row.nominal[resource] = node.nominal[r];
        row.usage[resource] = used;
        if (used > node.nominal[r]) row.borrowed[resource] = used - node.nominal[r];
        if (lent[n][r] > 0) row.lent[resource] = lent[n][r];
      } else if (used > 0) {
        row.usage[resource] = used;
      }
    }
    row.share = Share(row.node);
    row.running_jobs = node.own.running_jobs;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace drover::sched
