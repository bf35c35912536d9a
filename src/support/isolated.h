// Runs a piece of work in a forked child process, so that a library that aborts cannot take
// cleave down with it (CBC 2.10 as Debian ships it keeps its assertions).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cleave {

/// Runs `work` in a child process and returns the bytes it produced. nullopt when the child
/// died (a failed assertion, a signal), produced nothing, or ran past `timeout_seconds` (it is
/// then killed); `failure` then says which. When the process cannot fork, `work` runs here.
std::optional<std::vector<char>> run_isolated(const std::function<std::vector<char>()>& work,
                                              double timeout_seconds, std::string* failure);

/// Runs every work in a child process of its own, all at once, and returns what each produced
/// (nullopt and its entry in `failures` as for run_isolated). Children still running after
/// `timeout_seconds` are killed.
std::vector<std::optional<std::vector<char>>> run_isolated_all(
    const std::vector<std::function<std::vector<char>()>>& works, double timeout_seconds,
    std::vector<std::string>* failures);

}  // namespace cleave
