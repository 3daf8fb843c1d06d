#pragma once

#include <cstdint>
#include <string>

// Where a newly assigned partition starts: a pure decision over what the store, the group and
// the broker say. No I/O; unit-tested in tests/ingest/start_offset_test.cc.
namespace hotrow::ingest {

// What is known about one partition when it is assigned. -1 means unknown or none throughout.
struct StartOffsetInputs {
  // The store's next offset for the partition: everything below it is stored (or was handled).
  int64_t stored = -1;
  // The group's committed offset, and whether its commit metadata names another hotrow store
  // (another instance with its own store consumed the partition up to there). Neither moves the
  // start (see the rule below); they are named in the explanation.
  int64_t committed = -1;
  bool committed_by_other_store = false;
  // The broker's answer to offsets-for-times(window start): the first record of the hot window.
  // -1 when the broker cannot answer (the embedded one never can) or has nothing that new.
  int64_t window_offset = -1;
  // The broker's log start and end, when known (for the explanation only).
  int64_t low_watermark = -1;
  int64_t high_watermark = -1;
  // auto.offset.reset as a librdkafka logical offset (RD_KAFKA_OFFSET_BEGINNING = -2, END = -1,
  // INVALID = -1001).
  int64_t reset_offset = -2;
};

enum class StartReason {
  kStore,   // the store's offset: the store is the truth
  kWindow,  // the first record of the hot window: what was before it is cold
  kReset,   // auto.offset.reset: nothing else known
};

struct StartOffset {
  int64_t offset = -2;  // an offset, or a logical one (auto.offset.reset)
  StartReason reason = StartReason::kReset;
  // Records before the window may follow (the broker could not say where the window starts):
  // the poller skips them on their Kafka timestamps, counted in skipped_cold.
  bool may_read_cold = false;
  // From this start on, the store holds every record of the partition from the window's start
  // (or the partition's first record) up to its position: it may answer for the partition once
  // it has caught up. False only when auto.offset.reset skips records (latest).
  bool window_complete = false;
  std::string why;  // one line for the log
};

// The rule (docs/RELIABILITY.md, "Where a partition starts"):
// 1. The store's offset when it has one. Batches are written with sync=false and the commit to
//    the group follows, so after a power cut the group may be ahead of the store: the store
//    wins, and the records in between are read again (never max(store, group)).
//    A commit ahead of the store made by ANOTHER hotrow store (its metadata names it) does not
//    win either (CONTRACT.md, `cluster.peers`): each instance answers from its own store for the
//    partitions it owns, so a new owner must hold the whole window, not only what follows the
//    previous owner's commit. The previous owner's copy stops counting when it loses the partition.
// 2. Else the group's committed offset is NOT used: the partition is new to this store, which
//    must rebuild its window from Kafka (the input topic is the changelog).
// 3. When the broker names the first record of the hot window and the choice above is before it
//    (or there is none), start there: everything before is cold.
// 4. Else auto.offset.reset, reading (and skipping) cold records: the window is complete from
//    there when it is the partition's beginning.
// So a store's records of a partition are always one run without a gap, from a complete start.
StartOffset ChooseStartOffset(const StartOffsetInputs& in);

// "store", "window", "auto.offset.reset".
const char* StartReasonName(StartReason reason);

}  // namespace hotrow::ingest
