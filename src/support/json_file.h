// Reading JSON files with errors that name the file and the field path (tasks[3].time[1]).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cleave {

/// Reads and parses the JSON file at `path`; `what` says what it should be ("plan file").
/// Throws Error naming the file for a missing file, a folder, an unreadable file or bad JSON
/// (with the parser's line and column).
nlohmann::json read_json_file(const std::string& path, std::string_view what);
/// Parses `text` as JSON read from `origin` (a file name); `what` says what it should be.
/// Throws Error naming the origin, the line and column where known, and the reason in words
/// (a number too large for a double is "number out of range"), never the parser's codes.
nlohmann::json parse_json_text(std::string_view text, const std::string& origin,
                               std::string_view what);

/// The reason an nlohmann exception gives, without its "[json.exception.kind.N] " prefix.
std::string json_exception_reason(const nlohmann::json::exception& error);

/// A value inside a JSON document together with where it is ("p.json: tasks[3].time[1]"), so
/// that every typed getter can throw an Error naming the file, the field and the expectation.
class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string origin, std::string field = {});

  /// "origin: field" (or just the origin at the document's root).
  std::string where() const;
  const nlohmann::json& json() const { return *value_; }
  const std::string& field() const { return field_; }

  /// Requires an object holding `key`; the member, located.
  JsonField at(std::string_view key) const;
  /// Requires an object; the member when present (and not null when `null_is_missing`).
  std::optional<JsonField> find(std::string_view key, bool null_is_missing = false) const;
  /// Requires an array with more than `index` elements.
  JsonField at(std::size_t index) const;
  /// Requires an array; its length.
  std::size_t size() const;

  void expect_object() const;
  void expect_array() const;
  std::string string() const;
  bool boolean() const;
  /// A finite number.
  double number() const;
  /// A finite number >= 0 (times, bytes).
  double non_negative() const;
  /// An integer in [minimum, maximum].
  int64_t integer(int64_t minimum, int64_t maximum) const;

  /// Throws Error "<where>: expected <expectation>, got <value>".
  [[noreturn]] void fail(std::string_view expectation) const;

 private:
  const nlohmann::json* value_;
  std::string origin_;
  std::string field_;
};

/// A short rendering of a JSON value for messages (long values are cut with "...").
std::string show_json(const nlohmann::json& value);

}  // namespace cleave
