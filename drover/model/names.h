#pragma once

// One name table per enum: the enum's names are written once, here in model/, and everything
// that prints or parses them (the JSON codec, the spec and policy parsers, the CLI, SQL in the
// stores) goes through the table, so the spellings cannot drift apart.
//
//   inline constexpr NameTable kJobStateNames{std::array{
//       NameEntry{JobState::kPending, "pending"}, NameEntry{JobState::kReady, "ready"}, ...}};
//   kJobStateNames.Name(JobState::kReady)   -> "ready"
//   kJobStateNames.Parse("ready")           -> JobState::kReady (nullopt for an unknown name)
//   kJobStateNames.Choices()                -> {"pending", "ready", ...}, for "did you mean"
//
// A table lists every value exactly once, in declaration order, and the enum's values are
// 0, 1, 2, ... (the default numbering): the constructor checks both at compile time, so a value
// added to the middle of an enum but not to its table fails to compile where the table is
// defined. One appended at the end is caught where the enum's last value is named beside the
// table: static_assert(kTable.size() == static_cast<std::size_t>(Enum::kLast) + 1).

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace drover::model {

template <typename Enum>
struct NameEntry {
  Enum value;
  std::string_view name;
};
// Spelled out for compilers without class template argument deduction for aggregates (clang
// before 17, which the thread-safety check and the fuzzers use).
template <typename Enum>
NameEntry(Enum, std::string_view) -> NameEntry<Enum>;

template <typename Enum, std::size_t N>
class NameTable {
 public:
  // Compile-time checked (in a constexpr definition): entry i has value i, names are unique.
  consteval explicit NameTable(std::array<NameEntry<Enum>, N> entries) : entries_(entries) {
    for (std::size_t i = 0; i < N; ++i) {
      if (static_cast<std::size_t>(entries_[i].value) != i) {
        throw "a name table lists its enum's values in declaration order, each once";
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (entries_[i].name == entries_[j].name) throw "a name table's names are unique";
      }
    }
  }

  // The name of `value`; "?" for a value outside the enum (a corrupt cast).
  constexpr std::string_view Name(Enum value) const {
    const auto index = static_cast<std::size_t>(value);
    return index < N ? entries_[index].name : std::string_view("?");
  }
  // The value named `name` exactly; nullopt for any other text.
  constexpr std::optional<Enum> Parse(std::string_view name) const {
    for (const NameEntry<Enum>& entry : entries_) {
      if (entry.name == name) return entry.value;
    }
    return std::nullopt;
  }
  // Every value, in declaration order.
  std::vector<Enum> Values() const {
    std::vector<Enum> out;
    out.reserve(N);
    for (const NameEntry<Enum>& entry : entries_) out.push_back(entry.value);
    return out;
  }
  // Every name, in declaration order.
  std::vector<std::string> Choices() const {
    std::vector<std::string> out;
    out.reserve(N);
    for (const NameEntry<Enum>& entry : entries_) out.emplace_back(entry.name);
    return out;
  }
  // The names joined with ", " ("pending, ready, ..."), for error messages.
  std::string ChoiceList() const {
    std::string out;
    for (const NameEntry<Enum>& entry : entries_) {
      if (!out.empty()) out += ", ";
      out += entry.name;
    }
    return out;
  }
  // The names as alternatives for prose: "a", "a or b", "a, b or c".
  std::string AlternativeList() const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? " or " : ", ";
      out += entries_[i].name;
    }
    return out;
  }
  constexpr const std::array<NameEntry<Enum>, N>& entries() const { return entries_; }
  static constexpr std::size_t size() { return N; }

 private:
  std::array<NameEntry<Enum>, N> entries_;
};

template <typename Enum, std::size_t N>
NameTable(std::array<NameEntry<Enum>, N>) -> NameTable<Enum, N>;

}  // namespace drover::model
