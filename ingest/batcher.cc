#include "ingest/batcher.h"

#include <algorithm>
#include <utility>

namespace hotrow::ingest {

void Batcher::Touch(const store::TopicPartition& tp, int64_t offset, int64_t now_ms) {
  if (open_->records == 0) open_->opened_ms = now_ms;
  ++open_->records;
  auto& offsets = open_->input.next_offsets;
  if (last_ == offsets.end() || last_->first != tp) last_ = offsets.try_emplace(tp, 0).first;
  last_->second = std::max(last_->second, offset + 1);
  if (!run_marks_.empty()) {
    auto mark = run_marks_.find(tp);
    if (mark != run_marks_.end()) {
      open_->input.run_starts[tp] = store::PartitionRun{offset, mark->second};
      run_marks_.erase(mark);
    }
  }
}

void Batcher::MarkRunStart(const store::TopicPartition& tp, int64_t holds_from_ms) {
  run_marks_[tp] = holds_from_ms;
}

void Batcher::AddRow(const store::TopicPartition& tp, int64_t offset, std::string key,
                     std::string value, int64_t now_ms, std::vector<keying::IndexEntry> index) {
  Touch(tp, offset, now_ms);
  open_->input.rows.push_back(store::Row{std::move(key), std::move(value), std::move(index)});
}

void Batcher::AddSkipped(const store::TopicPartition& tp, int64_t offset, int64_t now_ms) {
  Touch(tp, offset, now_ms);
}

int64_t Batcher::MsUntilDue(int64_t now_ms) const {
  if (empty()) return max_ms_;
  return std::max<int64_t>(0, open_->opened_ms + max_ms_ - now_ms);
}

std::unique_ptr<Batch> Batcher::Take(uint64_t seq) {
  std::unique_ptr<Batch> closed = std::move(open_);
  closed->seq = seq;
  open_ = std::make_unique<Batch>();
  open_->input.rows.reserve(std::min<size_t>(max_records_, 65536));
  last_ = open_->input.next_offsets.end();
  return closed;
}

}  // namespace hotrow::ingest
