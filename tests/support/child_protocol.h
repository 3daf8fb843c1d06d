#pragma once

// The line protocol between a test and its own child programs (tests/store/crash_writer.cc,
// tests/ingest/ingest_child.cc): lines on a pipe of their own, fd 3, read by a ChildProcess started
// with ChildLines::kProtocolFd (tests/support/process.h). Never stdout: a library in the child may
// print there at any moment (spdlog's default logger does, and RocksDB's warnings go through it).

#include <string_view>

namespace hotrow::testing {

inline constexpr int kChildProtocolFd = 3;

// Writes `line` and a newline to the parent's pipe, whole. Exits the child with code 3 when fd 3 is
// not a pipe to a parent (the program was not started by a ChildProcess in kProtocolFd mode).
void SayToParent(std::string_view line);

}  // namespace hotrow::testing
