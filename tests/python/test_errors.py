"""Every error path raises the right exception: cleave.Error (a RuntimeError) with cleave's
message for models and inputs, TypeError / ValueError for bad arguments."""

import numpy as np
import pytest

import cleave


def test_error_is_a_runtime_error():
    assert issubclass(cleave.Error, RuntimeError)


def test_a_missing_model_file_names_the_file(tmp_path):
    missing = str(tmp_path / "nothing.onnx")
    with pytest.raises(cleave.Error, match="nothing.onnx"):
        cleave.InferenceSession(missing)


def test_model_bytes_that_are_not_a_model_are_refused():
    with pytest.raises(cleave.Error, match="<model bytes>"):
        cleave.InferenceSession(b"not a model at all")


def test_a_model_argument_of_another_type_is_a_type_error():
    with pytest.raises(TypeError, match="path_or_bytes"):
        cleave.InferenceSession(42)


def test_an_unknown_input_name_lists_the_inputs(batch_path):
    session = cleave.InferenceSession(batch_path)
    with pytest.raises(cleave.Error, match="no input is named 'z'; inputs are: x"):
        session.run(None, {"z": np.zeros((1, 8), np.float32)})


def test_a_missing_input_is_named(two_output_path):
    session = cleave.InferenceSession(two_output_path)
    with pytest.raises(cleave.Error, match=r"input 'n' \(tensor\(int64\)\) is missing"):
        session.run(None, {"x": np.zeros((2, 3), np.float32), "y": np.zeros((2, 3), np.float32)})


def test_a_wrong_rank_is_refused_naming_the_input(batch_path):
    session = cleave.InferenceSession(batch_path)
    with pytest.raises(cleave.Error, match="input 'x' has rank 2"):
        session.run(None, {"x": np.zeros((1, 8, 1), np.float32)})


def test_a_float_array_for_an_integer_input_is_a_type_error(two_output_path):
    session = cleave.InferenceSession(two_output_path)
    feed = {"x": np.zeros((2, 3), np.float32), "y": np.zeros((2, 3), np.float32),
            "n": np.array([1.5, 2.5])}
    with pytest.raises(TypeError, match="input 'n': expected an array of int64"):
        session.run(None, feed)


def test_an_unknown_output_name_lists_the_outputs(batch_path):
    session = cleave.InferenceSession(batch_path)
    with pytest.raises(cleave.Error, match="no output is named 'q'; outputs are: y"):
        session.run(["q"], {"x": np.zeros((1, 8), np.float32)})


@pytest.mark.parametrize("output_names", ["y", [3], 7])
def test_output_names_of_the_wrong_type_are_a_type_error(batch_path, output_names):
    session = cleave.InferenceSession(batch_path)
    with pytest.raises(TypeError, match="output_names"):
        session.run(output_names, {"x": np.zeros((1, 8), np.float32)})


def test_a_feed_that_is_not_a_dict_is_a_type_error(batch_path):
    session = cleave.InferenceSession(batch_path)
    with pytest.raises(TypeError, match="input_feed"):
        session.run(None, [np.zeros((1, 8), np.float32)])


def test_a_feed_of_objects_is_a_type_error(batch_path):
    session = cleave.InferenceSession(batch_path)
    with pytest.raises(TypeError, match="input 'x'"):
        session.run(None, {"x": np.array([object()] * 8).reshape(1, 8)})


def test_bad_session_options_are_refused():
    options = cleave.SessionOptions()
    with pytest.raises(ValueError, match="intra_op_num_threads"):
        options.intra_op_num_threads = -1
    with pytest.raises(TypeError, match="inter_op_num_threads"):
        options.inter_op_num_threads = "2"
    with pytest.raises(ValueError, match="log_severity_level"):
        options.log_severity_level = 7
    with pytest.raises(TypeError, match="execution_mode"):
        options.execution_mode = "parallel"


def test_sess_options_of_another_type_is_a_type_error(batch_path):
    with pytest.raises(TypeError, match="sess_options"):
        cleave.InferenceSession(batch_path, {"intra_op_num_threads": 1})


def test_an_unknown_cost_source_is_a_value_error(batch_path):
    options = cleave.SessionOptions()
    options.add_session_config_entry("cleave.costs", "guess")
    with pytest.raises(ValueError, match="cleave.costs"):
        cleave.InferenceSession(batch_path, options)


def test_an_unknown_provider_warns_and_falls_back_to_the_cpu(batch_path):
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        session = cleave.InferenceSession(batch_path, providers=["CUDAExecutionProvider"])
    assert session.get_providers() == ["CPUExecutionProvider"]


def test_providers_of_the_wrong_type_are_a_type_error(batch_path):
    with pytest.raises(TypeError, match="providers"):
        cleave.InferenceSession(batch_path, providers="CPUExecutionProvider")


def test_no_message_shows_cxx_internals(batch_path):
    session = cleave.InferenceSession(batch_path)
    with pytest.raises(cleave.Error) as caught:
        session.run(None, {"x": np.zeros((2, 5), np.float32)})
    for word in ("std::", "internal error", "bad_alloc", "json.exception"):
        assert word not in str(caught.value)
