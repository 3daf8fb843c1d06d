#include "common/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "common/clock.h"

namespace hotrow {
namespace {

// The `%*` of the journal's pattern: the line's syslog priority, "<4>" (sd-daemon(3)).
class SyslogPriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const char* prefix = "<6>";
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug:
        prefix = "<7>";
        break;
      case spdlog::level::info:
        prefix = "<6>";
        break;
      case spdlog::level::warn:
        prefix = "<4>";
        break;
      case spdlog::level::err:
        prefix = "<3>";
        break;
      case spdlog::level::critical:
        prefix = "<2>";
        break;
      default:
        break;
    }
    dest.append(prefix, prefix + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SyslogPriorityFlag>();
  }
};

}  // namespace

bool IsJournalStream(int fd) {
  const char* env = std::getenv("JOURNAL_STREAM");
  if (env == nullptr) return false;
  uintmax_t device = 0;
  uintmax_t inode = 0;
  char tail = 0;
  if (std::sscanf(env, "%" SCNuMAX ":%" SCNuMAX "%c", &device, &inode, &tail) != 2) return false;
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  return static_cast<uintmax_t>(st.st_dev) == device && static_cast<uintmax_t>(st.st_ino) == inode;
}

void InitLogging(std::string_view level) {
  std::shared_ptr<spdlog::logger> logger = spdlog::get("hotrow");
  if (logger == nullptr) {
    logger = spdlog::stderr_color_mt("hotrow");
    if (IsJournalStream(2)) {
      auto formatter = std::make_unique<spdlog::pattern_formatter>();
      formatter->add_flag<SyslogPriorityFlag>('*').set_pattern("%*%l [%t] %v");
      logger->set_formatter(std::move(formatter));
    } else {
      logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%t] %v");
    }
  }
  spdlog::set_default_logger(logger);
  spdlog::level::level_enum lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") lvl = spdlog::level::info;
  spdlog::set_level(lvl);
  spdlog::flush_on(spdlog::level::warn);
}

bool RateLimiter::Allow(uint64_t* suppressed) {
  const int64_t now = WallClock::Default()->NowMs();
  int64_t start = window_start_ms_.load(std::memory_order_relaxed);
  if (now - start >= interval_ms_ &&
      window_start_ms_.compare_exchange_strong(start, now, std::memory_order_relaxed)) {
    in_window_.store(0, std::memory_order_relaxed);
  }
  if (in_window_.fetch_add(1, std::memory_order_relaxed) < per_interval_) {
    *suppressed = suppressed_.exchange(0, std::memory_order_relaxed);
    return true;
  }
  suppressed_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

}  // namespace hotrow
