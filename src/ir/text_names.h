// Internal to the graph text form: how names are written, shared by its printer and parser.
#pragma once

#include <string>
#include <string_view>

namespace cleave::text_detail {

/// Letters, digits, '_', '.' and '-': a name made only of them is written bare.
bool is_plain_name_char(char c);
/// A double-quoted string literal with escapes.
std::string quote(std::string_view text);
/// The name bare when every character is plain, else quoted.
std::string name_token(std::string_view name);

}  // namespace cleave::text_detail
