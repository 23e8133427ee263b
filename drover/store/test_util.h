#pragma once

// Test helpers for the store tests. Test-only, header-only.

#include <cstdint>
#include <string>
#include <vector>

#include "drover/model/decision.h"
#include "drover/model/job.h"
#include "drover/testing/temp_dir.h"

namespace drover::store {

using drover::testing::TempDir;

// A small pending job owned by alice of team research in the default queue.
inline model::Job MakeJob(std::int64_t id, const std::string& name) {
  model::Job job;
  job.id = JobId(id);
  job.spec.name = name;
  job.spec.owner = "alice";
  job.spec.team = "research";
  job.spec.command = {"sleep", "1"};
  job.created_at = 1'700'000'000'000 + id;
  return job;
}

// A decision about job `id` with every field set; victims name `victims` (each with 2 GPUs).
inline model::Decision MakeDecision(std::int64_t id, model::Decision::Kind kind,
                                    std::vector<std::int64_t> victims = {}) {
  model::Decision decision;
  decision.job = JobId(id);
  decision.attempt = 2;
  decision.at = 1'700'000'100'000 + id;
  decision.kind = kind;
  decision.queue = "team-a";
  decision.summary = "placed on node-a (binpack score 0.75)";
  decision.candidates = 3;
  decision.nodes = {"node-a", "node-b"};
  decision.score = 0.75;
  decision.reason = "reclaim";
  for (std::int64_t victim : victims) {
    decision.victims.push_back(model::Victim{.job = JobId(victim),
                                             .queue = "team-b",
                                             .gpus = 2,
                                             .lost_gpu_seconds = 120.5,
                                             .has_checkpoint = true});
  }
  decision.preemptor = JobId(99);
  decision.reserved_start = 1'700'000'200'000;
  return decision;
}

}  // namespace drover::store
