// ShapeMaps: boxes, interval sets and their text form.
#include "spatial/shape_map.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include "ir/text.h"

namespace cleave {

Interval intersect(const Interval& a, const Interval& b) {
  Interval r{std::max(a.begin, b.begin), std::min(a.end, b.end)};
  if (r.end < r.begin) r.end = r.begin;
  return r;
}

Box full_box(const std::vector<int64_t>& sizes) {
  Box box;
  for (int64_t s : sizes) box.push_back({0, s});
  return box;
}

Box intersect(const Box& a, const Box& b) {
  Box r(a.size());
  for (std::size_t d = 0; d < a.size(); ++d) r[d] = intersect(a[d], b[d]);
  return r;
}

bool box_empty(const Box& box) {
  return std::any_of(box.begin(), box.end(), [](const Interval& i) { return i.empty(); });
}

bool box_contains(const Box& outer, const Box& inner) {
  if (box_empty(inner)) return true;
  for (std::size_t d = 0; d < outer.size(); ++d)
    if (!outer[d].contains(inner[d])) return false;
  return true;
}

Box bounding_box(const Box& a, const Box& b) {
  if (box_empty(a)) return b;
  if (box_empty(b)) return a;
  Box r(a.size());
  for (std::size_t d = 0; d < a.size(); ++d)
    r[d] = {std::min(a[d].begin, b[d].begin), std::max(a[d].end, b[d].end)};
  return r;
}

int64_t box_elements(const Box& box) {
  int64_t n = 1;
  for (const Interval& i : box) n *= i.size();
  return n;
}

std::vector<int64_t> box_sizes(const Box& box) {
  std::vector<int64_t> s;
  for (const Interval& i : box) s.push_back(i.size());
  return s;
}

Box relative_box(const Box& inner, const Box& outer) {
  Box r(inner.size());
  for (std::size_t d = 0; d < inner.size(); ++d)
    r[d] = {inner[d].begin - outer[d].begin, inner[d].end - outer[d].begin};
  return r;
}

std::string print_box(const Box& box) {
  std::string s = "[";
  for (std::size_t d = 0; d < box.size(); ++d) {
    if (d) s += ", ";
    s += std::to_string(box[d].begin) + ":" + std::to_string(box[d].end);
  }
  return s + "]";
}

TensorMap& ShapeMap::add(const std::string& name, DataType dtype, std::vector<int64_t> sizes) {
  if (!tensors_.count(name)) order_.push_back(name);
  TensorMap& t = tensors_[name];
  t.dtype = dtype;
  t.machines.assign(machines_, std::vector<IntervalSet>(sizes.size()));
  t.sizes = std::move(sizes);
  return t;
}

void ShapeMap::set_box(const std::string& name, int machine, const Box& box) {
  TensorMap& t = tensors_.at(name);
  auto& dims = t.machines.at(machine);
  for (std::size_t d = 0; d < dims.size(); ++d) {
    dims[d].clear();
    if (!box_empty(box)) dims[d].push_back(box[d]);
  }
}

const TensorMap& ShapeMap::at(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error("shape map: no tensor '" + name + "'");
  return it->second;
}

TensorMap& ShapeMap::at(const std::string& name) {
  return const_cast<TensorMap&>(static_cast<const ShapeMap&>(*this).at(name));
}

std::string print_shape_map(const ShapeMap& map) {
  std::ostringstream out;
  out << "shapemap " << map.machines() << " {\n";
  for (const std::string& name : map.names()) {
    const TensorMap& t = map.at(name);
    out << "  %" << name << ": " << print_type(t.dtype, Shape::of(t.sizes)) << "\n";
    for (int m = 0; m < map.machines(); ++m) {
      out << "    m" << m << ": [";
      for (std::size_t d = 0; d < t.sizes.size(); ++d) {
        if (d) out << ", ";
        const IntervalSet& set = t.machines[m][d];
        if (set.empty()) out << "-";
        for (std::size_t k = 0; k < set.size(); ++k)
          out << (k ? "|" : "") << set[k].begin << ":" << set[k].end;
      }
      out << "]\n";
    }
  }
  out << "}\n";
  return out.str();
}

namespace {

[[noreturn]] void fail(int line, const std::string& what) {
  throw Error("shape map line " + std::to_string(line) + ": " + what);
}

std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

int64_t parse_int(const std::string& s, int line) {
  try {
    std::size_t used = 0;
    int64_t v = std::stoll(s, &used);
    if (used != s.size()) fail(line, "expected an integer, got '" + s + "'");
    return v;
  } catch (const std::logic_error&) {
    fail(line, "expected an integer, got '" + s + "'");
  }
}

}  // namespace

ShapeMap parse_shape_map(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string raw;
  int line = 0;
  std::optional<ShapeMap> map;
  std::string current;
  bool closed = false;
  while (std::getline(in, raw)) {
    ++line;
    std::string s = trim(raw);
    if (s.empty()) continue;
    if (!map) {
      if (s.rfind("shapemap ", 0) != 0 || s.back() != '{') fail(line, "expected 'shapemap N {'");
      int64_t n = parse_int(trim(s.substr(9, s.size() - 10)), line);
      if (n < 1 || n > 4096) fail(line, "machine count must be 1..4096");
      map.emplace(static_cast<int>(n));
      continue;
    }
    if (s == "}") {
      closed = true;
      break;
    }
    if (s[0] == '%') {
      std::size_t colon = s.find(": ");
      if (colon == std::string::npos) fail(line, "expected '%name: type'");
      Graph scratch = parse_graph("graph g (%t: " + s.substr(colon + 2) + ") {\n return %t\n}");
      const Value& v = scratch.value(scratch.inputs().at(0));
      if (!v.shape.is_static()) fail(line, "tensor type must have a static shape");
      current = s.substr(1, colon - 1);
      map->add(current, v.dtype, v.shape.sizes());
      continue;
    }
    if (s[0] != 'm' || current.empty()) fail(line, "expected '%tensor: type' or 'mN: [...]'");
    std::size_t colon = s.find(':');
    int64_t m = parse_int(s.substr(1, colon - 1), line);
    if (m < 0 || m >= map->machines()) fail(line, "machine index out of range");
    std::string body = trim(s.substr(colon + 1));
    if (body.size() < 2 || body.front() != '[' || body.back() != ']') fail(line, "expected [...]");
    body = body.substr(1, body.size() - 2);
    const std::vector<int64_t>& sizes = map->at(current).sizes;
    std::vector<IntervalSet> dims;
    std::stringstream parts(body);
    std::string part;
    while (std::getline(parts, part, ',')) {
      part = trim(part);
      IntervalSet set;
      if (part != "-") {
        std::stringstream ranges(part);
        std::string range;
        while (std::getline(ranges, range, '|')) {
          std::size_t c = range.find(':');
          if (c == std::string::npos) fail(line, "expected begin:end, got '" + range + "'");
          Interval i{parse_int(trim(range.substr(0, c)), line),
                     parse_int(trim(range.substr(c + 1)), line)};
          std::size_t d = dims.size();
          if (d >= sizes.size() || i.begin < 0 || i.end > sizes[d] || i.begin >= i.end ||
              (!set.empty() && i.begin < set.back().end))
            fail(line, "range " + range + " of dimension " + std::to_string(d) +
                           " is empty, unsorted or outside the tensor");
          set.push_back(i);
        }
      }
      dims.push_back(std::move(set));
    }
    if (dims.size() != sizes.size()) fail(line, "expected one range list per dimension");
    map->at(current).machines[m] = std::move(dims);
  }
  if (!map) throw Error("shape map: empty text");
  if (!closed) fail(line, "missing closing '}'");
  return *map;
}

}  // namespace cleave
