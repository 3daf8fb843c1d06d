#include "wire/url_codec.h"

namespace hotrow::wire {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

}  // namespace

Result<std::string> PercentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '%') {
      out.push_back(c);
      continue;
    }
    const int hi = i + 1 < text.size() ? HexValue(text[i + 1]) : -1;
    const int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      // Show a short excerpt, itself encoded so that the message stays printable.
      return Status::InvalidArgument("bad percent-encoding at \"" +
                                     PercentEncode(text.substr(i, 3)) +
                                     "\": '%' must be followed by two hex digits");
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::string PercentEncode(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(bytes.size() * 3);
  for (char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

Result<std::vector<QueryParam>> ParseQueryString(std::string_view query) {
  std::vector<QueryParam> params;
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string_view::npos) amp = query.size();
    const std::string_view piece = query.substr(pos, amp - pos);
    pos = amp + 1;
    if (piece.empty()) continue;
    const size_t eq = piece.find('=');
    Result<std::string> name = PercentDecode(piece.substr(0, eq));
    if (!name.ok()) return name.status();
    std::string value;
    if (eq != std::string_view::npos) {
      Result<std::string> decoded = PercentDecode(piece.substr(eq + 1));
      if (!decoded.ok()) return decoded.status();
      value = std::move(decoded).value();
    }
    params.emplace_back(std::move(name).value(), std::move(value));
  }
  return params;
}

Result<RequestTarget> SplitRequestTarget(std::string_view target) {
  RequestTarget out;
  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  if (question != std::string_view::npos) out.raw_query = target.substr(question + 1);
  if (path.empty() || path[0] != '/') {
    return Status::InvalidArgument("the request path must start with '/'");
  }
  size_t pos = 1;
  while (true) {
    size_t slash = path.find('/', pos);
    const std::string_view raw =
        path.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    Result<std::string> segment = PercentDecode(raw);
    if (!segment.ok()) return segment.status();
    out.segments.push_back(std::move(segment).value());
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  return out;
}

}  // namespace hotrow::wire
