#include "ingest/schema_fetcher.h"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

namespace hotrow::ingest {
namespace {

int64_t FetchClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What is asked: a schema id, or a subject's version; each with or without ?format=serialized.
struct Ask {
  bool by_id = true;
  uint32_t id = 0;
  std::string subject;
  int version = 0;
  bool serialized = false;

  bool operator<(const Ask& o) const {
    return std::tie(by_id, id, subject, version, serialized) <
           std::tie(o.by_id, o.id, o.subject, o.version, o.serialized);
  }
  std::string What() const {
    return by_id ? "schema id " + std::to_string(id)
                 : "subject " + subject + " version " + std::to_string(version);
  }
};

class BackgroundFetcher final : public SchemaSource {
 public:
  BackgroundFetcher(std::unique_ptr<SchemaSource> source, std::shared_ptr<SchemaFetchStats> stats,
                    SchemaFetcherOptions options)
      : source_(std::move(source)),
        stats_(stats != nullptr ? std::move(stats) : std::make_shared<SchemaFetchStats>()),
        options_(options) {}

  ~BackgroundFetcher() override {
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    if (thread_.joinable()) {
      // Interrupted again until the thread is out: an Interrupt that lands between the thread
      // taking a fetch and its request opening a connection ends nothing.
      while (!exited_) {
        source_->Interrupt();
        done_cv_.wait_for(lock, std::chrono::milliseconds(50));
      }
      lock.unlock();
      thread_.join();
      lock.lock();
    }
    stats_->waiting.fetch_sub(asked_ms_.size(), std::memory_order_relaxed);
  }

  Result<RegistrySchema> ById(uint32_t id, bool serialized) override {
    Ask ask;
    ask.id = id;
    ask.serialized = serialized;
    return Lookup(ask);
  }

  Result<RegistrySchema> BySubjectVersion(const std::string& subject, int version,
                                          bool serialized) override {
    Ask ask;
    ask.by_id = false;
    ask.subject = subject;
    ask.version = version;
    ask.serialized = serialized;
    return Lookup(ask);
  }

  void Interrupt() override { source_->Interrupt(); }

 private:
  struct Answer {
    Result<RegistrySchema> result;
    int64_t until_ms;  // a failure's; INT64_MAX for a schema
  };

  Result<RegistrySchema> Lookup(const Ask& ask) {
    std::unique_lock<std::mutex> lock(mu_);
    if (std::optional<Result<RegistrySchema>> known = Known(ask)) return std::move(*known);
    const int64_t now = FetchClockMs();
    auto asked = asked_ms_.find(ask);
    // Copied, not read through `asked` later: the wait below lets the fetcher erase the entry.
    const int64_t asked_at_ms = asked != asked_ms_.end() ? asked->second : now;
    if (asked == asked_ms_.end()) {
      if (asked_ms_.size() >= kMaxQueuedFetches) {
        return Status::Busy("the schema registry has " + std::to_string(asked_ms_.size()) +
                            " requests waiting; " + ask.What() + " not asked yet");
      }
      const bool idle = asked_ms_.empty();
      asked_ms_.emplace(ask, now);
      queue_.push_back(ask);
      stats_->waiting.fetch_add(1, std::memory_order_relaxed);
      if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
      cv_.notify_all();
      if (idle && options_.inline_wait_ms > 0) {
        done_cv_.wait_for(lock, std::chrono::milliseconds(options_.inline_wait_ms),
                          [&] { return answers_.count(ask) != 0; });
        if (std::optional<Result<RegistrySchema>> known = Known(ask)) return std::move(*known);
      }
    }
    return Status::Busy("waiting for the schema registry's answer about " + ask.What() +
                        " (asked " + std::to_string(FetchClockMs() - asked_at_ms) + " ms ago)");
  }

  // The answer kept for `ask`, if any (an expired failure is forgotten). REQUIRES: mu_ held.
  std::optional<Result<RegistrySchema>> Known(const Ask& ask) {
    auto it = answers_.find(ask);
    if (it == answers_.end()) return std::nullopt;
    if (FetchClockMs() >= it->second.until_ms) {
      answers_.erase(it);
      return std::nullopt;
    }
    return it->second.result;
  }

  // Drops the failures past their hold: a stream of ids nobody asks about again must not grow the
  // memory. REQUIRES: mu_ held.
  void ForgetExpired() {
    const int64_t now = FetchClockMs();
    for (auto it = answers_.begin(); it != answers_.end();) {
      it = now >= it->second.until_ms ? answers_.erase(it) : std::next(it);
    }
  }

  void Run() {
    pthread_setname_np(pthread_self(), "hotrow-schemas");
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) {
        exited_ = true;
        done_cv_.notify_all();
        return;
      }
      const Ask ask = queue_.front();
      queue_.pop_front();
      lock.unlock();
      Result<RegistrySchema> result =
          ask.by_id ? source_->ById(ask.id, ask.serialized)
                    : source_->BySubjectVersion(ask.subject, ask.version, ask.serialized);
      lock.lock();
      const bool ok = result.ok();
      // A fetch interrupted by the stop is not the registry's failure.
      if (!ok && result.status().code() != Status::Code::kNotFound && !stopping_) {
        stats_->failures.fetch_add(1, std::memory_order_relaxed);
      }
      if (ok) {
        kept_.push_back(ask);
        while (kept_.size() > options_.max_kept) {
          answers_.erase(kept_.front());
          kept_.pop_front();
        }
      }
      const int64_t until = ok ? INT64_MAX : FetchClockMs() + options_.failure_hold_ms;
      answers_.insert_or_assign(ask, Answer{std::move(result), until});
      if (answers_.size() > 2 * options_.max_kept) ForgetExpired();
      asked_ms_.erase(ask);
      stats_->waiting.fetch_sub(1, std::memory_order_relaxed);
      stats_->completed.fetch_add(1, std::memory_order_relaxed);
      done_cv_.notify_all();
    }
  }

  // Constant after construction.
  const std::unique_ptr<SchemaSource> source_;  // used by the fetcher thread (and Interrupt)
  const std::shared_ptr<SchemaFetchStats> stats_;
  const SchemaFetcherOptions options_;

  std::mutex mu_;
  std::condition_variable cv_;       // the fetcher waits for work
  std::condition_variable done_cv_;  // a lookup waits for its answer
  std::deque<Ask> queue_;            // GUARDED_BY(mu_): not yet under way
  std::map<Ask, int64_t> asked_ms_;  // GUARDED_BY(mu_): queued or under way, since when
  std::map<Ask, Answer> answers_;    // GUARDED_BY(mu_)
  std::deque<Ask> kept_;             // GUARDED_BY(mu_): the schemas kept, oldest first
  bool stopping_ = false;            // GUARDED_BY(mu_)
  bool exited_ = false;              // GUARDED_BY(mu_): Run has returned
  std::thread thread_;               // started by the first Lookup that queues, under mu_
};

}  // namespace

std::unique_ptr<SchemaSource> FetchInBackground(std::unique_ptr<SchemaSource> source,
                                                std::shared_ptr<SchemaFetchStats> stats,
                                                SchemaFetcherOptions options) {
  return std::make_unique<BackgroundFetcher>(std::move(source), std::move(stats), options);
}

}  // namespace hotrow::ingest
