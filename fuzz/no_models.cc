// The stream fuzz targets read programs without their models (load_models = false), so the
// ONNX loader and the passes behind it stay out of them: this stands in for load_model.
#include "frontend/load.h"

namespace cleave {

Graph load_model(const std::string& path, const LoadOptions&) {
  throw Error("fuzz targets load no models: " + path);
}

}  // namespace cleave
