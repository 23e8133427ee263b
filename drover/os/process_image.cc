// Replacing this process's image in place (process_image.h).

#include "drover/os/process_image.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <system_error>

namespace drover::os {

int ReplaceProcessImage(const std::string& path, const std::vector<std::string>& argv) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {  // before Linux 5.11
    std::error_code error;
    for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end;
         it.increment(error)) {
      const int fd = std::atoi(it->path().filename().c_str());
      if (fd > 2) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
  sigset_t none;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);
  std::set_terminate([] {
    for (;;) ::pause();  // the exec ends this thread (or the caller exits, the exec failed)
  });
  ::execv(path.c_str(), args.data());
  return errno;
}

}  // namespace drover::os
