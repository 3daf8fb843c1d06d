#pragma once

// Where a test finds the repository's files and the programs built beside it. Kept out of the
// test files' compile definitions: an absolute path there differs in every clone and makes the
// test's translation unit (a whole unity batch of tests) miss the compiler cache.

#include <string>

namespace hotrow::testing {

// The repository's top directory (configs/, http/, ...).
std::string SourceDir();

// The executable `name` built in the same directory as the running test executable (a test's
// own child program, such as tests/store/crash_writer beside the store's test executables).
std::string SiblingExecutable(const std::string& name);

}  // namespace hotrow::testing
