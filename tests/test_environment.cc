// Linked into every test binary: the environment the commands that tests start should run in.
#include <cstdlib>

#include "test_paths.h"

namespace {

// `cleave run` takes fewer threads than --threads when other processes hold the cores
// (runtime/wait_policy.h); under `ctest -j` the test beside it is such a process, and the tests
// expect the count they ask for. (ctest's ENVIRONMENT property cannot carry this beside
// CLEAVE_CORE_WAIT_SECONDS: gtest_discover_tests splits a list of variables.)
[[maybe_unused]] const bool kFixedThreads = setenv("CLEAVE_FIXED_THREADS", "1", 0) == 0;
// A cached profile is reused without timing the reference kernel against the one recorded with
// it: the tests beside this one slow that kernel at random. Tests of the check set their own.
[[maybe_unused]] const bool kReuseProfiles = setenv("CLEAVE_PROFILE_REUSE", "always", 0) == 0;
// Nor is a reused table scaled to the sequential plan timed now (cost/profile_level.h): beside
// other tests that time is random, and commands compared across a test would each scale their
// own way. Tests of the level check set their own.
[[maybe_unused]] const bool kProfileLevelOff = setenv("CLEAVE_PROFILE_LEVEL", "off", 0) == 0;

}  // namespace

const char* cleave_test_source_dir() {
  return CLEAVE_TEST_SOURCE_DIR;
}
const char* cleave_test_binary() {
  return CLEAVE_TEST_BINARY;
}
