#include "access/bearer_token.h"

namespace hotrow::access {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

bool IsToken68Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

}  // namespace

bool IsToken68(std::string_view token) {
  size_t i = 0;
  while (i < token.size() && IsToken68Char(token[i])) ++i;
  if (i == 0) return false;
  while (i < token.size() && token[i] == '=') ++i;
  return i == token.size();
}

bool ParseBearer(std::string_view header, std::string_view* token) {
  while (!header.empty() && IsSpace(header.front())) header.remove_prefix(1);
  while (!header.empty() && IsSpace(header.back())) header.remove_suffix(1);
  static constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    char c = header[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kScheme[i]) return false;
  }
  std::string_view rest = header.substr(kScheme.size());
  if (rest.front() != ' ') return false;  // RFC 6750: 1*SP
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (!IsToken68(rest)) return false;
  *token = rest;
  return true;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Walk the longer of the two in full; a shorter side is read cyclically (or as zero when
  // empty), so neither a length mismatch nor the first differing byte ends the loop early.
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  volatile unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = a.empty() ? 0 : static_cast<unsigned char>(a[i % a.size()]);
    const unsigned char y = b.empty() ? 0 : static_cast<unsigned char>(b[i % b.size()]);
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

}  // namespace hotrow::access
