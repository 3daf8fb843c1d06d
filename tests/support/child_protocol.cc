#include "tests/support/child_protocol.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace hotrow::testing {

void SayToParent(std::string_view line) {
  std::string text(line);
  text.push_back('\n');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(kChildProtocolFd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::fprintf(stderr, "child: cannot write to the parent's fd %d: start me from a test\n",
                   kChildProtocolFd);
      std::exit(3);
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace hotrow::testing
