#include "ingest/json_text.h"

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <vector>

namespace hotrow::ingest {

void AppendJsonString(std::string_view text, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t plain_from = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(text.data() + plain_from, i - plain_from);
    plain_from = i + 1;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default: {
        const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(escaped, sizeof escaped);
      }
    }
  }
  out->append(text.data() + plain_from, text.size() - plain_from);
  out->push_back('"');
}

bool IsUtf8(std::string_view bytes) { return simdjson::validate_utf8(bytes.data(), bytes.size()); }

void AppendBase64(std::string_view bytes, std::string* out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  out->reserve(out->size() + (n + 2) / 3 * 4);
  for (; n >= 3; n -= 3, p += 3) {
    const uint32_t v = (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
    const char quad[] = {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63],
                         kAlphabet[v & 63]};
    out->append(quad, 4);
  }
  if (n == 1) {
    const uint32_t v = uint32_t{p[0]} << 16;
    const char quad[] = {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
    out->append(quad, 4);
  } else if (n == 2) {
    const uint32_t v = (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8);
    const char quad[] = {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63],
                         '='};
    out->append(quad, 4);
  }
}

bool DecodeBase64(std::string_view text, std::string* out) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  out->clear();
  out->reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : text) {
    int v;
    if (ch >= 'A' && ch <= 'Z') {
      v = ch - 'A';
    } else if (ch >= 'a' && ch <= 'z') {
      v = ch - 'a' + 26;
    } else if (ch >= '0' && ch <= '9') {
      v = ch - '0' + 52;
    } else if (ch == '+') {
      v = 62;
    } else if (ch == '/') {
      v = 63;
    } else {
      return false;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return bits < 6;  // a lone trailing character carries no whole byte
}

void AppendInt(int64_t value, std::string* out) {
  char digits[24];
  out->append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
}

void AppendUint(uint64_t value, std::string* out) {
  char digits[24];
  out->append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
}

namespace {

template <typename Float>
void AppendFloating(Float value, std::string* out) {
  if (std::isnan(value)) {
    out->append("\"NaN\"");
  } else if (std::isinf(value)) {
    out->append(value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    char text[40];
    out->append(text, std::to_chars(text, text + sizeof text, value).ptr);
  }
}

}  // namespace

void AppendDouble(double value, std::string* out) { AppendFloating(value, out); }
void AppendFloat(float value, std::string* out) { AppendFloating(value, out); }

void AppendDecimal(std::string_view big_endian, int scale, std::string* out) {
  std::vector<uint8_t> magnitude(big_endian.begin(), big_endian.end());
  const bool negative = !magnitude.empty() && (magnitude[0] & 0x80) != 0;
  if (negative) {  // two's complement: invert and add one
    for (uint8_t& b : magnitude) b = static_cast<uint8_t>(~b);
    for (size_t i = magnitude.size(); i-- > 0;) {
      if (++magnitude[i] != 0) break;
    }
  }
  // Repeated division by 10 of the big-endian magnitude: digits from the right.
  std::string digits;
  size_t first = 0;
  while (first < magnitude.size() && magnitude[first] == 0) ++first;
  while (first < magnitude.size()) {
    uint32_t rem = 0;
    for (size_t i = first; i < magnitude.size(); ++i) {
      const uint32_t cur = (rem << 8) | magnitude[i];
      magnitude[i] = static_cast<uint8_t>(cur / 10);
      rem = cur % 10;
    }
    digits.push_back(static_cast<char>('0' + rem));
    while (first < magnitude.size() && magnitude[first] == 0) ++first;
  }
  if (scale < 0) {  // a negative scale multiplies by powers of ten
    if (!digits.empty()) digits.insert(0, static_cast<size_t>(-scale), '0');
    scale = 0;
  }
  while (digits.size() <= static_cast<size_t>(scale)) digits.push_back('0');
  if (negative) out->push_back('-');
  for (size_t i = digits.size(); i-- > 0;) {
    out->push_back(digits[i]);
    if (i == static_cast<size_t>(scale) && scale > 0) out->push_back('.');
  }
}

}  // namespace hotrow::ingest
