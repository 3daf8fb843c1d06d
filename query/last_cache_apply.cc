// The last-N cache's written rows applied off the writer's thread (query/last_cache.h, "Applied
// off the writer's thread"): the queue, the cache's thread, and the catch-up every read makes.

#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "common/thread_priority.h"
#include "query/last_cache.h"

namespace hotrow::query {

void LastCache::Enqueue(std::span<const store::WrittenRow> rows) {
  if (rows.empty()) return;
  // Copied here, on the writer's thread, grouped by shard (a counting sort, which keeps the rows'
  // order within a shard): the rows' views live only during the Write.
  std::shared_ptr<QueuedWrite> write;
  {
    std::lock_guard lock(queue_mu_);
    if (!spare_.empty()) {
      write = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  if (write == nullptr) write = std::make_shared<QueuedWrite>();
  const uint64_t mask = shard_count_ - 1;
  write->starts.assign(shard_count_ + 1, 0);
  size_t value_bytes = 0;
  for (const store::WrittenRow& row : rows) {
    ++write->starts[(row.key.id_hash & mask) + 1];
    value_bytes += row.value.size();
  }
  for (size_t s = 0; s < shard_count_; ++s) write->starts[s + 1] += write->starts[s];
  if (write->values_capacity < value_bytes || write->values == nullptr) {
    write->values_capacity = std::max<size_t>(value_bytes, 1);
    write->values = std::make_unique_for_overwrite<char[]>(write->values_capacity);
  }
  write->row_count = rows.size();
  if (write->rows.size() < rows.size()) write->rows.resize(rows.size());
  std::vector<uint32_t> next(write->starts.begin(), write->starts.end() - 1);
  char* values = write->values.get();
  for (const store::WrittenRow& row : rows) {
    store::WrittenRow& copy = write->rows[next[row.key.id_hash & mask]++];
    copy.key = row.key;
    if (!row.value.empty()) std::memcpy(values, row.value.data(), row.value.size());
    copy.value = std::string_view(values, row.value.size());
    values += row.value.size();
  }
  {
    std::unique_lock lock(queue_mu_);
    // Bounded: a Write waits for the thread rather than let the queue grow without end.
    done_cv_.wait(lock, [&] {
      return stop_ || queue_.empty() || queued_rows_ + rows.size() <= options_.max_queued_rows;
    });
    write->seq = queued_seq_.load(std::memory_order_relaxed) + 1;
    queued_rows_ += rows.size();
    queue_.push_back(std::move(write));
    // Published once the Write is on the queue: a read that sees this sequence finds it there.
    queued_seq_.store(queue_.back()->seq, std::memory_order_release);
  }
  queue_cv_.notify_one();
}

namespace {

// Queued Writes kept for reuse.
constexpr size_t kSpareWrites = 4;

// The calling thread's CPU time.
uint64_t ThreadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

uint64_t ThreadPageFaults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<uint64_t>(usage.ru_minflt + usage.ru_majflt);
}

}  // namespace

void LastCache::ApplyLoop() {
  pthread_setname_np(pthread_self(), "hotrow-cache");
  // A batch thread: its wake-up does not preempt the writer that queued the rows (on a busy
  // machine the writer lost its CPU to the thread at every Write).
  RunAsBatchThread();
  for (;;) {
    std::shared_ptr<const QueuedWrite> write;
    {
      std::unique_lock lock(queue_mu_);
      queue_cv_.wait(lock, [&] { return stop_ || (!queue_.empty() && !paused_); });
      if (stop_) return;
      write = queue_.front();
    }
    const uint64_t cpu_start = ThreadCpuNs();
    uint64_t added = 0;
    for (size_t s = 0; s < shard_count_; ++s) {
      const uint32_t begin = write->starts[s], end = write->starts[s + 1];
      if (begin == end) continue;
      Shard& shard = *shards_[s];
      std::lock_guard lock(shard.mu);
      // Every earlier Write is in the shard (done_seq_ or a read's catch-up): only this one is
      // left, unless a read added it already.
      if (shard.applied_seq >= write->seq) continue;
      AddToShardLocked(shard, write->rows, nullptr, begin, end, false);
      shard.applied_seq = write->seq;
      added += end - begin;
    }
    applied_by_thread_.fetch_add(added, std::memory_order_relaxed);
    apply_page_faults_.store(ThreadPageFaults(), std::memory_order_relaxed);
    apply_ns_.fetch_add(ThreadCpuNs() - cpu_start, std::memory_order_relaxed);
    {
      std::lock_guard lock(queue_mu_);
      queued_rows_ -= write->row_count;
      queue_.pop_front();
      // Every shard holds this Write now: it leaves the queue, and no read needs it again.
      done_seq_.store(write->seq, std::memory_order_release);
      // Reused unless a read took it (that read may still be reading it).
      if (!write->lent && spare_.size() < kSpareWrites) {
        spare_.push_back(std::const_pointer_cast<QueuedWrite>(std::move(write)));
      }
    }
    done_cv_.notify_all();
  }
}

void LastCache::CatchUpLocked(Shard& shard, uint64_t upto) {
  const uint64_t held = std::max(shard.applied_seq, done_seq_.load(std::memory_order_acquire));
  if (upto <= held) return;  // the common case: the thread is ahead of the reads
  // The Writes after `held` up to `upto` are still queued: a Write leaves the queue only once
  // every shard holds it (done_seq_), and `upto` was published once its Write was queued.
  std::vector<std::shared_ptr<const QueuedWrite>> lacking;
  {
    std::lock_guard lock(queue_mu_);
    for (const std::shared_ptr<const QueuedWrite>& write : queue_) {
      if (write->seq > upto) break;
      if (write->seq > shard.applied_seq) {
        write->lent = true;
        lacking.push_back(write);
      }
    }
  }
  uint64_t added = 0;
  for (const std::shared_ptr<const QueuedWrite>& write : lacking) {
    const uint32_t begin = write->starts[shard.index], end = write->starts[shard.index + 1];
    if (begin != end) AddToShardLocked(shard, write->rows, nullptr, begin, end, false);
    added += end - begin;
    shard.applied_seq = write->seq;
  }
  if (upto > shard.applied_seq) shard.applied_seq = upto;
  applied_by_readers_.fetch_add(added, std::memory_order_relaxed);
}

void LastCache::CatchUpAll() {
  const uint64_t queued = QueuedSeq();
  for (size_t s = 0; s < shard_count_; ++s) {
    std::lock_guard lock(shards_[s]->mu);
    CatchUpLocked(*shards_[s], queued);
  }
}

uint64_t LastCache::evicted() {
  CatchUpAll();
  return evicted_.load(std::memory_order_relaxed);
}

void LastCache::WaitForApplied() {
  const uint64_t queued = QueuedSeq();
  std::unique_lock lock(queue_mu_);
  done_cv_.wait(lock, [&] {
    return stop_ || !apply_thread_.joinable() ||
           done_seq_.load(std::memory_order_relaxed) >= queued;
  });
}

void LastCache::PauseApplyForTest(bool paused) {
  {
    std::lock_guard lock(queue_mu_);
    paused_ = paused;
  }
  queue_cv_.notify_all();
}

}  // namespace hotrow::query
