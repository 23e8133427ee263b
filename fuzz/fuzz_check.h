#pragma once

// FUZZ_CHECK(condition): a property a harness asserts of the code under test. When it does not
// hold, the harness prints the condition and aborts, which libFuzzer reports as a crash and
// saves the input (crash-<sha1>) for a regression test. Unlike DROVER_CHECK it is compiled into
// every build of the harnesses, whatever NDEBUG says.

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition)                                                                 \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (false)
