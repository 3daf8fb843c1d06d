#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hotrow::query {

// Reads one numeric field of event payloads (the stored JSON), for series (CONTRACT.md "Device
// state and series"). The field is a dotted path, as index.fields are ("sensors.temp" is member
// "temp" of member "sensors").
//
// Thread-safety: not safe for concurrent use; one per thread (it keeps a parser and a buffer).
class PayloadField {
 public:
  enum class Kind {
    kNumber,     // *value is set
    kAbsent,     // a member of the path is missing or null, or the path goes through a
                 // non-object (the payload itself included)
    kNotNumber,  // the value is a string, a boolean, an object or an array; or the payload is
                 // not valid JSON where the path leads
  };

  // REQUIRES: path is not empty.
  explicit PayloadField(std::string_view path);
  ~PayloadField();
  PayloadField(const PayloadField&) = delete;
  PayloadField& operator=(const PayloadField&) = delete;

  // What the field is in `payload`. A number too large for a double is a not-a-number.
  Kind Read(std::string_view payload, double* value);

 private:
  struct Impl;
  std::vector<std::string> segments_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hotrow::query
