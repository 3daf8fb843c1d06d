#include "access/token_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "access/bearer_token.h"

namespace hotrow::access {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

}  // namespace

Result<std::string> ReadTokenFile(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::InvalidArgument(key + ": cannot read " + path + ": " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::InvalidArgument(key + ": cannot read " + path);
  std::string token = text.str();
  while (!token.empty() &&
         (IsBlank(token.back()) || token.back() == '\n' || token.back() == '\r')) {
    token.pop_back();
  }
  if (token.empty()) return Status::InvalidArgument(key + ": " + path + " is empty");
  if (!IsToken68(token)) {
    return Status::InvalidArgument(
        key + ": " + path +
        " must hold one token of A-Z a-z 0-9 - . _ ~ + / (then any '='), on one line");
  }
  return token;
}

}  // namespace hotrow::access
