#pragma once

// Strong identifier types: a JobId cannot be passed where a NodeId is expected.

#include <compare>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace drover {

template <typename Tag, typename Rep>
class StrongId {
 public:
  StrongId() = default;
  explicit StrongId(Rep value) : value_(std::move(value)) {}

  const Rep& value() const { return value_; }

  friend auto operator<=>(const StrongId&, const StrongId&) = default;
  friend bool operator==(const StrongId&, const StrongId&) = default;

 private:
  Rep value_{};
};

// Jobs are numbered from 1 by the store; 0 means "no job".
using JobId = StrongId<struct JobIdTag, std::int64_t>;
// A node is named by its operator ("node-a", the host name); names are unique in a cluster.
using NodeId = StrongId<struct NodeIdTag, std::string>;

}  // namespace drover

template <typename Tag, typename Rep>
struct std::hash<drover::StrongId<Tag, Rep>> {
  std::size_t operator()(const drover::StrongId<Tag, Rep>& id) const {
    return std::hash<Rep>()(id.value());
  }
};
