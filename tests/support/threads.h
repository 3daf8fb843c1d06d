#pragma once

// This process's threads as Linux lists them (/proc/self/task), for tests of who runs what.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hotrow::testing {

// The ids of this process's threads whose name (at most 15 characters) starts with `prefix`;
// every thread with an empty prefix.
inline std::vector<int> ThreadsNamed(const std::string& prefix) {
  std::vector<int> tids;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm"), name);
    if (name.rfind(prefix, 0) == 0) tids.push_back(std::stoi(task.path().filename().string()));
  }
  return tids;
}

}  // namespace hotrow::testing
