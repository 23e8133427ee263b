#pragma once

// FlavorOrder: the GPU models ("flavors") a job's charge is tried under, in turn, when the
// queue tree governs per-model quota (a queue sets a nominal of "gpu:<model>"). Kueue's
// ResourceFlavors, applied to a job that names several models or none. Pure.

#include <string>
#include <vector>

#include "drover/model/job_spec.h"
#include "drover/model/policy.h"
#include "drover/sched/queues.h"

namespace drover::sched {

class FlavorOrder {
 public:
  // The order for `queues` over a cluster of `capacity` (ClusterState::Capacity(): "gpu:<model>"
  // entries name the models present). Neither is kept.
  FlavorOrder(const QueueTree& queues, const model::ResourceAmounts& capacity);

  // The GPU models to try in turn for `spec`, lower-case; {""} (no model: charge the generic
  // "gpu" only) when the tree governs no model quota, the job needs no GPU, or none of the
  // models it names is governed. A job naming models gets them in its order (without repeats);
  // one accepting any model gets the cluster's governed models (by name), then its others.
  std::vector<std::string> For(const QueueTree& queues, const model::JobSpec& spec) const;

 private:
  std::vector<std::string> any_model_;  // for jobs that accept any model
  bool any_governed_ = false;           // whether some model quota applies at all
};

}  // namespace drover::sched
