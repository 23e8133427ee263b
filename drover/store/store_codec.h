#pragma once

// The text encodings the SQL stores (SQLite, PostgreSQL) keep in their columns, and their
// decoders, shared so that both stores read and write the same documents. Internal to
// drover/store. A decoder's error is kInternal ("<store> store: <what>: <reason>"): a stored
// value that does not decode is damage, not a caller's mistake.

#include <string>
#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/cron.h"
#include "drover/model/decision.h"
#include "drover/model/job.h"
#include "drover/model/node.h"
#include "drover/store/store.h"

namespace drover::store {

// codec::ToJson text of the value.
std::string EncodeJob(const model::Job& job);
std::string EncodeDecision(const model::Decision& decision);
std::string EncodeCronSpec(const model::CronSpec& spec);
// {"spec": codec::ToJson(ServiceSpec), "owner", "team", "created_at", "updated_at",
// "generation", "desired"}.
std::string EncodeService(const ServiceRecord& service);
std::string EncodeNodeAdmin(const model::NodeAdmin& admin);
// An agent's orphans as [[job, attempt, rank], ...] ("[]" when the node is not lost).
std::string EncodeOrphans(const AgentRecord& agent);
// A token's queues as a JSON list of names.
std::string EncodeQueues(const std::vector<std::string>& queues);

// `store` names the store in messages ("sqlite", "postgres").
Result<model::Job> DecodeJob(std::string_view store, std::int64_t id, std::string_view text);
Result<model::Decision> DecodeDecision(std::string_view store, std::int64_t job,
                                       std::string_view text);
Result<model::CronSpec> DecodeCronSpec(std::string_view store, std::string_view text);
Result<ServiceRecord> DecodeService(std::string_view store, std::string_view text);
Result<model::NodeAdmin> DecodeNodeAdmin(std::string_view store, const std::string& node,
                                         std::string_view text);
Result<std::vector<model::WorkerKey>> DecodeOrphans(std::string_view store, const std::string& node,
                                                    std::string_view text);
Result<std::vector<std::string>> DecodeQueues(std::string_view store, const std::string& token,
                                              std::string_view text);

}  // namespace drover::store
