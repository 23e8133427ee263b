#include "drover/store/store_codec.h"

#include <fmt/format.h>

#include <algorithm>

#include "drover/codec/json.h"

namespace drover::store {

std::string EncodeJob(const model::Job& job) { return codec::DumpJson(codec::ToJson(job)); }

std::string EncodeDecision(const model::Decision& decision) {
  return codec::DumpJson(codec::ToJson(decision));
}

std::string EncodeCronSpec(const model::CronSpec& spec) {
  return codec::DumpJson(codec::ToJson(spec));
}

std::string EncodeService(const ServiceRecord& service) {
  return codec::DumpJson(nlohmann::json{{"spec", codec::ToJson(service.spec)},
                                        {"owner", service.owner},
                                        {"team", service.team},
                                        {"created_at", service.created_at},
                                        {"updated_at", service.updated_at},
                                        {"generation", service.generation},
                                        {"desired", service.desired}});
}

std::string EncodeNodeAdmin(const model::NodeAdmin& admin) {
  return codec::DumpJson(codec::ToJson(admin));
}

std::string EncodeOrphans(const AgentRecord& agent) {
  nlohmann::json orphans = nlohmann::json::array();
  if (agent.lost) {
    for (const model::WorkerKey& key : agent.lost->orphans) {
      orphans.push_back({key.job.value(), key.attempt, key.rank});
    }
  }
  return codec::DumpJson(orphans);
}

std::string EncodeQueues(const std::vector<std::string>& queues) {
  return codec::DumpJson(nlohmann::json(queues));
}

Result<model::Job> DecodeJob(std::string_view store, std::int64_t id, std::string_view text) {
  auto json = codec::ParseJson(text);
  if (!json) {
    return Internal(
        fmt::format("{} store: job {}: stored snapshot: {}", store, id, json.error().message));
  }
  auto job = codec::JobFromJson(*json);
  if (!job) {
    return Internal(
        fmt::format("{} store: job {}: stored snapshot: {}", store, id, job.error().message));
  }
  return job;
}

Result<model::Decision> DecodeDecision(std::string_view store, std::int64_t job,
                                       std::string_view text) {
  auto json = codec::ParseJson(text);
  if (!json) {
    return Internal(
        fmt::format("{} store: job {}: stored decision: {}", store, job, json.error().message));
  }
  auto decision = codec::DecisionFromJson(*json);
  if (!decision) {
    return Internal(
        fmt::format("{} store: job {}: stored decision: {}", store, job, decision.error().message));
  }
  return decision;
}

Result<model::CronSpec> DecodeCronSpec(std::string_view store, std::string_view text) {
  auto json = codec::ParseJson(text);
  if (!json) {
    return Internal(fmt::format("{} store: stored cron job: {}", store, json.error().message));
  }
  auto spec = codec::CronSpecFromJson(*json);
  if (!spec) {
    return Internal(fmt::format("{} store: stored cron job: {}", store, spec.error().message));
  }
  return spec;
}

Result<ServiceRecord> DecodeService(std::string_view store, std::string_view text) {
  auto fail = [&](std::string_view why) {
    return Internal(fmt::format("{} store: stored service: {}", store, why));
  };
  auto json = codec::ParseJson(text);
  if (!json) return fail(json.error().message);
  if (!json->is_object() || !json->contains("spec")) return fail("not a service record");
  auto spec = codec::ServiceSpecFromJson((*json)["spec"], "spec");
  if (!spec) return fail(spec.error().message);
  ServiceRecord record;
  record.spec = std::move(*spec);
  try {
    record.owner = json->value("owner", "");
    record.team = json->value("team", "");
    record.created_at = json->value("created_at", TimeMs{0});
    record.updated_at = json->value("updated_at", TimeMs{0});
    record.generation = json->value("generation", 1);
    record.desired = json->value("desired", 0);
  } catch (const nlohmann::json::exception& e) {
    return fail(e.what());
  }
  return record;
}

Result<model::NodeAdmin> DecodeNodeAdmin(std::string_view store, const std::string& node,
                                         std::string_view text) {
  const nlohmann::json admin = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto decoded = codec::NodeAdminFromJson(admin);
  if (!decoded) {
    return Internal(fmt::format("{} store: node {}: {}", store, node, decoded.error().message));
  }
  return decoded;
}

Result<std::vector<model::WorkerKey>> DecodeOrphans(std::string_view store, const std::string& node,
                                                    std::string_view text) {
  const nlohmann::json orphans = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!orphans.is_array()) {
    return Internal(fmt::format("{} store: agent {}: orphans are not a JSON list", store, node));
  }
  std::vector<model::WorkerKey> out;
  for (const nlohmann::json& key : orphans) {
    if (!key.is_array() || key.size() != 3 || !key[0].is_number_integer() ||
        !key[1].is_number_integer() || !key[2].is_number_integer()) {
      return Internal(
          fmt::format("{} store: agent {}: an orphan is not [job, attempt, rank]", store, node));
    }
    out.push_back(
        model::WorkerKey{JobId(key[0].get<std::int64_t>()), key[1].get<int>(), key[2].get<int>()});
  }
  return out;
}

Result<std::vector<std::string>> DecodeQueues(std::string_view store, const std::string& token,
                                              std::string_view text) {
  const nlohmann::json queues = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!queues.is_array() ||
      !std::all_of(queues.begin(), queues.end(), [](const auto& q) { return q.is_string(); })) {
    return Internal(
        fmt::format("{} store: token {}: queues are not a JSON list of names", store, token));
  }
  std::vector<std::string> out;
  for (const nlohmann::json& queue : queues) out.push_back(queue.get<std::string>());
  return out;
}

}  // namespace drover::store
