#include "ingest/start_offset.h"

namespace hotrow::ingest {

namespace {
constexpr int64_t kOffsetBeginning = -2;  // RD_KAFKA_OFFSET_BEGINNING
}  // namespace

const char* StartReasonName(StartReason reason) {
  switch (reason) {
    case StartReason::kStore:
      return "store";
    case StartReason::kWindow:
      return "window";
    case StartReason::kReset:
      return "auto.offset.reset";
  }
  return "?";
}

StartOffset ChooseStartOffset(const StartOffsetInputs& in) {
  StartOffset out;
  std::string group_note;
  if (in.committed >= 0 && in.committed != in.stored) {
    group_note = "; the group's " + std::to_string(in.committed) +
                 (in.committed_by_other_store ? " (committed by another store)" : "") +
                 " is not used: this store holds only its own records";
  }
  int64_t base = -1;
  if (in.stored >= 0) {
    base = in.stored;
    out.reason = StartReason::kStore;
    out.why = "the store's offset " + std::to_string(in.stored) + group_note;
  }

  if (in.window_offset >= 0 && (base < 0 || base < in.window_offset)) {
    out.offset = in.window_offset;
    out.reason = StartReason::kWindow;
    out.window_complete = true;
    out.why = "offset " + std::to_string(in.window_offset) + ", the first of the hot window" +
              (base >= 0 ? " (offsets " + std::to_string(base) + ".." +
                               std::to_string(in.window_offset - 1) + " are cold)"
                         : std::string(" (nothing in the store: the window is rebuilt)")) +
              (base >= 0 ? std::string() : group_note);
    return out;
  }
  if (base >= 0) {
    out.offset = base;
    out.window_complete = true;
    // The broker did not say where the window starts: what follows may be cold.
    out.may_read_cold = in.window_offset < 0;
    return out;
  }
  out.offset = in.reset_offset;
  out.reason = StartReason::kReset;
  out.may_read_cold = true;
  out.window_complete = in.reset_offset == kOffsetBeginning;
  out.why =
      "auto.offset.reset (nothing in the store, and the broker did not name the first record "
      "of the hot window)" +
      group_note;
  return out;
}

}  // namespace hotrow::ingest
