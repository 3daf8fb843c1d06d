// Fuzz target: the config loader's --set path (config/config.h LoadConfig with overrides and no
// file), where each value is read as YAML on its own.
//
// Input: one override per line, "section.key=value"; at most kMaxOverrides lines are used.
// Properties: tests/fuzz/config_properties.h.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "tests/fuzz/config_properties.h"

namespace {

constexpr size_t kMaxOverrides = 64;

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty() && lines.size() < kMaxOverrides) {
    const size_t newline = text.find('\n');
    lines.emplace_back(text.substr(0, newline));
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  hotrow::fuzz::CheckLoadResult(hotrow::config::LoadConfig("", Lines(text)));
  return 0;
}
