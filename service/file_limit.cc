#include "service/file_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace hotrow::service {

uint64_t FilesNeeded(const config::Config& config) {
  return static_cast<uint64_t>(config.http.max_connections) + kReservedFiles;
}

Status FitFileLimit(const config::Config& config, bool raise) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return Status::IOError(std::string("cannot read the open-file limit: ") + std::strerror(errno));
  }
  if (raise && limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  const uint64_t can = raise ? limit.rlim_cur : limit.rlim_max;
  const uint64_t need = FilesNeeded(config);
  if (limit.rlim_max != RLIM_INFINITY && need > can) {
    return Status::InvalidArgument(
        "http.max_connections: " + std::to_string(config.http.max_connections) +
        " connections and " + std::to_string(kReservedFiles) +
        " files for the store, Kafka and the peers need " + std::to_string(need) +
        " open files, over this process's limit of " + std::to_string(can) +
        " (ulimit -n; LimitNOFILE= in a systemd unit); lower http.max_connections or raise the "
        "limit");
  }
  return Status::Ok();
}

}  // namespace hotrow::service
