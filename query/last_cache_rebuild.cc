#include "query/last_cache_rebuild.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <vector>

#include "keying/row_key.h"

namespace hotrow::query {
namespace {

// Rows handed to the cache at once: each shard's lock is taken once per batch.
constexpr size_t kBatchRows = 4096;

}  // namespace

LastCacheRebuild::LastCacheRebuild(store::EventStore* store, LastCache* cache)
    : store_(store), cache_(cache) {
  // spdlog's registry is made on first use; made here, before the thread that logs starts, it is
  // not made while another thread reads it (TSan saw that race in libspdlog, which it does not
  // instrument).
  spdlog::default_logger_raw();
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hotrow-lastcache");
    Run();
  });
}

LastCacheRebuild::~LastCacheRebuild() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

RebuildProgress LastCacheRebuild::progress() const {
  RebuildProgress p;
  p.buckets_done = buckets_done_.load();
  p.buckets_total = buckets_total_.load();
  p.rows = rows_.load();
  std::lock_guard lock(mu_);
  p.running = running_;
  p.whole = whole_;
  const auto until = running_ ? std::chrono::steady_clock::now() : end_;
  p.seconds = std::chrono::duration<double>(until - start_).count();
  return p;
}

void LastCacheRebuild::Wait() {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [this] { return !running_; });
}

void LastCacheRebuild::Run() {
  // Listed after the cache became a write observer: a bucket made later holds only rows the cache
  // was told of.
  std::vector<std::shared_ptr<const store::Bucket>> buckets = store_->Buckets();
  const int64_t window_start = store_->WindowStartMs();
  std::erase_if(buckets, [&](const auto& b) { return b->end_ms() <= window_start; });
  buckets_total_.store(buckets.size());
  const uint64_t evicted_before = cache_->evicted();
  bool whole = true;
  for (auto it = buckets.rbegin(); it != buckets.rend(); ++it) {
    if (!ReadBucket(**it, window_start) || cache_->evicted() != evicted_before) {
      whole = false;
      break;
    }
    cache_->SetKnownFrom((*it)->start_ms());
    buckets_done_.fetch_add(1);
  }
  // Every row of the window was offered: those of the buckets read from the window's start on,
  // and those of buckets made since, which the cache was told of as they were written.
  if (whole) cache_->SetKnownFrom(window_start);
  const RebuildProgress p = progress();
  spdlog::info("query: last-N cache rebuilt from {} of {} bucket(s), {} rows in {:.2f} s{}",
               p.buckets_done, p.buckets_total, p.rows, p.seconds,
               whole ? ""
                     : (stop_.load() ? " (stopped)"
                                     : " (stopped early: the cache is full or a read failed)"));
  std::lock_guard lock(mu_);
  running_ = false;
  whole_ = whole;
  end_ = std::chrono::steady_clock::now();
  done_cv_.notify_all();
}

bool LastCacheRebuild::ReadBucket(const store::Bucket& bucket, int64_t window_start_ms) {
  std::vector<store::WrittenRow> rows;
  rows.reserve(kBatchRows);
  std::string values;  // the batch's values, back to back; `rows` points into it once full
  std::vector<size_t> ends;
  auto flush = [&] {
    size_t begin = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      rows[i].value = std::string_view(values).substr(begin, ends[i] - begin);
      begin = ends[i];
    }
    cache_->RebuildRows(rows);
    rows_.fetch_add(rows.size(), std::memory_order_relaxed);
    rows.clear();
    values.clear();
    ends.clear();
  };
  const int salts = store_->salter().salts();
  for (int salt = 0; salt < salts; ++salt) {
    auto it = bucket.NewIterator(keying::SaltKeyRange(static_cast<uint8_t>(salt)), false);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      keying::RowKey key;
      if (!keying::DecodeRowKey(it->key(), &key)) continue;  // an index row
      if (key.ts_ms < window_start_ms) continue;
      values.append(it->value());
      ends.push_back(values.size());
      rows.push_back({key, {}});
      if (rows.size() == kBatchRows) {
        flush();
        if (stop_.load(std::memory_order_relaxed)) return false;
      }
    }
    if (Status st = it->status(); !st.ok()) {
      spdlog::warn("query: the last-N cache's rebuild could not read bucket {}: {}",
                   bucket.start_ms(), st.ToString());
      return false;
    }
  }
  flush();
  return !stop_.load();
}

}  // namespace hotrow::query
