#include "query/event_id.h"

#include <simdjson.h>

#include <string>

#include "keying/row_value.h"

namespace hotrow::query {

Status CheckEventId(std::string_view id) {
  if (id.empty()) return Status::InvalidArgument("the event id is empty");
  if (id.size() > keying::kMaxIdSize) {
    return Status::InvalidArgument("the event id is " + std::to_string(id.size()) +
                                   " bytes, at most " + std::to_string(keying::kMaxIdSize) +
                                   " allowed");
  }
  if (!simdjson::validate_utf8(id.data(), id.size())) {
    return Status::InvalidArgument("the event id is not valid UTF-8");
  }
  return Status::Ok();
}

}  // namespace hotrow::query
