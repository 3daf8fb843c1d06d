#include "ingest/json_text.h"

#include <simdjson.h>

#include <algorithm>
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

size_t JsonStringSize(std::string_view text) {
  size_t size = text.size() + 2;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    const bool short_escape =
        c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f';
    size += short_escape ? 1 : 5;
  }
  return size;
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

bool AppendDecimal(std::string_view big_endian, int scale, size_t max_size, std::string* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(big_endian.data());
  size_t n = big_endian.size();
  const bool negative = n > 0 && (p[0] & 0x80) != 0;
  // Sign extension carries no digit: 00 before a positive byte, ff before a negative one.
  const uint8_t extension = negative ? 0xff : 0x00;
  while (n > 1 && p[0] == extension && ((p[1] & 0x80) != 0) == negative) {
    ++p;
    --n;
  }
  if (n == 1 && p[0] == 0) n = 0;
  if (n > kMaxDecimalBytes) return false;
  // 8 bits are at most 2.40824 digits: the text's size bound, checked before converting.
  const uint64_t max_digits = n * 8 * 30103 / 100000 + 1;
  const int64_t wide_scale = scale;
  const uint64_t zeros = wide_scale < 0 ? static_cast<uint64_t>(-wide_scale) : 0;
  const uint64_t fraction = wide_scale > 0 ? static_cast<uint64_t>(wide_scale) : 0;
  const uint64_t max_text = 2 + std::max(max_digits + zeros, fraction + 1);  // sign and point
  if (out->size() > max_size || max_text > max_size - out->size()) return false;

  // The magnitude as big-endian 32-bit words (two's complement undone), then repeated division
  // by 10^9: nine digits per pass over the words.
  std::vector<uint32_t> words((n + 3) / 4, 0);
  for (size_t i = 0; i < n; ++i) {
    const size_t from_right = n - 1 - i;
    uint8_t b = negative ? static_cast<uint8_t>(~p[i]) : p[i];
    words[words.size() - 1 - from_right / 4] |= uint32_t{b} << (8 * (from_right % 4));
  }
  if (negative) {  // ~x + 1
    for (size_t i = words.size(); i-- > 0;) {
      if (++words[i] != 0) break;
    }
  }
  std::vector<uint32_t> chunks;  // base 10^9, least significant first
  size_t first = 0;
  while (first < words.size() && words[first] == 0) ++first;
  while (first < words.size()) {
    uint64_t rem = 0;
    for (size_t i = first; i < words.size(); ++i) {
      const uint64_t cur = (rem << 32) | words[i];
      words[i] = static_cast<uint32_t>(cur / 1'000'000'000);
      rem = cur % 1'000'000'000;
    }
    chunks.push_back(static_cast<uint32_t>(rem));
    while (first < words.size() && words[first] == 0) ++first;
  }
  std::string digits;  // most significant first, no leading zero; empty for 0
  for (size_t i = chunks.size(); i-- > 0;) {
    char text[10];
    char* end = std::to_chars(text, text + sizeof text, chunks[i]).ptr;
    if (i + 1 < chunks.size()) digits.append(9 - static_cast<size_t>(end - text), '0');
    digits.append(text, static_cast<size_t>(end - text));
  }
  if (!digits.empty()) digits.append(zeros, '0');
  if (digits.size() <= fraction) digits.insert(0, fraction + 1 - digits.size(), '0');
  if (negative) out->push_back('-');
  out->append(digits, 0, digits.size() - fraction);
  if (fraction > 0) {
    out->push_back('.');
    out->append(digits, digits.size() - fraction, fraction);
  }
  return true;
}

}  // namespace hotrow::ingest
