"""ONNX Runtime's session interface (InferenceSession, SessionOptions, ...) on cleave's engine."""

from __future__ import annotations

import datetime
import enum
import os
import tempfile
import warnings
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _cleave

_CPU = "CPUExecutionProvider"


def get_available_providers() -> List[str]:
    """The execution providers this build runs: cleave runs on the CPU only."""
    return [_CPU]


def get_all_providers() -> List[str]:
    """Every provider name cleave knows (the ones it runs)."""
    return [_CPU]


def get_device() -> str:
    """The device sessions run on, as ONNX Runtime names it."""
    return "CPU"


class ExecutionMode(enum.IntEnum):
    """ORT_SEQUENTIAL runs one node after another on intra_op_num_threads threads;
    ORT_PARALLEL runs a cleave plan (chosen by "auto") over inter_op_num_threads workers of
    intra_op_num_threads threads each."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class GraphOptimizationLevel(enum.IntEnum):
    """ORT_DISABLE_ALL runs the model as written (no graph passes); every other level runs all
    of cleave's passes."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name}: expected an int >= {low}, got {value}")
    return value


class SessionOptions:
    """ONNX Runtime's SessionOptions. Options cleave has no use for are kept and ignored, as
    ONNX Runtime ignores them on a provider they do not concern. Session config entries whose
    key starts with "cleave." tune cleave itself: cleave.strategy (a planner, instead of
    "auto" under ORT_PARALLEL), cleave.costs (profile, static, analytical), cleave.auto_check
    ("0" keeps auto's pick untimed), cleave.max_prepared_shapes."""

    def __init__(self) -> None:
        self._intra_op_num_threads = 0
        self._inter_op_num_threads = 0
        self._execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self._graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self._log_severity_level = 2
        self.log_verbosity_level = 0
        self.enable_profiling = False
        self.profile_file_prefix = "cleave_profile"
        self.optimized_model_filepath = ""
        self.logid = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.use_deterministic_compute = False
        self._config: Dict[str, str] = {}

    @property
    def intra_op_num_threads(self) -> int:
        return self._intra_op_num_threads

    @intra_op_num_threads.setter
    def intra_op_num_threads(self, value: int) -> None:
        self._intra_op_num_threads = _check_int("intra_op_num_threads", value, 0)

    @property
    def inter_op_num_threads(self) -> int:
        return self._inter_op_num_threads

    @inter_op_num_threads.setter
    def inter_op_num_threads(self, value: int) -> None:
        self._inter_op_num_threads = _check_int("inter_op_num_threads", value, 0)

    @property
    def execution_mode(self) -> ExecutionMode:
        return self._execution_mode

    @execution_mode.setter
    def execution_mode(self, value: ExecutionMode) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"execution_mode: expected an ExecutionMode, got {type(value).__name__}")
        self._execution_mode = ExecutionMode(value)

    @property
    def graph_optimization_level(self) -> GraphOptimizationLevel:
        return self._graph_optimization_level

    @graph_optimization_level.setter
    def graph_optimization_level(self, value: GraphOptimizationLevel) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"graph_optimization_level: expected a GraphOptimizationLevel, got {type(value).__name__}")
        self._graph_optimization_level = GraphOptimizationLevel(value)

    @property
    def log_severity_level(self) -> int:
        return self._log_severity_level

    @log_severity_level.setter
    def log_severity_level(self, value: int) -> None:
        level = _check_int("log_severity_level", value, 0)
        if level > 4:
            raise ValueError(f"log_severity_level: expected 0 (verbose) to 4 (fatal), got {level}")
        self._log_severity_level = level

    def add_session_config_entry(self, key: str, value: str) -> None:
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("add_session_config_entry: key and value must be str")
        self._config[key] = value

    def get_session_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise RuntimeError(f"SessionOptions: no config entry '{key}'")
        return self._config[key]

    def add_free_dimension_override_by_name(self, name: str, value: int) -> None:
        """Accepted for compatibility; cleave prepares each input shape as it comes."""
        _check_int("add_free_dimension_override_by_name", value, 1)


class RunOptions:
    """ONNX Runtime's RunOptions: accepted; a cleave run is not cancelled or tagged."""

    def __init__(self) -> None:
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False


class NodeArg:
    """An input or output of the model: name, shape (ints, symbols as str, None) and type."""

    def __init__(self, name: str, shape: List[Union[int, str, None]], type: str) -> None:
        self.name = name
        self.shape = shape
        self.type = type

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """What the model file says about itself (ONNX Runtime's ModelMetadata)."""

    def __init__(self, meta: Dict[str, Any]) -> None:
        self.producer_name: str = meta["producer_name"]
        self.graph_name: str = meta["graph_name"]
        self.description: str = meta["model_description"]
        self.graph_description: str = meta["description"]
        self.domain: str = meta["domain"]
        self.version: int = meta["version"]
        self.custom_metadata_map: Dict[str, str] = dict(meta["custom_metadata_map"])


def _provider_names(providers: Optional[Sequence[Any]]) -> List[str]:
    if providers is None:
        return [_CPU]
    if isinstance(providers, (str, bytes)) or not isinstance(providers, (list, tuple)):
        raise TypeError("providers: expected a list of provider names or (name, options) tuples")
    names = []
    for provider in providers:
        name = provider[0] if isinstance(provider, tuple) else provider
        if not isinstance(name, str):
            raise TypeError("providers: expected a list of provider names or (name, options) tuples")
        names.append(name)
    for name in names:
        if name != _CPU:
            # ONNX Runtime's words and behaviour: warn and run on the providers it has.
            warnings.warn(
                f"Specified provider '{name}' is not in available provider names."
                f"Available providers: '{_CPU}'", UserWarning, stacklevel=3)
    return [_CPU]


def _core_options(options: SessionOptions, plan_file: str) -> "_cleave.CoreOptions":
    core = _cleave.CoreOptions()
    # The affinity mask and a container's CPU limit, not the host's count: a session in a
    # container of 2 CPUs on a 64-core host must not start 64 threads.
    cores = _cleave.usable_cores()
    intra = options.intra_op_num_threads
    config = options._config
    if options.execution_mode == ExecutionMode.ORT_PARALLEL:
        core.strategy = config.get("cleave.strategy", "auto")
        core.workers = options.inter_op_num_threads or max(2, min(cores, 4))
        core.threads_per_worker = intra or 1
        core.threads = core.workers * core.threads_per_worker
    else:
        core.strategy = config.get("cleave.strategy", "")
        core.threads = intra or cores
    core.plan_file = plan_file
    core.optimize = options.graph_optimization_level != GraphOptimizationLevel.ORT_DISABLE_ALL
    core.costs = config.get("cleave.costs", "profile")
    if core.costs not in ("profile", "static", "analytical"):
        raise ValueError(f"cleave.costs: expected profile, static or analytical, got '{core.costs}'")
    core.auto_check = config.get("cleave.auto_check", "1") != "0"
    try:
        core.max_prepared_shapes = int(config.get("cleave.max_prepared_shapes", "8"))
    except ValueError:
        raise ValueError("cleave.max_prepared_shapes: expected an integer") from None
    core.verbose = options.log_severity_level == 0
    core.profile = bool(options.enable_profiling)
    core.optimized_model_path = os.fspath(options.optimized_model_filepath or "")
    return core


class InferenceSession:
    """ONNX Runtime's InferenceSession on cleave's engine: the model is loaded once and each
    input shape is prepared (optimised, planned, buffers laid out) the first time it is run,
    then cached. `plan` runs a cleave.Plan (or a plan file from `cleave plan`) instead."""

    def __init__(self, path_or_bytes: Union[str, bytes, os.PathLike], sess_options: Optional[SessionOptions] = None,
                 providers: Optional[Sequence[Any]] = None, provider_options: Optional[Sequence[Dict[str, Any]]] = None,
                 plan: Any = None, **kwargs: Any) -> None:
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise TypeError(f"sess_options: expected a SessionOptions, got {type(sess_options).__name__}")
        if isinstance(path_or_bytes, (bytes, bytearray)):
            model: Union[str, bytes] = bytes(path_or_bytes)
            self._model_path = ""
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            model = os.fspath(path_or_bytes)
            self._model_path = model
        else:
            raise TypeError(
                f"path_or_bytes: expected a model path or the model's bytes, got {type(path_or_bytes).__name__}")
        self._options = sess_options or SessionOptions()
        self._providers = _provider_names(providers)
        plan_file = self._plan_file(plan)
        self._core = _cleave.CoreSession(model, _core_options(self._options, plan_file))
        self._inputs = [NodeArg(*arg) for arg in self._core.inputs()]
        self._outputs = [NodeArg(*arg) for arg in self._core.outputs()]
        self._overridable = [NodeArg(*arg) for arg in self._core.overridable_initializers()]

    def _plan_file(self, plan: Any) -> str:
        if plan is None:
            return ""
        if isinstance(plan, (str, os.PathLike)):
            return os.fspath(plan)
        if isinstance(plan, _cleave.Plan):
            # The plan reaches the engine as a plan file, as `cleave run --plan` reads it.
            handle, path = tempfile.mkstemp(prefix="cleave_plan_", suffix=".json")
            os.close(handle)
            plan.save(path)
            self._plan_temp = path
            return path
        raise TypeError(f"plan: expected a cleave.Plan or a plan file path, got {type(plan).__name__}")

    def __del__(self) -> None:
        temp = getattr(self, "_plan_temp", None)
        if temp and os.path.exists(temp):
            os.remove(temp)

    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> List[NodeArg]:
        return list(self._overridable)

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._core.metadata())

    def get_providers(self) -> List[str]:
        return list(self._providers)

    def get_provider_options(self) -> Dict[str, Dict[str, str]]:
        return {name: {} for name in self._providers}

    def get_session_options(self) -> SessionOptions:
        return self._options

    def get_profiling_start_time_ns(self) -> int:
        return 0

    def set_providers(self, providers: Optional[Sequence[Any]] = None, provider_options: Any = None) -> None:
        self._providers = _provider_names(providers)

    def disable_fallback(self) -> None:
        """Accepted: cleave has one provider, so nothing falls back."""

    def enable_fallback(self) -> None:
        """Accepted: cleave has one provider, so nothing falls back."""

    def run(self, output_names: Optional[Sequence[str]], input_feed: Dict[str, Any],
            run_options: Optional[RunOptions] = None) -> List[Any]:
        """Runs the model on `input_feed` (input name -> NumPy array) and returns the outputs
        named (all when None or empty) as NumPy arrays. C-contiguous arrays of the input's type
        are read in place; others are converted first. Releases the GIL while the model runs."""
        if not isinstance(input_feed, dict):
            raise TypeError(f"input_feed: expected a dict of input name to array, got {type(input_feed).__name__}")
        if run_options is not None and not isinstance(run_options, RunOptions):
            raise TypeError(f"run_options: expected a RunOptions, got {type(run_options).__name__}")
        return self._core.run(output_names, input_feed)

    def end_profiling(self) -> str:
        """Writes the profile (a Chrome trace: preparations and runs) and returns its path;
        "" when profiling is off."""
        if not self._options.enable_profiling:
            return ""
        stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        return self._core.end_profiling(f"{self._options.profile_file_prefix}_{stamp}.json")

    # cleave's own views of the session.
    def prepared(self) -> List[Dict[str, Any]]:
        """Each input shape prepared so far: its dims, the plan that runs it and its workers."""
        return self._core.prepared()
