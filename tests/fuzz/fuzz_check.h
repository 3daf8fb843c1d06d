#pragma once

#include <cstdio>
#include <cstdlib>

// A property every input must keep. Unlike assert it holds under NDEBUG (fuzz builds are
// optimised), and it aborts, so that libFuzzer saves the input as a crash and a replay test fails.
#define FUZZ_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)
