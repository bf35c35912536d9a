// The fixed texts of a generated C++ folder, as fmt templates (arguments noted per text).
#pragma once

namespace cleave::cpp_templates {

extern const char* const kProgramHeader;  // {0} namespace, {1} worker declarations
extern const char* const kApiHeader;      // {0} model, {1}/{2} input/output counts, {3}/{4} lists
extern const char* const kApiSource;      // {0}/{1} input/output element counts
extern const char* const kMainSource;     // no arguments
extern const char* const kCleaveLibrary;  // {0} cleave root, {1} cleave build (C++20, Release)
extern const char* const kCMakeLists;     // {0} model, {1} kCleaveLibrary, {2} worker sources
extern const char* const kReadme;         // see emit_cpp
extern const char* const kRunTimeReadme;  // {0} run-time steps (kReadme's {9} when any)

}  // namespace cleave::cpp_templates
