#include "drover/sched/flavors.h"

#include <algorithm>

#include "drover/sched/cluster_index.h"

namespace drover::sched {

FlavorOrder::FlavorOrder(const QueueTree& queues, const model::ResourceAmounts& capacity) {
  std::vector<std::string> others;
  for (const auto& [resource, amount] : capacity) {
    if (resource.rfind("gpu:", 0) != 0) continue;
    std::string model = resource.substr(4);
    if (queues.Governs(resource)) {
      any_model_.push_back(std::move(model));
    } else {
      others.push_back(std::move(model));
    }
  }
  any_governed_ = !any_model_.empty() || queues.GovernsAnyModel();
  if (any_model_.empty()) {
    any_model_ = {""};
  } else {
    any_model_.insert(any_model_.end(), others.begin(), others.end());
  }
}

std::vector<std::string> FlavorOrder::For(const QueueTree& queues,
                                          const model::JobSpec& spec) const {
  const model::Requirements& r = spec.requirements;
  const bool wants_gpu = r.per_worker.gpus > 0 || r.gpu_share_millis > 0 || !r.mig_profile.empty();
  if (!wants_gpu || !any_governed_) return {""};
  if (r.gpu_models.empty()) return any_model_;
  std::vector<std::string> flavors;
  bool governed = false;
  for (const std::string& model : r.gpu_models) {
    std::string lower = internal::Lower(model);
    if (std::find(flavors.begin(), flavors.end(), lower) != flavors.end()) continue;
    governed = governed || queues.Governs("gpu:" + lower);
    flavors.push_back(std::move(lower));
  }
  if (!governed) return {""};
  return flavors;
}

}  // namespace drover::sched
