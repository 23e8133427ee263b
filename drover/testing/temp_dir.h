#pragma once

// TempDir: a fresh directory for a test, removed with everything in it on destruction.

#include <string>

namespace drover::testing {

// Creates `$TMPDIR/PREFIX-XXXXXX` (mkdtemp); aborts with a message if it cannot (a test has no
// sensible way on without it). Not copyable; path() is stable for its lifetime.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "drover-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace drover::testing
