#include "http/exchange.h"

#include <algorithm>
#include <cctype>

namespace hotrow::http {

bool HeaderNameIs(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

namespace {

const std::string* FindHeader(const Headers& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (HeaderNameIs(k, name)) return &v;
  }
  return nullptr;
}

}  // namespace

bool Request::has_header(std::string_view name) const {
  return FindHeader(headers, name) != nullptr;
}

std::string Request::get_header_value(std::string_view name) const {
  const std::string* v = FindHeader(headers, name);
  return v != nullptr ? *v : std::string();
}

void Response::set_header(std::string_view name, std::string_view value) {
  for (auto& [k, v] : headers) {
    if (HeaderNameIs(k, name)) {
      v = std::string(value);
      return;
    }
  }
  headers.emplace_back(std::string(name), std::string(value));
}

bool Response::has_header(std::string_view name) const {
  return FindHeader(headers, name) != nullptr;
}

std::string Response::get_header_value(std::string_view name) const {
  const std::string* v = FindHeader(headers, name);
  return v != nullptr ? *v : std::string();
}

void Response::set_content(std::string content, std::string_view type) {
  body = std::move(content);
  content_type = std::string(type);
  chunked_provider = nullptr;
  chunked_releaser = nullptr;
  event_stream = nullptr;
}

void Response::set_chunked_content_provider(std::string_view type, ChunkedProvider provider,
                                            ChunkedReleaser releaser) {
  body.clear();
  content_type = std::string(type);
  chunked_provider = std::move(provider);
  chunked_releaser = std::move(releaser);
  event_stream = nullptr;
}

void Response::set_event_stream(std::shared_ptr<EventStream> stream) {
  body.clear();
  content_type = "text/event-stream";
  chunked_provider = nullptr;
  chunked_releaser = nullptr;
  event_stream = std::move(stream);
}

}  // namespace hotrow::http
