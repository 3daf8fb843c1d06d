// Fuzz target: the config loader (config/config.h LoadConfig) reading a YAML file.
//
// Input: the file's bytes. LoadConfig takes a path, so the bytes go into an in-memory file
// (memfd) read through /proc/self/fd: nothing touches the disk, and nothing is left behind when
// libFuzzer stops the process. Properties: tests/fuzz/config_properties.h.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/config.h"
#include "tests/fuzz/config_properties.h"

namespace {

// The in-memory file every input is written to, created on first use.
int ConfigFd() {
  static const int fd = [] {
    const int created = memfd_create("hotrow-fuzz-config.yaml", 0);
    if (created < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    return created;
  }();
  return fd;
}

void WriteWhole(int fd, const uint8_t* data, size_t size) {
  if (ftruncate(fd, 0) != 0) std::abort();
  size_t written = 0;
  while (written < size) {
    const ssize_t n = pwrite(fd, data + written, size - written, static_cast<off_t>(written));
    if (n <= 0) std::abort();
    written += static_cast<size_t>(n);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = ConfigFd();
  WriteWhole(fd, data, size);
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  hotrow::fuzz::CheckLoadResult(hotrow::config::LoadConfig(path, {}));
  return 0;
}
