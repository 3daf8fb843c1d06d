#include "tests/support/paths.h"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#ifndef HOTROW_SOURCE_DIR
#error "HOTROW_SOURCE_DIR must name the repository's top directory"
#endif

namespace hotrow::testing {

std::string SourceDir() { return HOTROW_SOURCE_DIR; }

std::string SiblingExecutable(const std::string& name) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot read /proc/self/exe: " + ec.message());
  std::string path = (self.parent_path() / name).string();
  if (access(path.c_str(), X_OK) != 0) throw std::runtime_error("no executable " + path);
  return path;
}

}  // namespace hotrow::testing
