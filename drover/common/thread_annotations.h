#pragma once

// Clang's thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html) and
// Mutex/MutexLock, the annotated mutex they are checked against (libstdc++'s std::mutex carries
// no annotations, so clang cannot see what it guards). Under clang with -Wthread-safety (`make
// thread-safety`) a guarded member touched without its mutex, or a REQUIRES function called
// without it, is a compile error; under GCC the macros expand to nothing.
//
// Use: a member `int count_ GUARDED_BY(mu_);` beside `Mutex mu_;`; a private helper that expects
// the lock `void BumpLocked() REQUIRES(mu_);`; a public method that takes it `EXCLUDES(mu_)`;
// `MutexLock lock(mu_);` in a scope. Wait on a `std::condition_variable_any` with the MutexLock;
// its predicate reads guarded members, so it is annotated too: `[this]() REQUIRES(mu_) {...}`.

#include <mutex>

#if defined(__clang__)
#define DROVER_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define DROVER_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) DROVER_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY DROVER_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) DROVER_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) DROVER_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) DROVER_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) DROVER_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) DROVER_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) DROVER_THREAD_ANNOTATION(release_capability(__VA_ARGS__))

namespace drover {

// A std::mutex that clang's analysis knows as a capability. Not recursive.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` from construction to destruction. Also BasicLockable (lock/unlock, the names the
// standard requires) so that a std::condition_variable_any can release and retake it while it
// waits, and so that a scope can let go of the mutex for a stretch of work without it.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }
  void unlock() RELEASE() {
    held_ = false;
    mu_.Unlock();
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

}  // namespace drover
