#pragma once

#include <string>

namespace hotrow::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The whole content of a file; empty when it cannot be read (tests print it as diagnostics).
std::string ReadFile(const std::string& path);
// Replaces the file's content with `text` (byte for byte).
void WriteFile(const std::string& path, const std::string& text);

}  // namespace hotrow::testing
