#include "drover/testing/threads.h"

#include <dirent.h>

namespace drover::testing {

int CountThreads() {
  int count = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* entry = ::readdir(dir)) count += entry->d_name[0] != '.';
    ::closedir(dir);
  }
  return count;
}

}  // namespace drover::testing
