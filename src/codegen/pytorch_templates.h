// The fixed texts of a generated PyTorch folder, as fmt templates (arguments noted per text).
#pragma once

namespace cleave::pytorch_templates {

extern const char* const kRuntime;    // appended to model.py as is: the worker runners
extern const char* const kRunScript;  // run.py: {name} the model
extern const char* const
    kReadme;  // README.md: {name} {strategy} {workers} {threads} {nodes} {channels} {input}

}  // namespace cleave::pytorch_templates
