#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace hotrow {

// Status is the outcome of an operation that can fail in an expected way: bad input, a missing
// file, a full disk. It carries a code and a message a user can act on. Ignoring a returned Status
// is a bug, so the type is [[nodiscard]].
//
// Thread-safety: a Status is a value; distinct objects may be used from distinct threads.
class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,  // the caller passed something wrong (a bad parameter, a malformed key)
    kNotFound,
    kCorruption,       // stored data is damaged or not what hotrow wrote
    kIOError,          // the operating system or the storage engine failed
    kNoSpace,          // the disk is full
    kBusy,             // too much work in flight; try again later
    kCancelled,        // stopped on request
    kIncompatible,     // not a store these settings can open: other salts/salt_by, or not hotrow's
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status NoSpace(std::string msg) { return Status(Code::kNoSpace, std::move(msg)); }
  static Status Busy(std::string msg) { return Status(Code::kBusy, std::move(msg)); }
  static Status Cancelled(std::string msg) { return Status(Code::kCancelled, std::move(msg)); }
  static Status Incompatible(std::string msg) { return Status(Code::kIncompatible, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsNoSpace() const { return code_ == Code::kNoSpace; }
  bool IsBusy() const { return code_ == Code::kBusy; }

  // "ok", or the code's name and the message: "invalid argument: n must be 1..10000, got 0".
  std::string ToString() const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

inline std::string Status::ToString() const {
  const char* name = "ok";
  switch (code_) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: name = "invalid argument"; break;
    case Code::kNotFound: name = "not found"; break;
    case Code::kCorruption: name = "corruption"; break;
    case Code::kIOError: name = "io error"; break;
    case Code::kNoSpace: name = "no space"; break;
    case Code::kBusy: name = "busy"; break;
    case Code::kCancelled: name = "cancelled"; break;
    case Code::kIncompatible: name = "incompatible"; break;
  }
  return std::string(name) + ": " + message_;
}

// Result<T> holds either a value or the Status that explains why there is none.
// REQUIRES: a Result built from a Status is built from a non-ok one.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}                 // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}         // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace hotrow

// Returns from the enclosing function when `expr` yields a non-ok Status.
#define HOTROW_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::hotrow::Status _st = (expr);          \
    if (!_st.ok()) return _st;              \
  } while (0)
