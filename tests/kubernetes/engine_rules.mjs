// What each engine reads, as Drover's own checks (docs/operations.md, "What each engine reads"):
// a small table of rules per engine, each naming the engine's source and the version it holds
// from, run by validate.mjs on every manifest set `drover render` prints. A rule looks at one
// render (the objects of one job: PodGroup, ResourceClaimTemplate, Service, Job) and returns
// its violations as strings; a render a rule does not concern returns none.
//
// Sources (read for this table; no live cluster ran these manifests):
//   KAI    github.com/kai-scheduler/KAI-Scheduler at d5bc503 (v0.17.0+): pkg/podgrouper/
//          pod_controller.go (skip-podgrouper, v0.15.0), plugins/job/job_grouper.go
//          (batch-min-member, v0.14.1), plugins/defaultgrouper/default_grouper.go (minMember 1),
//          pkg/common/constants/constants.go, pkg/binder/plugins/gpusharing/gpu-request/
//          gpu_request_validator.go, docs/batch/README.md ("External PodGroups").
//   Volcano github.com/volcano-sh/volcano at ed72c7c (checked back to v1.7.0):
//          pkg/controllers/podgroup/pg_controller.go, staging/.../scheduling/v1beta1/types.go.
//   Coscheduling github.com/kubernetes-sigs/scheduler-plugins apis/scheduling/v1alpha1/types.go
//          (PodGroupLabel), pkg/coscheduling/README.md.
//   NVIDIA DRA driver github.com/NVIDIA/k8s-dra-driver-gpu at 2240711 (v25.8.0+):
//          cmd/gpu-kubelet-plugin/deviceinfo.go, mig.go, nvlib.go (productName = NVML's
//          GetName), deployments/helm/.../deviceclass-gpu.yaml, deviceclass-mig.yaml.
//   batch/v1 Job: activeDeadlineSeconds counts from the Job's start (startTime), queueing
//          included; Kueue resets it when it unsuspends the Job.

// The attributes and capacities NVIDIA's driver publishes for GPUs and MIG devices.
const nvidiaAttributes = new Set(["type", "uuid", "productName", "brand", "architecture",
  "cudaComputeCapability", "driverVersion", "cudaDriverVersion", "pciBusID", "addressingMode",
  "parentUUID", "profile"]);
const nvidiaCapacities = new Set(["memory", "multiprocessors", "copyEngines", "decoders",
  "encoders", "jpegEngines", "ofaEngines"]);

function byKind(objects, kind) {
  return objects.filter((object) => object.kind === kind);
}

function gangOf(objects) {
  const job = byKind(objects, "Job")[0];
  return {
    job,
    pod: job?.spec?.template ?? {},
    workers: job?.spec?.parallelism ?? 1,
    group: byKind(objects, "PodGroup")[0],
  };
}

export const rules = [
  {
    engine: "KAI",
    version: "v0.15.0",
    source: "pkg/podgrouper/pod_controller.go shouldSkipPodGrouper; docs/batch/README.md",
    rule: "a gang in Drover's own KAI PodGroup carries kai.scheduler/skip-podgrouper: \"true\" " +
      "(else the pod-grouper moves its pods to a PodGroup of minMember 1) and the pod " +
      "annotation pod-group-name naming it; the PodGroup's queue is the pods' queue label",
    check(objects) {
      const { job, pod, workers, group } = gangOf(objects);
      if (!group || group.apiVersion !== "scheduling.run.ai/v2alpha2") return [];
      const errors = [];
      const skip = (job.metadata.annotations ?? {})["kai.scheduler/skip-podgrouper"] ??
        (pod.metadata?.annotations ?? {})["kai.scheduler/skip-podgrouper"];
      if (skip !== "true") errors.push("no kai.scheduler/skip-podgrouper: \"true\"");
      if ((pod.metadata?.annotations ?? {})["pod-group-name"] !== group.metadata.name) {
        errors.push("pod annotation pod-group-name does not name the PodGroup");
      }
      if (group.spec.minMember !== workers) errors.push("minMember is not the worker count");
      if (group.spec.queue !== (pod.metadata?.labels ?? {})["kai.scheduler/queue"]) {
        errors.push("PodGroup queue differs from the pods' kai.scheduler/queue");
      }
      return errors;
    },
  },
  {
    engine: "KAI",
    version: "v0.14.1",
    source: "pkg/podgrouper/podgrouper/plugins/job/job_grouper.go (MinMemberOverrideKey)",
    rule: "a gang under kai-scheduler without Drover's PodGroup tells the pod-grouper its size " +
      "with the Job annotation kai.scheduler/batch-min-member",
    check(objects) {
      const { job, pod, workers, group } = gangOf(objects);
      if (!job || workers <= 1 || group || pod.spec?.schedulerName !== "kai-scheduler") return [];
      const min = (job.metadata.annotations ?? {})["kai.scheduler/batch-min-member"];
      return min === String(workers) ? [] : [`kai.scheduler/batch-min-member is ${min}`];
    },
  },
  {
    engine: "KAI",
    version: "v0.14.1",
    source: "pkg/common/constants/constants.go (DefaultQueueLabel); pod_controller.go " +
      "(SchedulerName)",
    rule: "pods under kai-scheduler carry the queue label kai.scheduler/queue",
    check(objects) {
      const { pod } = gangOf(objects);
      if (pod.spec?.schedulerName !== "kai-scheduler") return [];
      return (pod.metadata?.labels ?? {})["kai.scheduler/queue"] ? [] : ["no kai.scheduler/queue"];
    },
  },
  {
    engine: "KAI",
    version: "v0.14.1",
    source: "pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go",
    rule: "gpu-fraction is alone: never with gpu-memory nor an nvidia.com/gpu limit",
    check(objects) {
      const { pod } = gangOf(objects);
      const annotations = pod.metadata?.annotations ?? {};
      if (!("gpu-fraction" in annotations)) return [];
      const errors = [];
      if ("gpu-memory" in annotations) errors.push("gpu-fraction with gpu-memory");
      for (const container of pod.spec?.containers ?? []) {
        if ("nvidia.com/gpu" in (container.resources?.limits ?? {})) {
          errors.push("gpu-fraction with an nvidia.com/gpu limit");
        }
      }
      return errors;
    },
  },
  {
    engine: "Volcano",
    version: "v1.7.0",
    source: "pkg/controllers/podgroup/pg_controller.go; scheduling/v1beta1 PodGroupSpec",
    rule: "a gang's pods name Drover's PodGroup in scheduling.k8s.io/group-name (else the pg " +
      "controller makes one per pod); the PodGroup has minMember = workers, a queue, and " +
      "minResources covering the workers' requests",
    check(objects) {
      const { pod, workers, group } = gangOf(objects);
      if (!group || group.apiVersion !== "scheduling.volcano.sh/v1beta1") return [];
      const errors = [];
      if ((pod.metadata?.annotations ?? {})["scheduling.k8s.io/group-name"] !== group.metadata.name) {
        errors.push("pod annotation scheduling.k8s.io/group-name does not name the PodGroup");
      }
      if (group.spec.minMember !== workers) errors.push("minMember is not the worker count");
      if (!group.spec.queue) errors.push("no queue: the gang lands in Volcano's default queue");
      const requests = pod.spec?.containers?.[0]?.resources?.requests ?? {};
      for (const name of Object.keys(requests)) {
        if (!(name in (group.spec.minResources ?? {}))) errors.push(`minResources lacks ${name}`);
      }
      return errors;
    },
  },
  {
    engine: "Coscheduling",
    version: "scheduler-plugins v1alpha1 PodGroup",
    source: "apis/scheduling/v1alpha1/types.go (PodGroupLabel); pkg/coscheduling/README.md",
    rule: "a gang's pods carry scheduling.x-k8s.io/pod-group naming the PodGroup and a " +
      "schedulerName other than the default scheduler's (which ignores the label)",
    check(objects) {
      const { pod, workers, group } = gangOf(objects);
      if (!group || group.apiVersion !== "scheduling.x-k8s.io/v1alpha1") return [];
      const errors = [];
      if ((pod.metadata?.labels ?? {})["scheduling.x-k8s.io/pod-group"] !== group.metadata.name) {
        errors.push("pod label scheduling.x-k8s.io/pod-group does not name the PodGroup");
      }
      const scheduler = pod.spec?.schedulerName;
      if (!scheduler || scheduler === "default-scheduler") errors.push("no schedulerName");
      if (group.spec.minMember !== workers) errors.push("minMember is not the worker count");
      return errors;
    },
  },
  {
    engine: "NVIDIA DRA driver",
    version: "v25.8.0",
    source: "cmd/gpu-kubelet-plugin/deviceinfo.go, mig.go, nvlib.go",
    rule: "selectors read attributes and capacities the driver publishes, in its driver's " +
      "domain, after testing device.driver; productName is NVML's name (spaces), compared " +
      "with spaces as dashes",
    check(objects, context) {
      const errors = [];
      for (const claim of byKind(objects, "ResourceClaimTemplate")) {
        for (const request of claim.spec.spec.devices.requests) {
          for (const selector of request.exactly.selectors ?? []) {
            const expression = selector.cel.expression;
            if (!expression.startsWith(`device.driver == "${context.driver}" && `)) {
              errors.push(`does not test device.driver first: ${expression}`);
            }
            for (const [, kind, domain, name] of expression.matchAll(
              /device\.(attributes|capacity)\["([^"]*)"\]\.(\w+)/g)) {
              if (domain !== context.driver) errors.push(`${kind} of domain ${domain}`);
              const known = kind === "attributes" ? nvidiaAttributes : nvidiaCapacities;
              if (!known.has(name)) errors.push(`the driver publishes no ${kind} ${name}`);
            }
            if (expression.includes(".productName") &&
                !expression.includes('.productName.lowerAscii().replace(" ", "-")')) {
              errors.push("productName compared without spaces as dashes");
            }
          }
        }
      }
      return errors;
    },
  },
  {
    engine: "NVIDIA DRA driver",
    version: "v25.8.0",
    source: "deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-mig.yaml",
    rule: "with DRA, devices come only from claims: no nvidia.com/gpu or nvidia.com/mig-* " +
      "limits (a DRA-only cluster has no device plugin to satisfy them)",
    check(objects) {
      const errors = [];
      const { pod } = gangOf(objects);
      for (const container of pod.spec?.containers ?? []) {
        if (!container.resources?.claims) continue;
        for (const name of Object.keys(container.resources.limits ?? {})) {
          if (name.startsWith("nvidia.com/")) errors.push(`limit ${name} next to a claim`);
        }
      }
      return errors;
    },
  },
  {
    engine: "batch/v1 Job",
    version: "Kubernetes 1.34",
    source: "JobSpec.activeDeadlineSeconds (counts from startTime, queueing included)",
    rule: "a timeout is run time: the container stops the worker itself (termination message " +
      "\"drover: timed out\"); activeDeadlineSeconds is only a backstop a day of queueing later",
    check(objects) {
      const { job, pod } = gangOf(objects);
      const deadline = job?.spec?.activeDeadlineSeconds;
      if (deadline === undefined) return [];
      const errors = [];
      const script = pod.spec.containers[0].command?.[2] ?? "";
      const timeout = /sleep ([0-9.]+); echo 'drover: timed out/.exec(script);
      if (!timeout) return ["activeDeadlineSeconds without the container's own deadline"];
      if (deadline < Number(timeout[1]) + 24 * 3600) {
        errors.push(`activeDeadlineSeconds ${deadline} leaves no queue allowance`);
      }
      if ((job.spec.parallelism ?? 1) > 1 && !script.includes("getent hosts")) {
        errors.push("a gang's clock starts before every worker is placed");
      }
      return errors;
    },
  },
];

// Every rule's violations for one render, as "ENGINE VERSION: RULE: violation" lines.
export function engineRuleErrors(objects, context) {
  const errors = [];
  for (const rule of rules) {
    for (const error of rule.check(objects, context)) {
      errors.push(`${rule.engine} ${rule.version} (${rule.source}): ${error}`);
    }
  }
  return errors;
}
