// Located JSON reading: the file, then a field path, in every message.
#include "support/json_file.h"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/error.h"

namespace cleave {

std::string show_json(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

nlohmann::json read_json_file(const std::string& path, std::string_view what) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw Error(fmt::format("{}: is a folder, expected a {}", path, what));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(fmt::format("{}: cannot open the {}: {}", path, what, std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("{}: cannot read the {}", path, what));
  return parse_json_text(text.str(), path, what);
}

std::string json_exception_reason(const nlohmann::json::exception& error) {
  // what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
  std::string message = error.what();
  if (message.starts_with("[json.exception.")) {
    const std::size_t at = message.find("] ");
    if (at != std::string::npos) message = message.substr(at + 2);
  }
  return message;
}

nlohmann::json parse_json_text(std::string_view text, const std::string& origin,
                               std::string_view what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::out_of_range& e) {
    // The parser's only out_of_range (406) is a number beyond a double, and it carries no
    // position: find the token it quotes to say where it is.
    const std::string reason = e.what();
    const std::size_t open = reason.find('\'');
    const std::size_t close = reason.rfind('\'');
    const std::string token =
        open != std::string::npos && close > open ? reason.substr(open + 1, close - open - 1) : "";
    const std::size_t at = token.empty() ? std::string_view::npos : text.find(token);
    if (at == std::string_view::npos) {
      throw Error(
          fmt::format("{}: number out of range in the {} (beyond a double's range)", origin, what));
    }
    const std::string_view before = text.substr(0, at);
    const std::size_t line =
        1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t line_start = before.rfind('\n');
    const std::size_t column = at - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    throw Error(fmt::format(
        "{}: line {}, column {}: number out of range: {} is beyond a double's range (expected a "
        "{})",
        origin, line, column, token, what));
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON (expected a {}): {}", origin, what,
                            json_exception_reason(e)));
  }
}

JsonField::JsonField(const nlohmann::json& value, std::string origin, std::string field)
    : value_(&value), origin_(std::move(origin)), field_(std::move(field)) {}

std::string JsonField::where() const {
  return field_.empty() ? origin_ : fmt::format("{}: {}", origin_, field_);
}

void JsonField::fail(std::string_view expectation) const {
  throw Error(fmt::format("{}: expected {}, got {}", where(), expectation, show_json(*value_)));
}

void JsonField::expect_object() const {
  if (!value_->is_object()) fail("an object");
}

void JsonField::expect_array() const {
  if (!value_->is_array()) fail("an array");
}

JsonField JsonField::at(std::string_view key) const {
  expect_object();
  const std::string name(key);
  const std::string path = field_.empty() ? name : field_ + "." + name;
  const auto found = value_->find(name);
  if (found == value_->end()) {
    throw Error(fmt::format("{}: {}: missing, expected a field \"{}\"", origin_, path, name));
  }
  return JsonField(*found, origin_, path);
}

std::optional<JsonField> JsonField::find(std::string_view key, bool null_is_missing) const {
  expect_object();
  const std::string name(key);
  const auto found = value_->find(name);
  if (found == value_->end() || (null_is_missing && found->is_null())) return std::nullopt;
  return JsonField(*found, origin_, field_.empty() ? name : field_ + "." + name);
}

JsonField JsonField::at(std::size_t index) const {
  expect_array();
  const std::string path = fmt::format("{}[{}]", field_, index);
  if (index >= value_->size()) {
    throw Error(
        fmt::format("{}: {}: missing, the array has {} elements", origin_, path, value_->size()));
  }
  return JsonField((*value_)[index], origin_, path);
}

std::size_t JsonField::size() const {
  expect_array();
  return value_->size();
}

std::string JsonField::string() const {
  if (!value_->is_string()) fail("a string");
  return value_->get<std::string>();
}

bool JsonField::boolean() const {
  if (!value_->is_boolean()) fail("true or false");
  return value_->get<bool>();
}

double JsonField::number() const {
  if (!value_->is_number() || !std::isfinite(value_->get<double>())) fail("a finite number");
  return value_->get<double>();
}

double JsonField::non_negative() const {
  if (!value_->is_number() || !std::isfinite(value_->get<double>()) || value_->get<double>() < 0) {
    fail("a finite number >= 0");
  }
  return value_->get<double>();
}

int64_t JsonField::integer(int64_t minimum, int64_t maximum) const {
  const std::string expectation = fmt::format("an integer from {} to {}", minimum, maximum);
  if (value_->is_number_unsigned()) {
    // nlohmann stores every non-negative integer unsigned: 0 must still meet a minimum of 1.
    const uint64_t value = value_->get<uint64_t>();
    if (value > static_cast<uint64_t>(maximum) ||
        (minimum > 0 && value < static_cast<uint64_t>(minimum))) {
      fail(expectation);
    }
    return static_cast<int64_t>(value);
  }
  if (!value_->is_number_integer()) fail(expectation);
  const int64_t value = value_->get<int64_t>();
  if (value < minimum || value > maximum) fail(expectation);
  return value;
}

}  // namespace cleave
