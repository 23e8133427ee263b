#pragma once

// The Kubernetes form of an attempt (docs/operations.md, "Executors: Kubernetes"): pure functions
// from an ExternalLaunch to the API objects that run it. One worker is a batch/v1 Job; a gang of
// N workers an Indexed Job (completions = parallelism = N) whose pods learn their rank from the
// completion index, with a headless Service so that every worker reaches rank 0 by name. The
// queue's options add a PodGroup for gang schedulers (Volcano, KAI, coscheduling), a DRA
// ResourceClaimTemplate for GPUs, the Kueue queue label and the pod's schedulerName.
//
// Every object carries the labels below; the Job is always the last object, created after the
// objects it refers to.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/executor.h"

namespace drover::exec::kubernetes {

// Labels on every rendered object and on the pods (values are the attempt's).
inline constexpr char kJobIdLabel[] = "drover.dev/job";                    // "12"
inline constexpr char kAttemptLabel[] = "drover.dev/attempt";              // "1"
inline constexpr char kAttemptNameLabel[] = "drover.dev/attempt-name";     // "drover-12-1"
inline constexpr char kJobNameLabel[] = "drover.dev/name";                 // the spec's name
inline constexpr char kManagedByLabel[] = "app.kubernetes.io/managed-by";  // "drover"
inline constexpr char kManagedBy[] = "drover";
// The container that runs the worker.
inline constexpr char kContainerName[] = "main";
// How the container's termination message starts when it stopped the worker at the job's
// timeout (the executor reports such an end as timed_out).
inline constexpr char kTimedOutMessage[] = "drover: timed out";

struct RenderedAttempt {
  std::string name;            // the Job's name: launch.ref.name
  std::string namespace_name;  // where every object goes
  // In creation order: PodGroup, ResourceClaimTemplate, Service (each when needed), the Job.
  std::vector<nlohmann::json> objects;
};

// The objects that run `launch` under its queue's Kubernetes options. kInvalidArgument, naming
// the field, when the attempt cannot be expressed or the queue's engine would not honour it: no
// image (neither the job's `image` nor the queue's), a time-sliced gpu_share outside the KAI
// scheduler, a relative working_dir, a gang under coscheduling without a scheduler_name, a gang
// under a gang_scheduler_version too old to hold it (KAI before v0.14.1, Volcano before v1.7.0),
// an unreadable gang_scheduler_version.
Result<RenderedAttempt> Render(const model::ExternalLaunch& launch);

// The Kubernetes Secret that holds team `team`'s secrets for the pods Drover renders
// (docs/security.md, "Secrets"): "drover-" and the team in lower case, each character other than
// a letter, digit, '-' or '.' written as '-' (team_A@x -> drover-team-a-x). Each of the team's
// secrets is the key of that name in it; a job's secret_env renders as env valueFrom
// secretKeyRef. The site creates the Secret in the queue's namespace; Drover never copies a value
// into a manifest.
std::string KubernetesSecretName(std::string_view team);

// The REST collection an object is created in, from its apiVersion, kind and namespace:
// "/apis/batch/v1/namespaces/ml/jobs", "/api/v1/namespaces/ml/services".
Result<std::string> CollectionPath(const nlohmann::json& object);

// Kubernetes quantities: "500m" or "2" (CPU), "16Gi" or "1536" (bytes, the largest binary unit
// that divides them).
std::string CpuQuantity(std::int64_t millis);
std::string ByteQuantity(std::int64_t bytes);

// Multi-document YAML ("---" between objects), block style; strings are quoted whenever a YAML
// reader could take them for another type, so that the YAML reads back as the same JSON.
std::string ToYaml(const std::vector<nlohmann::json>& objects);

}  // namespace drover::exec::kubernetes
