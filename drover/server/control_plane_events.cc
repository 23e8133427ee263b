// ControlPlane's live events (control_plane.h, events(); docs/api.md, "Events"): what each
// persisted batch changed, published to the EventHub after the write, under mu_ (the hub frames
// and appends each event, O(1), and wakes the HTTP front's streams; it does no I/O).

#include <string>

#include "drover/codec/json.h"
#include "drover/model/access.h"
#include "drover/server/control_plane.h"

namespace drover::server {

void ControlPlane::PublishEvents(const store::Batch& batch) {
  auto resource_of = [this](JobId id) REQUIRES(mu_) -> std::optional<model::Resource> {
    const model::Job* job = controller_.Find(id);
    if (job == nullptr) return std::nullopt;
    return model::ResourceOf(*job);
  };
  for (const model::Transition& transition : batch.transitions) {
    std::optional<model::Resource> job = resource_of(transition.job);
    if (!job) continue;  // cannot happen: a transition's job is the controller's
    events_.Publish(EventRecord{"job", std::move(job), codec::ToJson(transition)});
  }
  for (const model::Decision& decision : batch.decisions) {
    std::optional<model::Resource> job = resource_of(decision.job);
    if (!job) continue;
    events_.Publish(EventRecord{"decision", std::move(job), codec::ToJson(decision)});
  }
  for (const store::NodeAdminRecord& record : batch.nodes) {
    const model::NodeAdmin& admin = record.admin;
    const std::string_view change = admin.draining   ? "draining"
                                    : admin.cordoned ? "cordoned"
                                                     : "uncordoned";
    nlohmann::json data{{"node", record.node.value()},
                        {"change", change},
                        {"at", clock_.Now()},
                        {"admin", codec::ToJson(admin)}};
    events_.Publish(EventRecord{"node", std::nullopt, std::move(data)});
  }
}

void ControlPlane::PublishNodeEvent(const NodeId& node, std::string_view change,
                                    const std::string& reason) {
  nlohmann::json data{{"node", node.value()}, {"change", change}, {"at", clock_.Now()}};
  if (!reason.empty()) data["reason"] = reason;
  events_.Publish(EventRecord{"node", std::nullopt, std::move(data)});
}

}  // namespace drover::server
