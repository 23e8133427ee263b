#include "drover/cli/job_rows.h"

#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>

namespace drover::cli {
namespace {

using nlohmann::json;

// nlohmann's SAX interface over the answer: tracks where it is by depth and the last key at each
// of the depths it reads (the root, a job, a job's metrics or position), and fills the page.
class RowReader {
 public:
  explicit RowReader(JobRowPage& page) : page_(page) {}

  const std::string& error() const { return error_; }

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t value) { return Integer(value); }
  bool number_unsigned(json::number_unsigned_t value) {
    if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return Integer(std::nullopt);
    }
    return Integer(static_cast<std::int64_t>(value));
  }
  bool number_float(json::number_float_t, const std::string&) { return Integer(std::nullopt); }
  bool string(std::string& value) {
    std::string* field = StringField();
    if (field != nullptr) {
      *field = std::move(value);
      return true;
    }
    return !IsIntegerField() || Fail("expected an integer");
  }
  bool binary(json::binary_t&) { return true; }
  bool key(std::string& key) {
    if (depth_ == 1) {
      root_key_ = std::move(key);
    } else if (InJob()) {
      job_key_ = std::move(key);
    } else if (InJobPart()) {
      part_key_ = std::move(key);
    }
    return true;
  }
  bool start_object(std::size_t) {
    if (!ScalarExpected()) return false;
    if (depth_ == 0) root_is_object_ = true;
    if (InJobs()) page_.jobs.emplace_back();
    if (InJob() && job_key_ == "position") {
      page_.jobs.back().in_queue = 0;
      page_.jobs.back().in_cluster = 0;
    }
    if (InJob()) part_key_.clear();
    return Open();
  }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) {
    if (!ScalarExpected()) return false;
    if (depth_ == 1 && root_key_ == "jobs") jobs_open_ = saw_jobs_ = true;
    return Open();
  }
  bool end_array() {
    if (depth_ == 2) jobs_open_ = false;
    return Close();
  }
  bool parse_error(std::size_t position, const std::string&, const json::exception& e) {
    error_ = fmt::format("not JSON at byte {}: {}", position, e.what());
    return false;
  }

  // After the parse: the answer had its jobs array.
  bool Complete() {
    if (!root_is_object_ || !saw_jobs_) return Fail("no \"jobs\" array");
    return true;
  }

 private:
  bool Open() {
    ++depth_;
    return true;
  }
  bool Close() {
    --depth_;
    return true;
  }
  // Directly in the jobs array, in one job object, in one of its objects.
  bool InJobs() const { return jobs_open_ && depth_ == 2; }
  bool InJob() const { return jobs_open_ && depth_ == 3; }
  bool InJobPart() const { return jobs_open_ && depth_ == 4; }

  // False (and the error set) when the next value fills a string or integer field: an object or
  // array is neither.
  bool ScalarExpected() {
    if (StringField() != nullptr) return Fail("expected a string");
    return !IsIntegerField() || Fail("expected an integer");
  }

  // The string field the next value fills, if any.
  std::string* StringField() {
    if (!InJob()) return nullptr;
    JobRow& row = page_.jobs.back();
    if (job_key_ == "name") return &row.name;
    if (job_key_ == "owner") return &row.owner;
    if (job_key_ == "queue") return &row.queue;
    if (job_key_ == "priority") return &row.priority;
    if (job_key_ == "state") return &row.state;
    if (job_key_ == "message") return &row.message;
    return nullptr;
  }
  bool IsIntegerField() const {
    if (depth_ == 1) return false;  // "next" may be anything; only an integer is a cursor
    if (InJob()) return job_key_ == "id" || job_key_ == "attempt" || job_key_ == "gpus";
    if (!InJobPart()) return false;
    if (job_key_ == "metrics") return part_key_ == "queue_wait_ms" || part_key_ == "run_time_ms";
    return job_key_ == "position" && (part_key_ == "in_queue" || part_key_ == "in_cluster");
  }

  // An integer value (unset: a number that is not one in int64's range).
  bool Integer(std::optional<std::int64_t> value) {
    if (depth_ == 1) {
      if (root_key_ == "next" && value) page_.next = *value;
      return true;
    }
    if (!IsIntegerField()) return StringField() == nullptr || Fail("expected a string");
    if (!value) return Fail("expected an integer");
    JobRow& row = page_.jobs.back();
    const bool small = *value >= 0 && *value <= std::numeric_limits<int>::max();
    const std::string& key = InJob() ? job_key_ : part_key_;
    if (key == "id") row.id = *value;
    if (key == "gpus") row.gpus = *value;
    if (key == "queue_wait_ms") row.queue_wait_ms = *value;
    if (key == "run_time_ms") row.run_time_ms = *value;
    if (key != "attempt" && key != "in_queue" && key != "in_cluster") return true;
    if (!small) return Fail("expected an integer from 0 to 2147483647");
    (key == "attempt"    ? row.attempt
     : key == "in_queue" ? *row.in_queue
                         : *row.in_cluster) = static_cast<int>(*value);
    return true;
  }

  bool Fail(std::string_view what) {
    const std::string field = InJobPart() ? job_key_ + "." + part_key_ : job_key_;
    error_ = page_.jobs.empty()
                 ? std::string(what)
                 : fmt::format("jobs[{}].{}: {}", page_.jobs.size() - 1, field, what);
    return false;
  }

  JobRowPage& page_;
  int depth_ = 0;  // objects and arrays open
  bool root_is_object_ = false;
  bool jobs_open_ = false;  // inside the root's "jobs" array
  bool saw_jobs_ = false;
  std::string root_key_;
  std::string job_key_;
  std::string part_key_;
  std::string error_;
};

}  // namespace

Result<JobRowPage> ParseJobRows(std::string_view body) {
  JobRowPage page;
  RowReader reader(page);
  if (!json::sax_parse(body, &reader) || !reader.Complete()) {
    return InvalidArgument(fmt::format("the server's job list: {}", reader.error()));
  }
  return page;
}

}  // namespace drover::cli
