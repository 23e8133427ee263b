#pragma once

// Test helpers for the store tests. Test-only, header-only.

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include "drover/model/job.h"

namespace drover::store {

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "drover-store-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

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

}  // namespace drover::store
