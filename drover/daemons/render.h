#pragma once

// `drover render FILE --executor kubernetes`: the manifests an external executor would create
// for each job of a spec file, for people who apply them themselves (docs/operations.md,
// "Executors: Kubernetes").

#include <string>

namespace drover::daemons {

struct RenderFlags {
  std::string file;
  std::string executor;     // "kubernetes"
  std::string output;       // "yaml" (default) or "json" (a v1 List)
  std::string policy_file;  // the queues' executor options come from here...
  std::string queue;        // ...for this queue (empty: each job's own)
  // ...and these override them (empty: not given).
  std::string namespace_name, scheduler_name, kueue_queue, gang_scheduler, gang_scheduler_version,
      device_class, mig_device_class, dra_driver, image, service_account;
  bool dra = false;
};

// Prints the manifests; 0, or 2 when the file, the policy or a job cannot be rendered (every
// problem is printed, naming the job and the field).
int RenderCommand(const RenderFlags& flags);

}  // namespace drover::daemons
