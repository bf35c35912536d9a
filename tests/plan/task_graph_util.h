// Test helpers: task graphs written as JSON text, and the error message a bad one gives.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "ir/graph.h"
#include "plan/task_graph.h"

namespace cleave::testing {

inline TaskGraph graph_from_text(const std::string& text) {
  return task_graph_from_json(nlohmann::json::parse(text), "g.json");
}

inline std::string graph_error(const std::string& text) {
  try {
    graph_from_text(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace cleave::testing
