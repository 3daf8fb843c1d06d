#pragma once

// What the config tests share: loading a configuration that must load or must fail, and a file to
// load it from.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "tests/support/temp_dir.h"

namespace hotrow::config {

// The message of a load that must fail, or a test failure when it loaded.
inline std::string LoadError(const std::string& file, const std::vector<std::string>& overrides) {
  Result<Config> config = LoadConfig(file, overrides);
  if (config.ok()) {
    ADD_FAILURE() << "loaded, but an error was expected";
    return "";
  }
  EXPECT_TRUE(config.status().IsInvalidArgument()) << config.status().ToString();
  const std::string& message = config.status().message();
  EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
  return message;
}

inline std::string SetError(const std::string& item) { return LoadError("", {item}); }

inline Config LoadOk(const std::string& file, const std::vector<std::string>& overrides) {
  Result<Config> config = LoadConfig(file, overrides);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? *config : Config();
}

inline Config SetOk(const std::vector<std::string>& overrides) { return LoadOk("", overrides); }

class ConfigFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = dir_.Sub("hotrow.yaml");
    std::ofstream(path) << text;
    return path;
  }
  testing::TempDir dir_;
};

}  // namespace hotrow::config
