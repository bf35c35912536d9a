"""cleave from Python: ONNX Runtime's session interface on cleave's engine (`import cleave as
onnxruntime` runs a script written for ONNX Runtime), and cleave's planners one call away."""

from ._cleave import Error, Plan
from ._session import (ExecutionMode, GraphOptimizationLevel, InferenceSession, ModelMetadata,
                       NodeArg, RunOptions, SessionOptions, get_all_providers,
                       get_available_providers, get_device)
from ._tools import codegen, inspect, plan, schedule, split, stream_schedule

__version__ = "0.1.0"

__all__ = [
    "Error", "ExecutionMode", "GraphOptimizationLevel", "InferenceSession", "ModelMetadata",
    "NodeArg", "Plan", "RunOptions", "SessionOptions", "codegen", "get_all_providers",
    "get_available_providers", "get_device", "inspect", "plan", "schedule", "split",
    "stream_schedule",
]
