// The executables of hotrow_test (tests/CMakeLists.txt) take main() from GTest::gtest_main; this
// file only gives each one a source of its own, as add_executable needs one.
