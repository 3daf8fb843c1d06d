#include "query/last_cache_rebuild.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <vector>

#include "keying/row_key.h"
#include "keying/row_value.h"
#include "query/salt_tasks.h"

namespace hotrow::query {
namespace {

// Rows handed to the cache at once: each shard's lock is taken once per batch.
constexpr size_t kBatchRows = 4096;

}  // namespace

LastCacheRebuild::LastCacheRebuild(store::EventStore* store, LastCache* cache, ThreadPool* pool,
                                   int max_workers)
    : store_(store), cache_(cache), pool_(pool), max_workers_(pool != nullptr ? max_workers : 0) {
  // spdlog's registry is made on first use; made here, before the thread that logs starts, it is
  // not made while another thread reads it (TSan saw that race in libspdlog, which it does not
  // instrument).
  spdlog::default_logger_raw();
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hotrow-lcache");
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
  const size_t salts = static_cast<size_t>(store_->salter().salts());
  auto read_salt = [&](size_t salt) {
    return ReadSalt(bucket, static_cast<uint8_t>(salt), window_start_ms);
  };
  Status st = Status::Ok();
  if (pool_ != nullptr) {
    // The salts hold disjoint rows; the cache takes rows of one id from several threads at once.
    st = RunSaltTasks(pool_, max_workers_, salts, read_salt);
  } else {
    for (size_t salt = 0; salt < salts && st.ok(); ++salt) st = read_salt(salt);
  }
  if (!st.ok()) {
    if (st.code() != Status::Code::kCancelled) {
      spdlog::warn("query: the last-N cache's rebuild could not read bucket {}: {}",
                   bucket.start_ms(), st.ToString());
    }
    return false;
  }
  return !stop_.load();
}

Status LastCacheRebuild::ReadSalt(const store::Bucket& bucket, uint8_t salt,
                                  int64_t window_start_ms) {
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
  // An id's rows in a salt come newest first (the key is salt|id hash|reversed time|...). So
  // once depth + 1 rows of an id were offered here, the rest of its rows here are older than
  // depth rows the cache was offered: none can be among its newest depth, and the cache's floor
  // for the id is already at or above their time (of those depth + 1 rows it kept at most depth,
  // and the floor rose to the time of one it did not keep). They are stepped over without being
  // copied or offered. Ids sharing a hash (a collision) are counted apart: the run of a hash
  // keeps a count per id, and the rows of the other id are offered as usual.
  const int offered_max = cache_->depth() + 1;
  uint64_t run_hash = 0;
  bool in_run = false;
  bool run_past_window = false;  // a row of the run was older than the window: so are the rest
  std::vector<std::pair<std::string, int>> offered;  // per id of the run: rows offered
  auto it = bucket.NewIterator(keying::SaltKeyRange(salt), false);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    keying::RowKey key;
    if (!keying::DecodeRowKey(it->key(), &key)) continue;  // an index row
    if (!in_run || key.id_hash != run_hash) {
      in_run = true;
      run_hash = key.id_hash;
      run_past_window = false;
      offered.clear();
    }
    if (run_past_window) continue;
    if (key.ts_ms < window_start_ms) {
      run_past_window = true;
      continue;
    }
    std::string_view id, payload;
    if (keying::DecodeRowValue(it->value(), &id, &payload)) {
      auto count = std::find_if(offered.begin(), offered.end(),
                                [&](const auto& c) { return c.first == id; });
      if (count == offered.end()) count = offered.insert(offered.end(), {std::string(id), 0});
      if (count->second == offered_max) continue;
      ++count->second;
    }  // else offered all the same: the cache refuses it the way it refuses such a written row
    values.append(it->value());
    ends.push_back(values.size());
    rows.push_back({key, {}});
    if (rows.size() == kBatchRows) {
      flush();
      if (stop_.load(std::memory_order_relaxed)) return Status::Cancelled("stopped");
    }
  }
  HOTROW_RETURN_IF_ERROR(it->status());
  flush();
  return Status::Ok();
}

}  // namespace hotrow::query
