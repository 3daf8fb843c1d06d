#pragma once

#include <cstdint>
#include <string>

// Where a newly assigned partition starts: a pure decision over what the store and the broker say.
// No I/O; unit-tested in tests/ingest/start_offset_test.cc.
namespace hotrow::ingest {

// librdkafka's logical offsets, as auto.offset.reset is given to the consumer.
inline constexpr int64_t kOffsetBeginning = -2;   // RD_KAFKA_OFFSET_BEGINNING
inline constexpr int64_t kOffsetEnd = -1;         // RD_KAFKA_OFFSET_END
inline constexpr int64_t kOffsetInvalid = -1001;  // RD_KAFKA_OFFSET_INVALID: the group's commit

// A broker's answer to offsets-for-times(T) for one partition.
struct TimeOffset {
  enum class Kind {
    kUnknown,    // no answer: the request failed, timed out, or the broker cannot answer it
                 // (the embedded broker, librdkafka's mock cluster, always says -1)
    kOffset,     // `offset` is the first record whose timestamp is T or later
    kNoneNewer,  // the broker answered -1: no record has a timestamp of T or later
  };
  Kind kind = Kind::kUnknown;
  int64_t offset = -1;  // kOffset only

  static TimeOffset Unknown() { return {}; }
  static TimeOffset At(int64_t offset) { return {Kind::kOffset, offset}; }
  static TimeOffset NoneNewer() { return {Kind::kNoneNewer, -1}; }
};

// What is known about one partition when it is assigned. -1 means unknown or none.
struct StartOffsetInputs {
  // The store's next offset for the partition: everything below it is stored (or was handled).
  int64_t stored = -1;
  // offsets-for-times of the window's start less ingest.max_future (a record may carry a
  // timestamp up to max_future older than its event time): the first record of the hot window.
  TimeOffset window;
  // The partition's end (the next offset to be written), asked before offsets-for-times: when
  // the broker then says no record is that new, every record below `end` is older than the
  // window. -1 when unknown.
  int64_t end = -1;
  // auto.offset.reset as a logical offset: kOffsetBeginning, kOffsetEnd, or kOffsetInvalid
  // ("error": librdkafka then starts at the group's commit, or fails the partition).
  int64_t reset_offset = kOffsetBeginning;
};

enum class StartReason {
  kStore,   // the store's offset: the store is the truth
  kWindow,  // the first record of the hot window: what was before it is cold
  kEnd,     // the partition's end: no record of it is in the hot window
  kReset,   // auto.offset.reset: nothing else known
};

struct StartOffset {
  int64_t offset = kOffsetBeginning;  // an offset, or a logical one (auto.offset.reset)
  StartReason reason = StartReason::kReset;
  // Records older than the window may come first (the broker could not say where the window
  // starts): the poller skips the run of them that opens the partition as cold (skipped_cold)
  // instead of rejecting them as expired. False where the start is at the window or after it.
  bool may_read_cold = false;
  // From this start on, the store holds every record of the partition from the window's start
  // (or the partition's first record) up to its position, so it may answer for the partition once
  // it has caught up (the run it begins holds the window: store::PartitionRun). False only when
  // the start may skip records of the window: auto.offset.reset latest (the end, at an unknown
  // window) or error (the group's commit).
  bool window_complete = false;
  // Why this start, without the reason's name (Describe adds it) and without this partition's
  // offsets: the same text for every partition that starts the same way, so that an assignment's
  // log line says it once for all of them (assignment_log.h).
  std::string why;
  // This partition's own part of it ("offsets 100..4999 cold", "the store's offset 7"), or empty.
  std::string detail;

  // "<reason>: <why>", for the assignment's log line.
  std::string Describe() const;
};

// The rule (docs/RELIABILITY.md, "Where a partition starts"):
// 1. The store's offset when it has one. Batches are written with sync=false and the commit to
//    the group follows, so after a power cut the group may be ahead of the store: the store
//    wins, and the records in between are read again. The group's commit is never used, whoever
//    made it: each instance answers from its own store for the partitions it owns, so a store
//    must hold the whole window of a partition it owns, not only what follows another owner's
//    commit; a partition new to the store rebuilds its window from Kafka (the input topic is the
//    changelog).
// 2. When the broker names the first record of the hot window and the choice above is before it
//    (or there is none), start there: everything before is cold.
// 3. When the broker says no record is that new and the end is known, the choice above (or
//    none) before the end moves to the end: every record before it is cold.
// 4. Else auto.offset.reset, reading (and skipping) cold records: the window is complete from
//    there when it is the partition's beginning.
// So a store's records of a partition are always one run without a gap, from a complete start.
StartOffset ChooseStartOffset(const StartOffsetInputs& in);

// "store", "window", "end", "auto.offset.reset".
const char* StartReasonName(StartReason reason);

}  // namespace hotrow::ingest
