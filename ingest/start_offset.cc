#include "ingest/start_offset.h"

namespace hotrow::ingest {

const char* StartReasonName(StartReason reason) {
  switch (reason) {
    case StartReason::kStore:
      return "store";
    case StartReason::kWindow:
      return "window";
    case StartReason::kEnd:
      return "end";
    case StartReason::kReset:
      return "auto.offset.reset";
  }
  return "?";
}

std::string StartOffset::Describe() const {
  return std::string(StartReasonName(reason)) + ": " + why;
}

StartOffset ChooseStartOffset(const StartOffsetInputs& in) {
  StartOffset out;
  const int64_t base = in.stored >= 0 ? in.stored : -1;
  const std::string stored_text =
      base >= 0 ? "the store's offset " + std::to_string(base) : std::string("nothing stored");

  if (in.window.kind == TimeOffset::Kind::kOffset && in.window.offset >= 0 &&
      base < in.window.offset) {
    out.offset = in.window.offset;
    out.reason = StartReason::kWindow;
    out.window_complete = true;
    if (base >= 0) {
      out.why =
          "the first record of the hot window, past the store's offset (what is between is "
          "cold)";
      out.detail =
          "offsets " + std::to_string(base) + ".." + std::to_string(in.window.offset - 1) + " cold";
    } else {
      out.why = "the first record of the hot window (nothing stored: the window is rebuilt)";
    }
    return out;
  }
  if (in.window.kind == TimeOffset::Kind::kNoneNewer && in.end >= 0 && base < in.end) {
    out.offset = in.end;
    out.reason = StartReason::kEnd;
    out.window_complete = true;
    out.why =
        "no record is newer than the hot window's start, so the window starts at the partition's "
        "end (what is before the end is cold)";
    out.detail = stored_text;
    return out;
  }
  if (base >= 0) {
    out.offset = base;
    out.reason = StartReason::kStore;
    out.window_complete = true;
    // Only when the broker did not say where the window starts may what follows be cold.
    out.may_read_cold = in.window.kind == TimeOffset::Kind::kUnknown ||
                        (in.window.kind == TimeOffset::Kind::kNoneNewer && in.end < 0);
    out.why = "where the store's records of the partition end";
    return out;
  }
  out.offset = in.reset_offset;
  out.reason = StartReason::kReset;
  out.may_read_cold = true;
  out.window_complete = in.reset_offset == kOffsetBeginning;
  out.why =
      "nothing stored, and the broker did not name the first record of the hot window (" +
      std::string(in.reset_offset == kOffsetBeginning ? "the partition's beginning: the window is "
                                                        "rebuilt"
                  : in.reset_offset == kOffsetEnd
                      ? "latest: the records already in the window are not read, so the window "
                        "is incomplete"
                      : "error: the group's commit, so the window may be incomplete") +
      ")";
  return out;
}

}  // namespace hotrow::ingest
