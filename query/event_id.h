#pragma once

#include <string_view>

#include "common/status.h"

namespace hotrow::query {

// Checks an event id a query asks for against the rules every stored id obeys (CONTRACT.md):
// not empty, at most keying::kMaxIdSize (256) bytes, valid UTF-8. An id no record could carry
// is InvalidArgument naming the rule, never a silent empty answer or an altered echo. The HTTP
// API (and so the CLI) checks every id with it; QueryEngine itself takes any bytes, as the store
// does, so that tests can write and read back ids ingest would refuse.
Status CheckEventId(std::string_view id);

}  // namespace hotrow::query
