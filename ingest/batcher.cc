#include "ingest/batcher.h"

#include <algorithm>
#include <utility>

#include "keying/row_key.h"

namespace hotrow::ingest {

std::map<store::TopicPartition, uint64_t> Batch::Epochs() const {
  std::map<store::TopicPartition, uint64_t> out;
  for (const auto& [tp, part] : parts) out.emplace_hint(out.end(), tp, part.epoch);
  return out;
}

size_t DropPartitions(Batch* batch, const std::set<store::TopicPartition>& drop,
                      const std::function<std::optional<std::string>(uint16_t)>& topic_name) {
  size_t removed = 0;
  std::set<std::pair<std::string, int32_t>> dropped;
  for (const store::TopicPartition& tp : drop) {
    auto it = batch->parts.find(tp);
    if (it == batch->parts.end()) continue;
    removed += it->second.records;
    batch->parts.erase(it);
    batch->input.next_offsets.erase(tp);
    batch->input.run_starts.erase(tp);
    dropped.emplace(tp.topic, tp.partition);
  }
  if (dropped.empty()) return 0;
  batch->records -= removed;
  // Rows of the dropped partitions, found by the (topic number, partition) of their keys. A key
  // that does not decode cannot be attributed and is kept (the poller encoded it: never so).
  std::map<uint16_t, std::optional<std::string>> names;
  auto name_of = [&](uint16_t number) -> const std::optional<std::string>& {
    auto it = names.find(number);
    if (it == names.end()) it = names.emplace(number, topic_name(number)).first;
    return it->second;
  };
  std::vector<store::Row>& rows = batch->input.rows;
  rows.erase(
      std::remove_if(rows.begin(), rows.end(),
                     [&](const store::Row& row) {
                       keying::RowKey key;
                       if (!keying::DecodeRowKey(row.key, &key)) return false;
                       const std::optional<std::string>& topic = name_of(key.topic);
                       return topic.has_value() && dropped.count({*topic, key.partition}) != 0;
                     }),
      rows.end());
  return removed;
}

void Batcher::Touch(const store::TopicPartition& tp, int64_t offset, int64_t now_ms) {
  if (open_->records == 0) open_->opened_ms = now_ms;
  ++open_->records;
  if (last_ == open_->parts.end() || last_->first != tp) {
    last_ = open_->parts.try_emplace(tp).first;
  }
  last_->second.next_offset = std::max(last_->second.next_offset, offset + 1);
  ++last_->second.records;
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

size_t Batcher::DropOpen(const std::set<store::TopicPartition>& drop,
                         const std::function<std::optional<std::string>(uint16_t)>& topic_name) {
  last_ = open_->parts.end();
  return DropPartitions(open_.get(), drop, topic_name);
}

std::unique_ptr<Batch> Batcher::Take(uint64_t seq) {
  std::unique_ptr<Batch> closed = std::move(open_);
  closed->seq = seq;
  for (const auto& [tp, part] : closed->parts) {
    closed->input.next_offsets.emplace_hint(closed->input.next_offsets.end(), tp, part.next_offset);
  }
  open_ = std::make_unique<Batch>();
  open_->input.rows.reserve(std::min<size_t>(max_records_, 65536));
  last_ = open_->parts.end();
  return closed;
}

}  // namespace hotrow::ingest
