#pragma once

#include <string>

#include "common/status.h"

namespace hotrow::access {

// The token of a token file: its whole content with trailing spaces, tabs, CR and LF removed.
// InvalidArgument naming `path` when the file cannot be read, is empty, or holds a token that is
// not a token68 (a client could never send it); the message starts with `key`, the
// configuration key that names the file.
Result<std::string> ReadTokenFile(const std::string& path,
                                  const std::string& key = "http.token_file");

}  // namespace hotrow::access
