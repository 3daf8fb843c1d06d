#include "ingest/start_offset.h"

namespace hotrow::ingest {

const char* StartReasonName(StartReason reason) {
  switch (reason) {
    case StartReason::kStore:
      return "store";
    case StartReason::kOtherStore:
      return "other store";
    case StartReason::kGroup:
      return "group";
    case StartReason::kWindow:
      return "window";
    case StartReason::kReset:
      return "auto.offset.reset";
  }
  return "?";
}

StartOffset ChooseStartOffset(const StartOffsetInputs& in) {
  StartOffset out;
  int64_t base = -1;
  if (in.stored >= 0) {
    base = in.stored;
    out.reason = StartReason::kStore;
    out.why = "the store's offset " + std::to_string(in.stored);
    if (in.committed > in.stored) {
      if (in.committed_by_other_store) {
        base = in.committed;
        out.reason = StartReason::kOtherStore;
        out.why = "offset " + std::to_string(in.committed) +
                  " committed by another store, which holds the records from the store's " +
                  std::to_string(in.stored) + " on";
      } else {
        out.why += "; the group's " + std::to_string(in.committed) +
                   " is ahead (a commit the store's write did not outlive) and is ignored";
      }
    }
  } else if (in.committed >= 0) {
    base = in.committed;
    out.reason = StartReason::kGroup;
    out.why = "the group's offset " + std::to_string(in.committed) + " (nothing in the store)";
  }

  if (in.window_offset >= 0 && (base < 0 || base < in.window_offset)) {
    out.offset = in.window_offset;
    out.reason = StartReason::kWindow;
    out.why = "offset " + std::to_string(in.window_offset) + ", the first of the hot window" +
              (base >= 0 ? " (offsets " + std::to_string(base) + ".." +
                               std::to_string(in.window_offset - 1) + " are cold)"
                         : std::string());
    return out;
  }
  if (base >= 0) {
    out.offset = base;
    // The broker did not say where the window starts: what follows may be cold.
    out.may_read_cold = in.window_offset < 0;
    return out;
  }
  out.offset = in.reset_offset;
  out.reason = StartReason::kReset;
  out.may_read_cold = true;
  out.why =
      "auto.offset.reset (no stored or committed offset, and the broker did not name the "
      "first record of the hot window)";
  return out;
}

}  // namespace hotrow::ingest
