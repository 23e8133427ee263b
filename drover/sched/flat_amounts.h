#pragma once

// FlatAmounts: resource name -> amount, as model::ResourceAmounts (a std::map) holds them, in
// one sorted vector. A job's charge (queues.h, Charge) holds one to four entries ("cpu",
// "memory", "gpu", "gpu:<model>"); it is built for every job a cycle admits, copied into the
// placement and the holding, and read again at each release. As a map that was a node
// allocation per entry on each copy and a pointer chase per entry on each read of a charge made
// long before (docs/benchmarks.md, "Charges in one vector").
//
// Invariant: names strictly ascending. The members named as std::map's behave as std::map's do,
// except that at() of a missing name is a DROVER_CHECK failure. Iterating without const lets a
// caller change amounts in place; changing a name there would break the order (a caller bug).

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "drover/common/result.h"

namespace drover::sched {

class FlatAmounts {
 public:
  using value_type = std::pair<std::string, std::int64_t>;
  using const_iterator = std::vector<value_type>::const_iterator;
  using iterator = std::vector<value_type>::iterator;

  FlatAmounts() = default;
  // Entries in any order; a name given twice keeps its first amount (as a map's initializer
  // list does).
  FlatAmounts(std::initializer_list<value_type> entries) {
    for (const auto& [name, amount] : entries) TryEmplace(name, amount);
  }

  // Adds `name` after every name held: callers that produce names in ascending order (as
  // ChargeAmounts does) build the list without a search. DROVER_CHECKs the order.
  void Append(std::string name, std::int64_t amount) {
    DROVER_CHECK(entries_.empty() || entries_.back().first < name);
    entries_.emplace_back(std::move(name), amount);
  }

  void reserve(std::size_t entries) { entries_.reserve(entries); }

  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  iterator begin() { return entries_.begin(); }
  iterator end() { return entries_.end(); }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  const_iterator find(std::string_view name) const {
    auto at = LowerBound(name);
    return at != entries_.end() && at->first == name ? at : entries_.end();
  }
  bool contains(std::string_view name) const { return find(name) != end(); }
  std::int64_t at(std::string_view name) const {
    auto found = find(name);
    DROVER_CHECK(found != end());
    return found->second;
  }
  // The amount of `name`, added as 0 in its place when absent.
  std::int64_t& operator[](std::string_view name) { return TryEmplace(name, 0)->second; }

  friend bool operator==(const FlatAmounts&, const FlatAmounts&) = default;

 private:
  std::vector<value_type>::const_iterator LowerBound(std::string_view name) const {
    return std::lower_bound(
        entries_.begin(), entries_.end(), name,
        [](const value_type& entry, std::string_view n) { return entry.first < n; });
  }
  std::vector<value_type>::iterator LowerBound(std::string_view name) {
    return entries_.begin() + (std::as_const(*this).LowerBound(name) - entries_.cbegin());
  }
  // The entry of `name`, added in its place with `amount` when absent (a present one keeps its
  // amount, as std::map::try_emplace does).
  std::vector<value_type>::iterator TryEmplace(std::string_view name, std::int64_t amount) {
    auto at = LowerBound(name);
    if (at == entries_.end() || at->first != name) at = entries_.emplace(at, name, amount);
    return at;
  }

  std::vector<value_type> entries_;
};

}  // namespace drover::sched
