// Validates every manifest `drover render --executor kubernetes` prints, for every spec file in
// examples/ and for the variants in tests/kubernetes/variants.yaml, under several queue options
// (gang schedulers, DRA, Kueue, a scheduler name), against the Kubernetes schemas of the npm
// package kubernetes-models (docs/operations.md, "What was tested against what").
//
//   node tests/kubernetes/validate.mjs DROVER_BINARY SOURCE_DIR
//
// Built-in kinds (batch/v1 Job, v1 Service, resource.k8s.io/v1 ResourceClaimTemplate) go through
// kubernetes-models' generated validators, made strict: a field the schema does not define is an
// error, as the API server's strict field validation (kubectl's default) makes it. Names, label
// keys and label values are checked by the API server's rules (DNS labels, qualified names).
// PodGroups are custom resources that kubernetes-models does not have: their metadata is
// checked against ObjectMeta's schema and their spec against the fields their projects document
// (Volcano, KAI, scheduler-plugins), written down here. Every render then goes through the
// engines' rules (engine_rules.mjs): what each engine reads, per its source and version.

import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

import { engineRuleErrors } from "./engine_rules.mjs";

const [drover, sourceDir] = process.argv.slice(2);
if (!drover || !sourceDir) {
  console.error("usage: node validate.mjs DROVER_BINARY SOURCE_DIR");
  process.exit(2);
}

// Installed by `make test` (npm ci --prefix tests/kubernetes); a missing package fails the test.
let validateJob, validateService, validateClaimTemplate, validateObjectMeta;
try {
  ({ validate: validateJob } = await import("kubernetes-models/_schemas/IoK8sApiBatchV1Job"));
  ({ validate: validateService } = await import("kubernetes-models/_schemas/IoK8sApiCoreV1Service"));
  ({ validate: validateClaimTemplate } = await import(
    "kubernetes-models/_schemas/IoK8sApiResourceV1ResourceClaimTemplate"));
  ({ validate: validateObjectMeta } = await import(
    "@kubernetes-models/apimachinery/_schemas/IoK8sApimachineryPkgApisMetaV1ObjectMeta"));
} catch (e) {
  console.error(`FAIL: the npm package kubernetes-models is not installed (${e.message}).`);
  console.error("Install it with `npm ci --prefix tests/kubernetes` (`make test` does).");
  console.log("0 passed, 1 failed");
  process.exit(1);
}

const builtIn = {
  "batch/v1 Job": validateJob,
  "v1 Service": validateService,
  "resource.k8s.io/v1 ResourceClaimTemplate": validateClaimTemplate,
};
// The spec fields each project documents for its PodGroup.
const podGroupSpecs = {
  "scheduling.volcano.sh/v1beta1": ["minMember", "minTaskMember", "queue", "priorityClassName", "minResources", "networkTopology"],
  "scheduling.run.ai/v2alpha2": ["minMember", "queue", "priorityClassName", "topologyConstraint", "subGroups", "markUnschedulable", "schedulingBackoff"],
  "scheduling.x-k8s.io/v1alpha1": ["minMember", "minResources", "scheduleTimeoutSeconds"],
};

// A deep copy of `value` whose objects record the properties a validator reads: those it never
// reads (and never enumerates) are not in its schema.
function track(value, path, records) {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item, i) => track(item, `${path}/${i}`, records));
  const record = { path, keys: Object.keys(value), read: new Set(), enumerated: false };
  records.push(record);
  const copy = Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, track(item, `${path}/${key}`, records)]));
  return new Proxy(copy, {
    get(target, key, receiver) {
      if (typeof key === "string") record.read.add(key);
      return Reflect.get(target, key, receiver);
    },
    has(target, key) {
      if (typeof key === "string") record.read.add(key);
      return Reflect.has(target, key);
    },
    ownKeys(target) {
      record.enumerated = true;
      return Reflect.ownKeys(target);
    },
  });
}

// Schema errors and unknown fields of `object` under `validate`.
function strictErrors(validate, object, root = "") {
  const records = [];
  const errors = [];
  if (!validate(track(object, root, records))) {
    for (const e of validate.errors ?? []) {
      errors.push(`${e.instancePath || "/"} ${e.keyword}: ${JSON.stringify(e.params)}`);
    }
  }
  for (const r of records) {
    if (r.enumerated) continue;  // a map: every key was looked at
    for (const key of r.keys) {
      if (!r.read.has(key)) errors.push(`${r.path}/${key}: unknown field`);
    }
  }
  return errors;
}

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const qualifiedName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function keyErrors(key, where) {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : "";
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  const errors = [];
  if (prefix && (prefix.length > 253 || !dnsSubdomain.test(prefix))) errors.push(`${where} key '${key}': bad prefix`);
  if (name.length > 63 || !qualifiedName.test(name)) errors.push(`${where} key '${key}': bad name`);
  return errors;
}

// The API server's rules on names and labels, for the object and its pod template.
function metadataErrors(object) {
  const errors = [];
  const check = (meta, where) => {
    if (!meta) return;
    if (meta.name !== undefined && (meta.name.length > 63 || !dnsLabel.test(meta.name))) {
      errors.push(`${where}.name '${meta.name}': not a DNS label`);
    }
    for (const [key, value] of Object.entries(meta.labels ?? {})) {
      errors.push(...keyErrors(key, `${where}.labels`));
      if (typeof value !== "string" || value.length > 63 || !labelValue.test(value)) {
        errors.push(`${where}.labels['${key}'] = '${value}': not a label value`);
      }
    }
    for (const key of Object.keys(meta.annotations ?? {})) errors.push(...keyErrors(key, `${where}.annotations`));
  };
  check(object.metadata, "metadata");
  check(object.spec?.template?.metadata, "spec.template.metadata");
  for (const [key] of Object.entries(object.spec?.template?.spec?.nodeSelector ?? {})) {
    errors.push(...keyErrors(key, "nodeSelector"));
  }
  return errors;
}

let objects = 0;
let invalid = 0;  // manifests with errors
let failures = 0;  // everything that failed: invalid manifests, renders, the self-check
const kinds = new Map();

function validateManifest(object, where) {
  const id = `${object.apiVersion} ${object.kind}`;
  let errors = metadataErrors(object);
  if (builtIn[id]) {
    errors.push(...strictErrors(builtIn[id], object));
  } else if (object.kind === "PodGroup" && podGroupSpecs[object.apiVersion]) {
    errors.push(...strictErrors(validateObjectMeta, object.metadata, "/metadata"));
    for (const key of Object.keys(object)) {
      if (!["apiVersion", "kind", "metadata", "spec"].includes(key)) errors.push(`/${key}: unknown field`);
    }
    for (const key of Object.keys(object.spec ?? {})) {
      if (!podGroupSpecs[object.apiVersion].includes(key)) errors.push(`/spec/${key}: not a documented field`);
    }
    if (!Number.isInteger(object.spec?.minMember) || object.spec.minMember < 1) {
      errors.push("/spec/minMember: must be an integer >= 1");
    }
  } else {
    errors.push(`no schema for ${id}`);
  }
  objects++;
  kinds.set(id, (kinds.get(id) ?? 0) + 1);
  if (errors.length > 0) {
    invalid++;
    failures++;
    console.log(`FAIL ${where}: ${id} ${object.metadata?.name}`);
    for (const e of errors) console.log(`    ${e}`);
  }
}

function render(file, flags) {
  const args = ["-o", "json", "render", file, "--executor", "kubernetes", ...flags];
  try {
    return JSON.parse(execFileSync(drover, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })).items;
  } catch (e) {
    failures++;
    console.log(`FAIL drover ${args.join(" ")}: ${e.stderr || e.message}`);
    return [];
  }
}

// The engines' rules over each job's objects (grouped by their attempt label).
let ruleChecks = 0;
function checkEngineRules(items, flags, where) {
  const driverFlag = flags.indexOf("--dra-driver");
  const context = { driver: driverFlag >= 0 ? flags[driverFlag + 1] : "gpu.nvidia.com" };
  const jobs = new Map();
  for (const object of items) {
    const attempt = object.metadata?.labels?.["drover.dev/attempt-name"];
    jobs.set(attempt, [...(jobs.get(attempt) ?? []), object]);
  }
  for (const [attempt, objects] of jobs) {
    ruleChecks++;
    const errors = engineRuleErrors(objects, context);
    if (errors.length > 0) {
      failures++;
      console.log(`FAIL engine rules ${where}: ${attempt}`);
      for (const e of errors) console.log(`    ${e}`);
    }
  }
}

// A render that must be refused, with `message` in drover's error.
function expectRefused(file, flags, message) {
  const args = ["-o", "json", "render", file, "--executor", "kubernetes", ...flags];
  try {
    execFileSync(drover, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    failures++;
    console.log(`FAIL drover ${args.join(" ")} rendered what its engine cannot honour`);
  } catch (e) {
    if (!String(e.stderr).includes(message)) {
      failures++;
      console.log(`FAIL drover ${args.join(" ")}: expected '${message}', got ${e.stderr}`);
    }
  }
}

function isSpec(path) {
  return /^kind:\s*(Job|Pipeline|CronJob)\b/m.test(readFileSync(path, "utf8"));
}

function yamlFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.(ya?ml|json)$/.test(name) ? [path] : [];
  });
}

const variants = [
  [],
  ["--gang", "volcano"],
  ["--gang", "kai"],
  ["--gang", "kai", "--gang-version", "v0.14.1"],
  ["--scheduler", "kai-scheduler"],
  ["--gang", "coscheduling", "--scheduler", "scheduler-plugins-scheduler"],
  ["--dra"],
  ["--dra", "--gang", "kai"],
  ["--dra", "--device-class", "h100.example.com", "--gang", "volcano"],
  ["--dra", "--dra-driver", "gpu.example.com", "--mig-device-class", "mig.example.com"],
  ["--kueue-queue", "team-a", "--scheduler", "my-scheduler", "--namespace", "ml", "--service-account", "trainer"],
];
const files = [
  ...yamlFiles(join(sourceDir, "examples")).filter((path) => {
    if (isSpec(path)) return true;
    console.log(`skip ${path}: not a spec file (nodes, policy or simulator input)`);
    return false;
  }),
  join(sourceDir, "tests/kubernetes/variants.yaml"),
];
let rendered = 0;
for (const file of files) {
  for (const flags of variants) {
    const items = render(file, ["--image", "python:3.12-slim", ...flags]);
    rendered++;
    for (const object of items) validateManifest(object, `${file} ${flags.join(" ")}`);
    checkEngineRules(items, flags, `${file} ${flags.join(" ")}`);
  }
}
// The KAI-only features: a time-sliced share as gpu-fraction.
const kai = render(join(sourceDir, "tests/kubernetes/kai.yaml"), ["--gang", "kai"]);
for (const object of kai) validateManifest(object, "tests/kubernetes/kai.yaml --gang kai");
checkEngineRules(kai, [], "tests/kubernetes/kai.yaml --gang kai");
// --queue Q renders every job as submitted to Q: Q is its KAI queue.
for (const object of render(join(sourceDir, "tests/kubernetes/kai.yaml"), ["--gang", "kai", "--queue", "batch"])) {
  const labels = object.kind === "Job" ? object.spec.template.metadata.labels : {};
  const queue = object.kind === "PodGroup" ? object.spec.queue : labels["kai.scheduler/queue"];
  if ((object.kind === "PodGroup" || object.kind === "Job") && queue !== "batch") {
    failures++;
    console.log(`FAIL --queue batch: the ${object.kind}'s KAI queue is ${queue}`);
  }
}
// What an engine (version) cannot honour is refused, naming the field.
const gangs = join(sourceDir, "tests/kubernetes/variants.yaml");
expectRefused(gangs, ["--image", "x", "--gang", "coscheduling"], "executor.scheduler_name");
expectRefused(gangs, ["--image", "x", "--gang", "kai", "--gang-version", "v0.13.0"],
  "executor.gang_scheduler_version: KAI v0.13.0 cannot gang a batch/v1 Job");
expectRefused(gangs, ["--image", "x", "--gang", "volcano", "--gang-version", "1.6"],
  "executor.gang_scheduler_version");

// A manifest this script must reject, so that a validator that accepts anything cannot pass.
const bad = render(join(sourceDir, "tests/kubernetes/variants.yaml"), ["--image", "x"])
  .find((object) => object.kind === "Job");
bad.spec.template.spec.containers[0].resources.limits = "two";
bad.spec.template.spec.containerz = [];
const caught = strictErrors(validateJob, bad);
const expected = [
  "/spec/template/spec/containers/0/resources/limits type",  // a schema error
  "/spec/template/spec/containerz: unknown field",  // a field no schema defines
];
if (!expected.every((e) => caught.some((c) => c.startsWith(e)))) {
  failures++;
  console.log(`FAIL the validator accepted a broken Job: ${JSON.stringify(caught)}`);
}

console.log(`kinds: ${[...kinds].map(([k, n]) => `${k} x${n}`).join(", ")}`);
console.log(`${files.length} spec files x ${variants.length} option sets (${rendered} renders): ${objects} manifests validated, ${ruleChecks} jobs checked against the engines' rules`);
console.log(`${objects - invalid} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
