#include "drover/spec/node_file.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <utility>

#include "drover/common/quantity.h"
#include "drover/model/mig.h"
#include "drover/spec/gpu_declaration.h"
#include "drover/spec/limits.h"
#include "drover/spec/yaml_reader.h"

namespace drover::spec {
namespace {

constexpr int kMaxGpusPerEntry = 4096;

// Reports to the spec parsers' sink: each problem at a YAML position, under the field path of
// the mapping being read ("nodes[1].gpus[0]"), as "FILE:LINE:COL: error: FIELD: message".
class Diagnostics {
 public:
  explicit Diagnostics(internal::Sink& sink) : sink_(sink) {}

  void Add(const YAML::Mark& mark, const std::string& field, std::string message) {
    sink_.Add(internal::PosOf(mark), field, std::move(message));
  }
  void Add(const YAML::Node& node, const std::string& field, std::string message) {
    Add(node.Mark(), field, std::move(message));
  }

  std::size_t size() const { return sink_.size(); }

 private:
  internal::Sink& sink_;
};

// The mark of `key` inside `map` (the key itself), or of the map when the key is absent.
YAML::Mark KeyMark(const YAML::Node& map, std::string_view key) {
  for (const auto& item : map) {
    if (item.first.IsScalar() && item.first.Scalar() == key) return item.first.Mark();
  }
  return map.Mark();
}

bool CheckKeys(const YAML::Node& map, const std::string& path,
               std::initializer_list<std::string_view> allowed, std::string_view what,
               Diagnostics& diag) {
  bool ok = true;
  for (const auto& item : map) {
    if (!item.first.IsScalar()) {
      diag.Add(item.first, path, fmt::format("{} keys must be plain names", what));
      ok = false;
      continue;
    }
    bool known = false;
    for (std::string_view key : allowed) known = known || item.first.Scalar() == key;
    if (!known) {
      diag.Add(item.first, internal::Child(path, item.first.Scalar()),
               fmt::format("unknown {} key '{}' (known: {})", what, item.first.Scalar(),
                           fmt::join(allowed, ", ")));
      ok = false;
    }
  }
  return ok;
}

// A required-or-optional scalar field; nullopt (with a diagnostic when required or malformed).
std::optional<std::string> ScalarField(const YAML::Node& map, const std::string& path,
                                       const char* key, bool required, Diagnostics& diag) {
  YAML::Node value = map[key];
  if (!value || value.IsNull()) {
    if (required) {
      diag.Add(map, internal::Child(path, key), fmt::format("missing required field '{}'", key));
    }
    return std::nullopt;
  }
  if (!value.IsScalar()) {
    diag.Add(value, internal::Child(path, key), fmt::format("'{}' must be a single value", key));
    return std::nullopt;
  }
  return value.Scalar();
}

std::optional<model::Taint> ParseTaint(const YAML::Node& node, const std::string& path,
                                       Diagnostics& diag) {
  model::Taint taint;
  std::string effect;
  if (node.IsScalar()) {
    // key=value:Effect or key:Effect
    const std::string& text = node.Scalar();
    std::size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      diag.Add(node, path, fmt::format("taint '{}' must be key=value:Effect", text));
      return std::nullopt;
    }
    effect = text.substr(colon + 1);
    std::string key_value = text.substr(0, colon);
    std::size_t eq = key_value.find('=');
    taint.key = key_value.substr(0, eq);
    if (eq != std::string::npos) taint.value = key_value.substr(eq + 1);
  } else if (node.IsMap()) {
    if (!CheckKeys(node, path, {"key", "value", "effect"}, "taint", diag)) return std::nullopt;
    auto key = ScalarField(node, path, "key", true, diag);
    auto value = ScalarField(node, path, "value", false, diag);
    auto eff = ScalarField(node, path, "effect", true, diag);
    if (!key || !eff) return std::nullopt;
    taint.key = *key;
    taint.value = value.value_or("");
    effect = *eff;
  } else {
    diag.Add(node, path, "a taint is \"key=value:Effect\" or {key, value, effect}");
    return std::nullopt;
  }
  if (taint.key.empty()) {
    diag.Add(node, path, "taint key is empty");
    return std::nullopt;
  }
  auto parsed = model::ParseTaintEffect(effect);
  if (!parsed) {
    diag.Add(node, path,
             fmt::format("unknown taint effect '{}' (expected {})", effect,
                         model::kTaintEffectNames.AlternativeList()));
    return std::nullopt;
  }
  taint.effect = *parsed;
  return taint;
}

// The MIG layout of a list entry, `mig: {3g.40gb: 2, 1g.10gb: 1}` in the order written, or
// nullopt after reporting what is wrong.
std::optional<std::vector<model::MigSlots>> ParseMigLayout(const YAML::Node& node,
                                                           const std::string& path,
                                                           Diagnostics& diag) {
  if (!node.IsMap() || node.size() == 0) {
    diag.Add(node, path,
             "mig is a map of MIG profiles to instance counts, e.g. {3g.40gb: 2, 1g.10gb: 1}");
    return std::nullopt;
  }
  std::size_t errors = diag.size();
  std::vector<model::MigSlots> layout;
  for (const auto& item : node) {
    if (!item.first.IsScalar()) {
      diag.Add(item.first, path, "MIG profiles must be plain names such as 3g.40gb");
      continue;
    }
    model::MigSlots slots;
    slots.profile = item.first.Scalar();
    // As job specs: profiles are compared in lower case ("1G.10GB" is "1g.10gb").
    std::transform(slots.profile.begin(), slots.profile.end(), slots.profile.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (auto profile = model::ParseMigProfile(slots.profile); !profile) {
      diag.Add(item.first, path, profile.error().message);
      continue;
    }
    bool duplicate = false;
    for (const model::MigSlots& other : layout)
      duplicate = duplicate || other.profile == slots.profile;
    if (duplicate) {
      diag.Add(item.first, path, fmt::format("duplicate MIG profile '{}'", slots.profile));
      continue;
    }
    try {
      slots.count = item.second.IsScalar() ? item.second.as<int>() : -1;
    } catch (const YAML::Exception&) {
      slots.count = -1;
    }
    if (slots.count < 1 || slots.count > model::kMigComputeSlices) {
      diag.Add(
          item.second.IsDefined() && !item.second.IsNull() ? item.second.Mark() : item.first.Mark(),
          path,
          fmt::format("MIG instance count of '{}' must be an integer from 1 to {}", slots.profile,
                      model::kMigComputeSlices));
      continue;
    }
    layout.push_back(std::move(slots));
  }
  if (diag.size() != errors) return std::nullopt;
  if (auto status = model::CheckMigLayout(layout); !status) {
    diag.Add(node, path, status.error().message);
    return std::nullopt;
  }
  return layout;
}

// Appends the GPUs of a list entry {model, memory, topology_group, count, uuid, sharing, mig}.
void ParseGpuListEntry(const YAML::Node& node, const std::string& path,
                       std::vector<model::Gpu>& gpus, Diagnostics& diag) {
  if (!node.IsMap()) {
    diag.Add(node, path,
             "a GPU is a map {model, memory, topology_group, count, uuid, sharing, mig}");
    return;
  }
  if (!CheckKeys(node, path,
                 {"model", "memory", "topology_group", "count", "uuid", "sharing", "mig"}, "GPU",
                 diag)) {
    return;
  }
  std::size_t errors = diag.size();
  auto model = ScalarField(node, path, "model", true, diag);
  auto memory = ScalarField(node, path, "memory", false, diag);
  auto group = ScalarField(node, path, "topology_group", false, diag);
  auto count_text = ScalarField(node, path, "count", false, diag);
  auto uuid = ScalarField(node, path, "uuid", false, diag);
  auto sharing_text = ScalarField(node, path, "sharing", false, diag);
  if (diag.size() != errors || !model) return;
  if (model->empty()) {
    diag.Add(node["model"], internal::Child(path, "model"), "GPU model is empty");
    return;
  }
  std::int64_t memory_bytes = 0;
  if (memory) {
    auto bytes = ParseGpuMemory(*memory);
    if (!bytes) {
      diag.Add(node["memory"], internal::Child(path, "memory"),
               fmt::format("GPU memory '{}': {}", *memory, bytes.error().message));
      return;
    }
    memory_bytes = *bytes;
  } else if (auto known = DefaultGpuMemoryBytes(*model)) {
    memory_bytes = *known;
  } else {
    diag.Add(node, path,
             fmt::format("GPU model '{}' has no default memory size; add 'memory'", *model));
    return;
  }
  int count = 1;
  if (count_text) {
    try {
      count = node["count"].as<int>();
    } catch (const YAML::Exception&) {
      count = -1;
    }
    if (count < 1 || count > kMaxGpusPerEntry) {
      diag.Add(node["count"], internal::Child(path, "count"),
               fmt::format("GPU count must be an integer from 1 to {}", kMaxGpusPerEntry));
      return;
    }
  }
  if (uuid && count != 1) {
    diag.Add(node["uuid"], internal::Child(path, "uuid"), "uuid is allowed only with count 1");
    return;
  }
  model::GpuSharing sharing = model::GpuSharing::kExclusive;
  if (sharing_text) {
    auto parsed = model::ParseGpuSharing(*sharing_text);
    if (!parsed) {
      diag.Add(node["sharing"], internal::Child(path, "sharing"),
               fmt::format("unknown GPU sharing mode '{}' (expected {})", *sharing_text,
                           model::kGpuSharingNames.AlternativeList()));
      return;
    }
    sharing = *parsed;
  }
  std::vector<model::MigSlots> mig;
  if (YAML::Node layout = node["mig"]; layout && !layout.IsNull()) {
    if (sharing != model::GpuSharing::kMig) {
      diag.Add(KeyMark(node, "mig"), internal::Child(path, "mig"),
               "a MIG layout ('mig') needs sharing: mig");
      return;
    }
    auto parsed = ParseMigLayout(layout, internal::Child(path, "mig"), diag);
    if (!parsed) return;
    mig = std::move(*parsed);
  } else if (sharing == model::GpuSharing::kMig) {
    diag.Add(node["sharing"], internal::Child(path, "sharing"),
             "a GPU with sharing: mig needs its MIG layout, e.g. mig: {3g.40gb: 2, 1g.10gb: 1}");
    return;
  }
  for (int i = 0; i < count; ++i) {
    model::Gpu gpu;
    gpu.index = static_cast<int>(gpus.size());
    gpu.model = *model;
    gpu.memory_bytes = memory_bytes;
    gpu.topology_group = group.value_or("");
    gpu.uuid = uuid.value_or("");
    gpu.sharing = sharing;
    gpu.mig = mig;
    gpus.push_back(std::move(gpu));
  }
}

std::optional<model::Node> ParseNode(const YAML::Node& node, const std::string& path,
                                     Diagnostics& diag) {
  if (!node.IsMap()) {
    diag.Add(node, path, "a node is a map with name, cpu, memory, ...");
    return std::nullopt;
  }
  std::size_t errors = diag.size();
  CheckKeys(node, path, {"name", "address", "labels", "taints", "cpu", "memory", "gpus"}, "node",
            diag);
  model::Node result;
  if (auto name = ScalarField(node, path, "name", true, diag)) {
    if (name->empty()) {
      diag.Add(node["name"], internal::Child(path, "name"), "node name is empty");
    } else if (!IsValidNodeName(*name)) {
      diag.Add(node["name"], internal::Child(path, "name"), InvalidNodeNameMessage(*name));
    } else {
      result.name = NodeId(*name);
    }
  }
  if (auto address = ScalarField(node, path, "address", false, diag)) result.address = *address;
  if (auto cpu = ScalarField(node, path, "cpu", true, diag)) {
    auto millis = ParseCpuMillis(*cpu);
    if (!millis) {
      diag.Add(node["cpu"], internal::Child(path, "cpu"),
               fmt::format("cpu '{}': {}", *cpu, millis.error().message));
    } else {
      result.cpu_millis = *millis;
    }
  }
  if (auto memory = ScalarField(node, path, "memory", true, diag)) {
    auto bytes = ParseBytes(*memory);
    if (!bytes) {
      diag.Add(node["memory"], internal::Child(path, "memory"),
               fmt::format("memory '{}': {}", *memory, bytes.error().message));
    } else {
      result.memory_bytes = *bytes;
    }
  }
  if (YAML::Node labels = node["labels"]; labels && !labels.IsNull()) {
    if (!labels.IsMap()) {
      diag.Add(labels, internal::Child(path, "labels"), "labels must be a map of names to values");
    } else {
      for (const auto& item : labels) {
        if (!item.first.IsScalar() || !(item.second.IsScalar() || item.second.IsNull())) {
          diag.Add(item.first, path, "label names and values must be single values");
          continue;
        }
        result.labels[item.first.Scalar()] = item.second.IsNull() ? "" : item.second.Scalar();
      }
    }
  }
  if (YAML::Node taints = node["taints"]; taints && !taints.IsNull()) {
    if (!taints.IsSequence()) {
      diag.Add(taints, internal::Child(path, "taints"), "taints must be a list");
    } else {
      std::size_t taint_index = 0;
      for (const auto& item : taints) {
        if (auto taint = ParseTaint(
                item, internal::Index(internal::Child(path, "taints"), taint_index++), diag))
          result.taints.push_back(std::move(*taint));
      }
    }
  }
  if (YAML::Node gpus = node["gpus"]; gpus && !gpus.IsNull()) {
    if (gpus.IsScalar()) {
      auto declared = ParseGpuDeclaration(gpus.Scalar());
      if (!declared) {
        diag.Add(gpus, internal::Child(path, "gpus"), declared.error().message);
      } else {
        result.gpus = std::move(*declared);
        for (model::Gpu& gpu : result.gpus) gpu.uuid.clear();
      }
    } else if (gpus.IsSequence()) {
      std::size_t i = 0;
      for (const auto& item : gpus) {
        ParseGpuListEntry(item, internal::Index(internal::Child(path, "gpus"), i++), result.gpus,
                          diag);
      }
    } else {
      diag.Add(gpus, internal::Child(path, "gpus"),
               "gpus is a declaration such as \"8xH100-80GB\" or a list of GPUs");
    }
  }
  for (model::Gpu& gpu : result.gpus) {
    if (gpu.uuid.empty()) {
      gpu.uuid = fmt::format("GPU-declared-{}-{}", result.name.value(), gpu.index);
    }
  }
  if (diag.size() != errors) return std::nullopt;
  return result;
}

// Whether `text` holds a byte outside printable ASCII other than UTF-8 (a control character).
bool HasControlCharacter(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

// CheckNode's GPU rules, reported through `add` (field, message).
template <typename Add>
void CheckGpus(const std::vector<model::Gpu>& gpus, Add add) {
  if (gpus.size() > static_cast<std::size_t>(kMaxGpusPerEntry)) {
    add("gpus", fmt::format("at most {} GPUs, got {}", kMaxGpusPerEntry, gpus.size()));
    return;
  }
  std::set<int> indexes;
  std::set<std::string> uuids;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const model::Gpu& gpu = gpus[i];
    const std::string path = internal::Index("gpus", i);
    if (gpu.index < 0 || !indexes.insert(gpu.index).second) {
      add(internal::Child(path, "index"),
          fmt::format("GPU index {} is negative or repeated", gpu.index));
    }
    if (gpu.model.empty() || HasControlCharacter(gpu.model)) {
      add(internal::Child(path, "model"),
          fmt::format("GPU model '{}' is empty or holds a control character",
                      EscapeForMessage(gpu.model)));
    }
    if (gpu.memory_bytes <= 0 || gpu.memory_bytes > kMaxNodeMemoryBytes) {
      add(internal::Child(path, "memory_bytes"),
          fmt::format("GPU memory must be from 1 to {} bytes, got {}", kMaxNodeMemoryBytes,
                      gpu.memory_bytes));
    }
    if (HasControlCharacter(gpu.uuid) || HasControlCharacter(gpu.topology_group)) {
      add(path, "uuid and topology_group must not hold control characters");
    } else if (!gpu.uuid.empty() && !uuids.insert(gpu.uuid).second) {
      add(internal::Child(path, "uuid"), fmt::format("duplicate GPU uuid '{}'", gpu.uuid));
    }
    if ((gpu.sharing == model::GpuSharing::kMig) != !gpu.mig.empty()) {
      add(internal::Child(path, "mig"), "a MIG layout is given exactly when sharing is mig");
    } else if (auto layout = gpu.mig.empty() ? OkStatus() : model::CheckMigLayout(gpu.mig);
               !layout) {
      add(internal::Child(path, "mig"), layout.error().message);
    }
  }
}

}  // namespace

bool IsValidNodeName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

std::string InvalidNodeNameMessage(std::string_view name) {
  return fmt::format(
      "invalid node name '{}': use 1 to 253 letters, digits, '.', '_' or '-', starting with a "
      "letter or digit",
      EscapeForMessage(name));
}

Status CheckNode(const model::Node& node, std::string_view what) {
  std::vector<std::string> details;
  auto add = [&](const std::string& field, const std::string& message) {
    details.push_back(fmt::format("{}: {}: {}", what, field, message));
  };
  if (node.name.value().empty()) {
    add("name", "node name is empty");
  } else if (!IsValidNodeName(node.name.value())) {
    add("name", InvalidNodeNameMessage(node.name.value()));
  }
  const std::string& address = node.address;
  if (address.empty() || address.size() > 253 ||
      std::any_of(address.begin(), address.end(),
                  [](char c) { return std::isgraph(static_cast<unsigned char>(c)) == 0; })) {
    add("address", fmt::format("invalid address '{}': use 1 to 253 printable characters "
                               "without spaces",
                               EscapeForMessage(address)));
  }
  if (node.cpu_millis < 0 || node.cpu_millis > kMaxNodeCpuMillis) {
    add("cpu_millis",
        fmt::format("must be from 0 to {}, got {}", kMaxNodeCpuMillis, node.cpu_millis));
  }
  if (node.memory_bytes < 0 || node.memory_bytes > kMaxNodeMemoryBytes) {
    add("memory_bytes",
        fmt::format("must be from 0 to {}, got {}", kMaxNodeMemoryBytes, node.memory_bytes));
  }
  for (const auto& [key, value] : node.labels) {
    if (key.empty() || HasControlCharacter(key) || HasControlCharacter(value)) {
      add(internal::Child("labels", EscapeForMessage(key)),
          "a label's name must not be empty, and neither name nor value may hold a control "
          "character");
    }
  }
  for (std::size_t i = 0; i < node.taints.size(); ++i) {
    const model::Taint& taint = node.taints[i];
    if (taint.key.empty() || HasControlCharacter(taint.key) || HasControlCharacter(taint.value)) {
      add(internal::Index("taints", i),
          "a taint's key must not be empty, and neither key nor value may hold a control "
          "character");
    }
  }
  CheckGpus(node.gpus, add);
  if (details.empty()) return OkStatus();
  std::string message =
      fmt::format("{} error{} in {}", details.size(), details.size() == 1 ? "" : "s", what);
  return MakeError(ErrorCode::kInvalidArgument, std::move(message), std::move(details));
}

Result<std::vector<model::Node>> ParseNodeFile(std::string_view text, std::string_view file_name) {
  internal::Sink sink{std::string(file_name)};
  Diagnostics diag(sink);
  auto error = [&] { return DiagnosticsError(sink.TakeSorted(), std::string(file_name)); };
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    diag.Add(e.mark, "", e.msg);
    return error();
  } catch (const std::exception& e) {
    diag.Add(YAML::Mark::null_mark(), "", e.what());
    return error();
  }
  std::vector<model::Node> nodes;
  try {
    if (!root.IsMap()) {
      diag.Add(root, "", "a node file is a map with the key 'nodes'");
      return error();
    }
    CheckKeys(root, "", {"nodes"}, "top-level", diag);
    const YAML::Node& const_root = root;
    YAML::Node list = const_root["nodes"];
    if (!list) {
      diag.Add(root, "nodes", "missing 'nodes'");
    } else if (list.IsNull()) {
      // An empty inventory is allowed.
    } else if (!list.IsSequence()) {
      diag.Add(list, "nodes", "'nodes' must be a list");
    } else {
      std::set<std::string> names;
      std::size_t i = 0;
      for (const auto& item : list) {
        const std::string path = internal::Index("nodes", i++);
        auto node = ParseNode(item, path, diag);
        // Names of invalid nodes count too, so that one error does not hide another.
        std::string name;
        if (node) {
          name = node->name.value();
        } else if (item.IsMap() && item["name"] && item["name"].IsScalar()) {
          name = item["name"].Scalar();
        }
        if (!name.empty() && !names.insert(name).second) {
          diag.Add(KeyMark(item, "name"), internal::Child(path, "name"),
                   fmt::format("duplicate node name '{}'", name));
          continue;
        }
        if (node) nodes.push_back(std::move(*node));
      }
    }
  } catch (const YAML::Exception& e) {
    diag.Add(e.mark, "", e.msg);
  }
  if (diag.size() > 0) return error();
  return nodes;
}

}  // namespace drover::spec
