// Where the tests find the source tree and the built `cleave` (defined in test_environment.cc).
#pragma once

// Functions, not compile definitions on every test file: a test object then does not depend on
// the folder it was built in, and a clone in another folder (CI's) reuses it from ccache.
const char* cleave_test_source_dir();
const char* cleave_test_binary();

#define CLEAVE_SOURCE_DIR (cleave_test_source_dir())
#define CLEAVE_BINARY (cleave_test_binary())
