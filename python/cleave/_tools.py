"""cleave's planners, schedulers, stream scheduler and code generator, one call each."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _cleave
from ._cleave import Plan

PathLike = Union[str, "os.PathLike[str]"]


def _path(name: str, value: Any) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a file path, got {type(value).__name__}")
    return os.fspath(value)


def _shapes(shapes: Optional[Mapping[str, Sequence[int]]]) -> Dict[str, list]:
    if shapes is None:
        return {}
    if not isinstance(shapes, Mapping):
        raise TypeError("shapes: expected a dict of input name to dims")
    return {str(name): [int(d) for d in dims] for name, dims in shapes.items()}


def plan(model: PathLike, strategy: str = "auto", workers: int = 2, threads_per_worker: int = 1,
         machine: Optional[PathLike] = None, costs: str = "profile", samples: int = 1,
         time_limit: float = 10.0, shapes: Optional[Mapping[str, Sequence[int]]] = None) -> Plan:
    """Plans the model as `cleave plan` does: costs (profile, static or analytical), then the
    strategy ("auto" picks the fastest prediction) over `workers` workers of
    `threads_per_worker` threads, or the devices of a machine file. `shapes` fixes symbolic
    input dims. Returns a Plan (to_json(), save(), predicted_seconds, gantt_svg()), which
    InferenceSession(model, plan=...) runs."""
    if costs not in ("profile", "static", "analytical"):
        raise ValueError(f"costs: expected profile, static or analytical, got '{costs}'")
    return _cleave._plan(_path("model", model), strategy, workers, threads_per_worker,
                         _path("machine", machine) if machine is not None else "", costs,
                         samples, float(time_limit), _shapes(shapes))


def inspect(model: PathLike) -> Dict[str, Any]:
    """`cleave inspect --json`: sizes, FLOPs, op histogram and static critical path."""
    return json.loads(_cleave._inspect(_path("model", model)))


def schedule(task_graph: PathLike, algo: str = "heft", time_limit: float = 10.0,
             seed: int = 1) -> Dict[str, Any]:
    """`cleave schedule TASK_GRAPH --algo ALGO`: the plan of a task-graph JSON file as a dict."""
    return json.loads(_cleave._schedule(_path("task_graph", task_graph), algo, float(time_limit), int(seed)))


def stream_schedule(program: PathLike) -> Dict[str, Any]:
    """`cleave stream schedule PROGRAM --json`: the steady-state schedule of a stream program."""
    return json.loads(_cleave._stream_schedule(_path("program", program)))


def codegen(model: PathLike, lang: str = "cpp", out_dir: PathLike = "generated",
            plan: Optional[PathLike] = None, threads: int = 1, force: bool = False) -> Dict[str, Any]:
    """`cleave codegen MODEL --lang cpp|pytorch -o OUT_DIR [--plan FILE]`: writes the program
    (sequential unless a plan file is given) and returns the summary."""
    return json.loads(_cleave._codegen(_path("model", model), lang, _path("out_dir", out_dir),
                                       _path("plan", plan) if plan is not None else None,
                                       int(threads), bool(force)))


def split(model: PathLike, nodes: int, dim: str = "h", out_dir: PathLike = "split",
          speeds: Optional[Sequence[float]] = None, machine: Optional[PathLike] = None,
          search: bool = False, shapes: Optional[Mapping[str, Sequence[int]]] = None,
          force: bool = False) -> Dict[str, Any]:
    """`cleave split MODEL --nodes N --dim D -o OUT_DIR`: cuts every layer across `nodes`
    machines (dim h, w, c, hw or auto; `speeds` as relative shares) and writes the per-machine
    ONNX sub-models and their manifest into out_dir (whole or not at all). Returns the report."""
    if not isinstance(nodes, int) or isinstance(nodes, bool):
        raise TypeError(f"nodes: expected an int, got {type(nodes).__name__}")
    if not isinstance(dim, str):
        raise TypeError(f"dim: expected a str, got {type(dim).__name__}")
    speed_text = None
    if speeds is not None:
        if isinstance(speeds, (str, bytes)) or not isinstance(speeds, Sequence):
            raise TypeError("speeds: expected a sequence of numbers")
        speed_text = ",".join(repr(float(s)) for s in speeds)
    return json.loads(_cleave._split(_path("model", model), nodes, dim, _path("out_dir", out_dir),
                                     speed_text,
                                     _path("machine", machine) if machine is not None else "",
                                     bool(search), _shapes(shapes), bool(force)))
