#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/status.h"
#include "store/event_store.h"

namespace hotrow::live {

// Where a stream stands (CONTRACT.md, "Live"): per partition, the offset of the next record the
// stream has not passed yet; every event of the partition below it was sent or was not the
// stream's to send (before its start, or superseded in a latest stream). Kafka offsets, which the
// store's keys carry, so that a resume is exact and a record replayed by Kafka after a crash (same
// partition, same offset; the store counts it as a duplicate and never shows it again) can never
// be sent twice.
//
// Its text, the SSE `id:` of every message and what Last-Event-ID / `?after=` give back, is
// compact: per topic, each run of consecutive partitions as its first partition, a base offset
// (the run's lowest), the width W of each partition's distance from the base, and the distances
// in W base-64 digits each (A-Z a-z 0-9 - _, most significant first), one partition after the
// other:
//
//   <made_ms>~<topic>:<first>.<base>.<W>.<digits>,<first>.<base>.<W>.<digits>;<topic>:...
//   1764330000000~iot:0.998.1.KA,7.5.1.A     iot 0 at 1008, 1 at 998; 7 at 5
//
// Its size: 15 + per topic (name + 1) + per run (about 15) + W per partition; W = 3 while the
// run's offsets lie within 262,143 of each other, 4 within 16,777,215. A stream over 2,000
// partitions of one topic within 262,143 offsets sends ids of at most 6,050 bytes, under the 8 KiB
// a request header may take (tests/live/stream_position_test.cc).
//
// The earlier text, one decimal offset per partition, is still read (a client that kept one):
//
//   <made_ms>/<topic>:<partition>.<next>,<partition>.<next>;<topic>:...
//   1764330000000/iot:0.1234,1.998;other:0.5
//
// A position names the partitions the stream carried (StreamHub::SetOwnedPartitions); one it
// does not name is read from the window's start on a resume.
//
// `made_ms` is the store's clock when the position was written: a resume from a position older
// than the window is told that events may be gone. Topic names are Kafka's ([A-Za-z0-9._-]), so
// the text needs no escaping in a header or a query string.
struct StreamPosition {
  int64_t made_ms = 0;
  std::map<store::TopicPartition, int64_t> next;

  // The compact text above.
  std::string ToString() const;
  // The earlier text (one decimal offset per partition).
  std::string ToDecimalString() const;
  // The offset to resume partition `tp` at: what `next` holds, or 0 for a partition it does not
  // name (nothing of it was known when the position was made, so all of it is after).
  int64_t NextOf(const store::TopicPartition& tp) const;
  // Raises `tp`'s next offset to offset + 1.
  void Advance(const store::TopicPartition& tp, int64_t offset);
};

// Parses either text above. InvalidArgument naming what is wrong (at most 4096 partitions).
Result<StreamPosition> ParseStreamPosition(std::string_view text);

}  // namespace hotrow::live
