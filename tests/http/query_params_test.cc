// The parameter parsers of http/query_params.h that are not reached through a route in one
// instance: TakeLocalFlag, which only cluster mode's routes call.

#include "http/query_params.h"

#include <gtest/gtest.h>

#include <string>

namespace hotrow::http {
namespace {

TEST(TakeLocalFlagTest, TakesTheFlagOutAndLeavesTheRestInOrder) {
  bool local = false;
  std::string rest;
  ASSERT_TRUE(TakeLocalFlag("n=3&local=true&from=5", &local, &rest).ok());
  EXPECT_TRUE(local);
  EXPECT_EQ(rest, "n=3&from=5");

  rest.clear();
  ASSERT_TRUE(TakeLocalFlag("local=false", &local, &rest).ok());
  EXPECT_FALSE(local);
  EXPECT_EQ(rest, "");

  rest.clear();
  ASSERT_TRUE(TakeLocalFlag("n=3&&localx=1", &local, &rest).ok());
  EXPECT_FALSE(local);
  EXPECT_EQ(rest, "n=3&localx=1");  // a parameter that only starts with "local" is not the flag
}

TEST(TakeLocalFlagTest, RefusesTheFlagTwiceEvenWithTheSameValue) {
  for (const char* query :
       {"local=true&local=true", "local=true&n=1&local=false", "local=false&local=false"}) {
    bool local = false;
    std::string rest;
    const Status st = TakeLocalFlag(query, &local, &rest);
    EXPECT_TRUE(st.IsInvalidArgument()) << query;
    EXPECT_EQ(st.message(), "parameter \"local\" is given more than once") << query;
  }
}

TEST(TakeLocalFlagTest, RefusesAValueOtherThanTrueOrFalseQuotingIt) {
  for (const char* query : {"local", "local=", "local=1", "local=TRUE", "local=yes"}) {
    bool local = false;
    std::string rest;
    const Status st = TakeLocalFlag(query, &local, &rest);
    EXPECT_TRUE(st.IsInvalidArgument()) << query;
    EXPECT_TRUE(st.message().starts_with("local must be true or false, got ")) << st.message();
  }
}

}  // namespace
}  // namespace hotrow::http
