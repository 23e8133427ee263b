// LoadDroverJobs (loaders.h): Drover's own job trace as CSV or JSON Lines. Both formats read
// their rows into the same table of texts, one per key, and one function builds the job, so the
// two accept exactly the same values.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "drover/codec/json.h"
#include "drover/common/filesystem.h"
#include "drover/common/quantity.h"
#include "drover/model/job_spec.h"
#include "drover/sim/trace/csv.h"
#include "drover/sim/trace/load_util.h"
#include "drover/sim/trace/loaders.h"
#include "drover/spec/suggest.h"

namespace drover::sim {
namespace {

enum Key {
  kName,
  kSubmit,
  kDuration,
  kCpu,
  kMemory,
  kGpus,
  kGpuShare,
  kGpuModel,
  kWorkers,
  kMinWorkers,
  kQueue,
  kUser,
  kPriority,
  kTopology,
  kInterruptible,
  kCheckpointInterval,
  kTimeout,
  kKeyCount,
};

const std::vector<std::string>& KeyNames() {
  static const std::vector<std::string> kNames = {
      "name",     "submit_s",    "duration_s",    "cpu",
      "memory",   "gpus",        "gpu_share",     "gpu_model",
      "workers",  "min_workers", "queue",         "user",
      "priority", "topology",    "interruptible", "checkpoint_interval_s",
      "timeout_s"};
  return kNames;
}

int FindKey(std::string_view name) {
  const auto& names = KeyNames();
  auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

// "unknown column 'gpu' (did you mean 'gpus'?); the columns are name, submit_s, ...".
std::string UnknownKeyMessage(std::string_view word, std::string_view name) {
  std::string message = fmt::format("unknown {}", word);
  if (auto suggestion = spec::Suggest(name, KeyNames())) {
    message += fmt::format(" (did you mean '{}'?)", *suggestion);
  }
  message += fmt::format("; the {}s are {}", word, fmt::join(KeyNames(), ", "));
  return message;
}

// One row: the text given for each key (nullopt: not given or empty).
using Cells = std::array<std::optional<std::string_view>, kKeyCount>;

// Where a row is, for messages: "FILE:LINE: WORD 'KEY': ...".
struct Where {
  const std::string& file;
  int line;
  std::string_view word;  // "column" or "field"

  tl::unexpected<Error> Fail(Key key, std::string_view message) const {
    return InvalidArgument(
        fmt::format("{}:{}: {} '{}': {}", file, line, word, KeyNames()[key], message));
  }
};

// A whole number from `text` ("4", "4.0"); nullopt for anything else.
std::optional<std::int64_t> WholeNumber(std::string_view text) {
  Result<std::int64_t> millis = ParseCpuMillis(text);
  if (!millis || *millis % 1000 != 0) return std::nullopt;
  return *millis / 1000;
}

Result<TraceJob> BuildJob(const Cells& cells, const Where& where) {
  TraceJob job;
  model::JobSpec& spec = job.spec;
  model::Requirements& req = spec.requirements;
  auto given = [&](Key key) { return cells[key].has_value(); };
  auto text = [&](Key key) { return cells[key].value_or(std::string_view()); };

  // A quantity parsed by one of quantity.h's parsers; its message passes through.
  auto quantity = [&](Key key, auto parse) -> Result<std::int64_t> {
    Result<std::int64_t> value = parse(text(key));
    if (!value) return where.Fail(key, fmt::format("{} ('{}')", value.error().message, text(key)));
    return *value;
  };
  auto count = [&](Key key, std::int64_t min, std::int64_t max) -> Result<int> {
    std::optional<std::int64_t> n = WholeNumber(text(key));
    if (!n) return where.Fail(key, fmt::format("expected a whole number, found '{}'", text(key)));
    if (*n < min || *n > max) {
      return where.Fail(key, fmt::format("must be from {} to {}, found {}", min, max, *n));
    }
    return static_cast<int>(*n);
  };

  job.name = given(kName) ? std::string(text(kName)) : fmt::format("job-{}", where.line);
  spec.name = job.name;
  if (!given(kSubmit)) return where.Fail(kSubmit, "required: the submit time in seconds");
  if (!given(kDuration)) return where.Fail(kDuration, "required: the run time in seconds");
  DROVER_ASSIGN_OR_RETURN(job.submit, quantity(kSubmit, &ParseDuration));
  DROVER_ASSIGN_OR_RETURN(job.duration, quantity(kDuration, &ParseDuration));

  req.per_worker.cpu_millis = 1000;
  req.per_worker.memory_bytes = 1LL << 30;
  if (given(kCpu)) {
    DROVER_ASSIGN_OR_RETURN(req.per_worker.cpu_millis, quantity(kCpu, &ParseCpuMillis));
  }
  if (given(kMemory)) {
    DROVER_ASSIGN_OR_RETURN(req.per_worker.memory_bytes, quantity(kMemory, &ParseBytes));
  }
  if (given(kGpus)) {
    std::optional<std::int64_t> gpus = WholeNumber(text(kGpus));
    if (!gpus) {
      return where.Fail(kGpus, fmt::format("GPU count must be a whole number, found '{}'; for "
                                           "part of one GPU use gpu_share",
                                           text(kGpus)));
    }
    if (*gpus > 1024) {
      return where.Fail(kGpus, fmt::format("must be at most 1024 per worker, found {}", *gpus));
    }
    req.per_worker.gpus = static_cast<std::int32_t>(*gpus);
  }
  if (given(kGpuShare)) {
    DROVER_ASSIGN_OR_RETURN(const std::int64_t millis, quantity(kGpuShare, &ParseCpuMillis));
    if (millis > 999) {
      return where.Fail(kGpuShare,
                        fmt::format("must be from 1m to 999m (0.001 to 0.999) of one GPU, found "
                                    "'{}'; ask for whole GPUs with gpus",
                                    text(kGpuShare)));
    }
    if (millis > 0 && req.per_worker.gpus > 0) {
      return where.Fail(kGpuShare, fmt::format("cannot be combined with gpus ({}): a worker gets "
                                               "whole GPUs or a part of one GPU, not both",
                                               req.per_worker.gpus));
    }
    req.gpu_share_millis = static_cast<std::int32_t>(millis);
  }
  if (given(kGpuModel)) req.gpu_models = internal::SplitModels(text(kGpuModel));

  if (given(kWorkers)) {
    DROVER_ASSIGN_OR_RETURN(spec.workers, count(kWorkers, 1, 100'000));
  }
  if (given(kMinWorkers)) {
    DROVER_ASSIGN_OR_RETURN(spec.min_workers, count(kMinWorkers, 1, spec.workers));
  }

  spec.queue = given(kQueue) ? std::string(text(kQueue)) : "default";
  job.user = given(kUser) ? std::string(text(kUser)) : "default";
  spec.owner = job.user;
  if (given(kPriority)) {
    const std::string_view name = text(kPriority);
    if (!model::PriorityClassValue(name)) {
      std::string message = fmt::format("unknown priority class '{}'", name);
      if (auto suggestion = spec::Suggest(name, model::PriorityClassNames())) {
        message += fmt::format(" (did you mean '{}'?)", *suggestion);
      }
      message +=
          fmt::format("; valid classes are {}", fmt::join(model::PriorityClassNames(), ", "));
      return where.Fail(kPriority, message);
    }
    spec.priority_class = std::string(name);
  }
  if (given(kTopology)) {
    const std::string_view level = text(kTopology);
    if (level.find_first_of("= \t") != std::string_view::npos) {
      return where.Fail(kTopology, fmt::format("invalid label name '{}': write the label's name "
                                               "only (rack), without a value",
                                               level));
    }
    req.topology_level = std::string(level);
  }
  if (given(kInterruptible)) {
    const std::string_view value = text(kInterruptible);
    if (value == "true" || value == "True" || value == "TRUE") {
      spec.interruptible = true;
    } else if (value == "false" || value == "False" || value == "FALSE") {
      spec.interruptible = false;
    } else {
      return where.Fail(kInterruptible, fmt::format("expected true or false, found '{}'", value));
    }
  }
  if (given(kCheckpointInterval)) {
    DROVER_ASSIGN_OR_RETURN(job.checkpoint_interval, quantity(kCheckpointInterval, &ParseDuration));
  }
  if (given(kTimeout)) {
    DROVER_ASSIGN_OR_RETURN(const DurationMs timeout, quantity(kTimeout, &ParseDuration));
    if (timeout <= 0) return where.Fail(kTimeout, "must be greater than zero");
    spec.timeout = timeout;
  }
  return job;
}

// Adds `job` unless its name was seen before.
Status AddJob(TraceJob job, const Where& where, internal::NameSet& names,
              std::vector<TraceJob>& jobs) {
  if (auto first = names.Insert(job.name, where.line)) {
    return where.Fail(kName,
                      fmt::format("duplicate job name '{}' (first on line {})", job.name, *first));
  }
  jobs.push_back(std::move(job));
  return OkStatus();
}

Result<std::vector<TraceJob>> LoadCsv(const std::string& path) {
  DROVER_ASSIGN_OR_RETURN(CsvReader csv, CsvReader::Open(path));
  std::array<int, kKeyCount> column_of;
  column_of.fill(-1);
  for (std::size_t i = 0; i < csv.columns().size(); ++i) {
    const int key = FindKey(csv.columns()[i]);
    if (key < 0) {
      return InvalidArgument(fmt::format("{}:1: column '{}': {}", path, csv.columns()[i],
                                         UnknownKeyMessage("column", csv.columns()[i])));
    }
    column_of[static_cast<std::size_t>(key)] = static_cast<int>(i);
  }
  DROVER_RETURN_IF_ERROR(csv.Require(KeyNames()[kSubmit]));
  DROVER_RETURN_IF_ERROR(csv.Require(KeyNames()[kDuration]));

  std::vector<TraceJob> jobs;
  internal::NameSet names;
  Cells cells;
  while (true) {
    DROVER_ASSIGN_OR_RETURN(const bool more, csv.Next());
    if (!more) break;
    for (int key = 0; key < kKeyCount; ++key) {
      const std::string_view field = csv.Field(column_of[static_cast<std::size_t>(key)]);
      cells[static_cast<std::size_t>(key)] =
          field.empty() ? std::nullopt : std::optional<std::string_view>(field);
    }
    const Where where{path, csv.line(), "column"};
    DROVER_ASSIGN_OR_RETURN(TraceJob job, BuildJob(cells, where));
    DROVER_RETURN_IF_ERROR(AddJob(std::move(job), where, names, jobs));
  }
  return jobs;
}

std::string_view JsonTypeName(const nlohmann::json& value) { return value.type_name(); }

Result<std::vector<TraceJob>> LoadJsonl(const std::string& path) {
  DROVER_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path));
  std::vector<TraceJob> jobs;
  internal::NameSet names;
  std::array<std::string, kKeyCount> storage;
  Cells cells;
  std::size_t pos = 0;
  for (int line = 1; pos < text.size(); ++line) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view row(text.data() + pos, end - pos);
    pos = end + 1;
    if (std::all_of(row.begin(), row.end(), [](unsigned char c) { return std::isspace(c) != 0; })) {
      continue;
    }
    Result<nlohmann::json> parsed = codec::ParseJson(row);
    if (!parsed) {
      return InvalidArgument(fmt::format("{}:{}: {}", path, line, parsed.error().message));
    }
    if (!parsed->is_object()) {
      return InvalidArgument(fmt::format("{}:{}: expected a JSON object, found {}", path, line,
                                         JsonTypeName(*parsed)));
    }
    const Where where{path, line, "field"};
    cells.fill(std::nullopt);
    for (const auto& [name, value] : parsed->items()) {
      const int key = FindKey(name);
      if (key < 0) {
        return InvalidArgument(fmt::format("{}:{}: field '{}': {}", path, line, name,
                                           UnknownKeyMessage("field", name)));
      }
      std::string& cell = storage[static_cast<std::size_t>(key)];
      if (value.is_null()) continue;
      if (value.is_string()) {
        cell = value.get<std::string>();
      } else if (value.is_number_integer() || value.is_number_unsigned()) {
        cell = value.dump();
      } else if (value.is_number_float()) {
        cell = value.dump();  // shortest round-trip form: 0.25 -> "0.25"
      } else if (value.is_boolean()) {
        cell = value.get<bool>() ? "true" : "false";
      } else {
        return where.Fail(
            static_cast<Key>(key),
            fmt::format("expected a number or a string, found {}", JsonTypeName(value)));
      }
      if (!cell.empty()) cells[static_cast<std::size_t>(key)] = cell;
    }
    DROVER_ASSIGN_OR_RETURN(TraceJob job, BuildJob(cells, where));
    DROVER_RETURN_IF_ERROR(AddJob(std::move(job), where, names, jobs));
  }
  return jobs;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  if (text.size() < suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), text.end() - static_cast<long>(suffix.size()),
                    [](char a, char b) {
                      return std::tolower(static_cast<unsigned char>(a)) ==
                             std::tolower(static_cast<unsigned char>(b));
                    });
}

}  // namespace

Result<std::vector<TraceJob>> LoadDroverJobs(const std::string& path) {
  Result<std::vector<TraceJob>> jobs;
  if (EndsWith(path, ".csv")) {
    jobs = LoadCsv(path);
  } else if (EndsWith(path, ".jsonl")) {
    jobs = LoadJsonl(path);
  } else {
    return InvalidArgument(fmt::format(
        "{}: unknown job trace format: expected a file ending in .csv or .jsonl", path));
  }
  if (!jobs) return jobs;
  std::stable_sort(jobs->begin(), jobs->end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  return jobs;
}

}  // namespace drover::sim
