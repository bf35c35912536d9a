"""cleave.plan, inspect, schedule, stream_schedule, codegen and split: the CLI commands' calls."""

import json

import numpy as np
import pytest

import cleave
from conftest import CORPUS_MODEL, SOURCE_DIR


def test_plan_gives_a_plan_with_its_file_prediction_and_chart(branchy_path):
    plan = cleave.plan(branchy_path, strategy="lc", workers=2, costs="static")
    assert plan.strategy == "lc" and plan.workers == 2
    assert plan.predicted_seconds > 0
    assert json.loads(plan.to_json())["strategy"] == "lc"
    assert "<svg" in plan.gantt_svg()


def test_auto_plan_lists_the_candidates_it_compared(branchy_path):
    plan = cleave.plan(branchy_path, costs="static")
    names = [name for name, _ in plan.candidates]
    assert "sequential" in names and plan.strategy in names


def test_a_session_runs_a_plan_object(branchy_path):
    plan = cleave.plan(branchy_path, strategy="lc", workers=2, costs="static")
    x = np.random.default_rng(9).standard_normal((16, 64)).astype(np.float32)
    planned = cleave.InferenceSession(branchy_path, plan=plan)
    (y,) = planned.run(None, {"x": x})
    (expected,) = cleave.InferenceSession(branchy_path).run(None, {"x": x})
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    assert planned.prepared()[0]["strategy"] == "lc"


def test_plan_refuses_bad_arguments(branchy_path):
    with pytest.raises(ValueError, match="strategy"):
        cleave.plan(branchy_path, strategy="fastest")
    with pytest.raises(ValueError, match="workers"):
        cleave.plan(branchy_path, workers=0)
    with pytest.raises(TypeError, match="model"):
        cleave.plan(3)


def test_inspect_reports_the_model_as_a_dict():
    report = cleave.inspect(CORPUS_MODEL)
    assert report["model"] == str(CORPUS_MODEL)
    assert report["node_count"] == 47
    assert report["inputs"] == [{"name": "input", "type": "f32[1,3,32,32]"}]


def test_schedule_plans_a_task_graph():
    plan = cleave.schedule(SOURCE_DIR / "fuzz" / "corpus_plan" / "task_graph.json", algo="heft")
    assert plan["makespan"] > 0


def test_schedule_refuses_an_unknown_algorithm():
    with pytest.raises(cleave.Error, match="unknown algorithm"):
        cleave.schedule(SOURCE_DIR / "fuzz" / "corpus_plan" / "task_graph.json", algo="magic")


def test_stream_schedule_gives_the_steady_state(tmp_path):
    program = tmp_path / "program.json"
    program.write_text(json.dumps({"pipeline": {"name": "top", "streams": [
        {"filter": {"name": "pairs", "pop": 2, "push": 1, "op": "concat", "args": [0]}},
        {"filter": {"name": "each", "pop": 1, "push": 1, "op": "identity"}}]}}))
    schedule = cleave.stream_schedule(program)
    assert schedule["repetitions"] == {"pairs": 1, "each": 1}
    assert schedule["input_per_iteration"] == 2 and schedule["output_per_iteration"] == 1


def test_stream_schedule_refuses_a_program_without_a_steady_state():
    with pytest.raises(cleave.Error, match="no steady state exists"):
        cleave.stream_schedule(SOURCE_DIR / "fuzz" / "corpus_stream" / "program.json")


def test_codegen_writes_a_program(branchy_path, tmp_path):
    out = tmp_path / "generated"
    report = cleave.codegen(branchy_path, lang="pytorch", out_dir=out)
    assert report["strategy"] == "sequential"
    assert any(out.iterdir())


def test_split_writes_the_folder_the_command_writes(tmp_path):
    out = tmp_path / "split"
    report = cleave.split(CORPUS_MODEL, nodes=2, dim="h", out_dir=out, speeds=[1, 3])
    assert report["output"] == str(out)
    assert (out / "manifest.json").is_file()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["machines"] == 2


def test_split_refuses_an_unknown_dim_naming_the_option(tmp_path):
    with pytest.raises(cleave.Error, match="--dim: expected h, w, c, hw or auto"):
        cleave.split(CORPUS_MODEL, nodes=2, dim="z", out_dir=tmp_path / "split")
    assert not (tmp_path / "split").exists()


def test_split_takes_nodes_as_an_int(tmp_path):
    with pytest.raises(TypeError, match="nodes: expected an int"):
        cleave.split(CORPUS_MODEL, nodes="2", out_dir=tmp_path / "split")
