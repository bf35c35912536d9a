// The activations of RNN, GRU and LSTM nodes: ONNX's names, their alpha and beta, their values.
#include "runtime/kernels/nn/recurrent_activations.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "support/error.h"

namespace cleave {

namespace {

// An ONNX name, how many of alpha and beta it consumes, and its operator's defaults for them.
struct ActivationKind {
  const char* name;
  int alphas, betas;
  float alpha, beta;
};

constexpr ActivationKind kKinds[] = {
    {"Relu", 0, 0, 0.0f, 0.0f},       {"Tanh", 0, 0, 0.0f, 0.0f},
    {"Sigmoid", 0, 0, 0.0f, 0.0f},    {"Affine", 1, 1, 1.0f, 0.0f},
    {"LeakyRelu", 1, 0, 0.01f, 0.0f}, {"ThresholdedRelu", 1, 0, 1.0f, 0.0f},
    {"ScaledTanh", 1, 1, 1.0f, 1.0f}, {"HardSigmoid", 1, 1, 0.2f, 0.5f},
    {"Elu", 1, 0, 1.0f, 0.0f},        {"Softsign", 0, 0, 0.0f, 0.0f},
    {"Softplus", 0, 0, 0.0f, 0.0f}};

const ActivationKind& kind_of(const std::string& name, const std::string& where) {
  for (const ActivationKind& kind : kKinds) {
    if (name == kind.name) return kind;
  }
  std::vector<std::string> names;
  for (const ActivationKind& kind : kKinds) names.emplace_back(kind.name);
  throw Error(fmt::format("{}: activation '{}' is not one of ONNX's ({})", where, name,
                          fmt::join(names, ", ")));
}

std::vector<std::string> default_names(RecurrentCell cell) {
  switch (cell) {
    case RecurrentCell::kRnn:
      return {"Tanh"};
    case RecurrentCell::kGru:
      return {"Sigmoid", "Tanh"};
    case RecurrentCell::kLstm:
      return {"Sigmoid", "Tanh", "Tanh"};
  }
  return {};
}

}  // namespace

std::size_t recurrent_functions_per_direction(RecurrentCell cell) {
  return default_names(cell).size();
}

std::vector<RecurrentActivation> recurrent_activations(const Node& node, RecurrentCell cell,
                                                       int64_t directions,
                                                       const std::string& where) {
  const std::vector<std::string> defaults = default_names(cell);
  const std::size_t count = defaults.size() * static_cast<std::size_t>(directions);
  std::vector<std::string> names;
  if (const Attribute* given = node.attribute("activations")) names = given->strings;
  if (names.empty()) {
    for (int64_t d = 0; d < directions; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != count) {
    throw Error(fmt::format("{}: activations should name {} functions, names {}", where, count,
                            names.size()));
  }
  std::vector<float> alphas, betas;
  if (const Attribute* given = node.attribute("activation_alpha")) alphas = given->floats;
  if (const Attribute* given = node.attribute("activation_beta")) betas = given->floats;
  std::size_t next_alpha = 0, next_beta = 0;
  std::vector<RecurrentActivation> out;
  for (const std::string& name : names) {
    const ActivationKind& kind = kind_of(name, where);
    RecurrentActivation a{name, kind.alpha, kind.beta};
    if (kind.alphas > 0 && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (kind.betas > 0 && next_beta < betas.size()) a.beta = betas[next_beta++];
    out.push_back(a);
  }
  return out;
}

std::function<double(double)> recurrent_activation_function(const RecurrentActivation& a) {
  const double alpha = a.alpha, beta = a.beta;
  const std::string& name = a.name;
  if (name == "Sigmoid") return [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  if (name == "Tanh") return [](double x) { return std::tanh(x); };
  if (name == "Relu") return [](double x) { return std::max(0.0, x); };
  if (name == "Affine") return [=](double x) { return alpha * x + beta; };
  if (name == "LeakyRelu") return [=](double x) { return x >= 0 ? x : alpha * x; };
  if (name == "ThresholdedRelu") return [=](double x) { return x > alpha ? x : 0.0; };
  if (name == "ScaledTanh") return [=](double x) { return alpha * std::tanh(beta * x); };
  if (name == "HardSigmoid")
    return [=](double x) { return std::clamp(alpha * x + beta, 0.0, 1.0); };
  if (name == "Elu") return [=](double x) { return x >= 0 ? x : alpha * std::expm1(x); };
  if (name == "Softsign") return [](double x) { return x / (1 + std::abs(x)); };
  if (name == "Softplus") return [](double x) { return std::log1p(std::exp(x)); };
  throw Error(fmt::format("recurrent activation '{}' is not one of ONNX's", name));
}

}  // namespace cleave
