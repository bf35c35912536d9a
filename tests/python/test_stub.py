"""The .pyi stub matches the built module: the same public names, and for every function,
method and property the same parameters (names, kinds, defaults) as the runtime objects.
An equivalent of `python3 -m mypy.stubtest` (mypy is not among the Debian packages used)."""

import ast
import inspect
import pathlib

import cleave

STUB = pathlib.Path(cleave.__file__).with_name("__init__.pyi")


def stub_tree():
    return ast.parse(STUB.read_text())


def stub_parameters(node):
    """(name, kind, has_default) of a stub function's parameters."""
    args = node.args
    params = []
    positional = args.posonlyargs + args.args
    first_default = len(positional) - len(args.defaults)
    for i, a in enumerate(positional):
        params.append((a.arg, "positional", i >= first_default))
    if args.vararg:
        params.append((args.vararg.arg, "var_positional", False))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        params.append((a.arg, "keyword_only", d is not None))
    if args.kwarg:
        params.append((args.kwarg.arg, "var_keyword", False))
    return params


KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
    inspect.Parameter.VAR_POSITIONAL: "var_positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword_only",
    inspect.Parameter.VAR_KEYWORD: "var_keyword",
}


def runtime_parameters(function):
    return [(p.name, KINDS[p.kind], p.default is not inspect.Parameter.empty)
            for p in inspect.signature(function).parameters.values()]


def test_the_stub_names_exactly_the_public_names():
    tree = stub_tree()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    names = {n for n in names if not n.startswith("_") or n == "__version__"}
    assert names == set(cleave.__all__) | {"__version__"}


def test_every_stub_function_matches_the_module():
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            assert stub_parameters(node) == runtime_parameters(getattr(cleave, node.name)), node.name


def test_every_stub_class_member_matches_the_module():
    checked = 0
    for node in stub_tree().body:
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(cleave, node.name)
        for item in node.body:
            if isinstance(item, ast.FunctionDef):
                decorators = [ast.unparse(d) for d in item.decorator_list]
                member = inspect.getattr_static(cls, item.name)
                if "property" in decorators or any(d.endswith(".setter") for d in decorators):
                    # pybind11 properties are their own type; both are data descriptors.
                    assert hasattr(member, "__get__") and hasattr(member, "__set__"), (node.name, item.name)
                    continue
                if isinstance(member, type(cleave.Plan.to_json)) and not hasattr(member, "__code__"):
                    # A compiled method: pybind11 writes its signature in the docstring.
                    assert member.__doc__.startswith(f"{item.name}(self"), (node.name, item.name)
                    continue
                assert stub_parameters(item) == runtime_parameters(member), (node.name, item.name)
                checked += 1
            elif isinstance(item, ast.Assign):  # enum members
                for target in item.targets:
                    assert getattr(cls, target.id) == ast.literal_eval(item.value), (node.name, target.id)
            elif isinstance(item, ast.AnnAssign):  # instance attributes
                instance_attrs = set(vars(cls))
                if cls in (cleave.SessionOptions, cleave.RunOptions):
                    instance_attrs |= set(vars(cls()))
                elif cls is cleave.NodeArg:
                    instance_attrs |= set(vars(cls("x", [1], "tensor(float)")))
                elif cls is cleave.ModelMetadata:
                    instance_attrs |= set(vars(cls({"producer_name": "", "graph_name": "", "description": "",
                                                     "model_description": "", "domain": "", "version": 0,
                                                     "custom_metadata_map": {}})))
                assert item.target.id in instance_attrs, (node.name, item.target.id)
    assert checked > 20


def test_every_public_member_of_the_module_is_in_the_stub():
    tree = stub_tree()
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    for name, node in classes.items():
        stubbed = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        stubbed |= {t.id for item in node.body if isinstance(item, ast.Assign) for t in item.targets}
        stubbed |= {item.target.id for item in node.body if isinstance(item, ast.AnnAssign)}
        cls = getattr(cleave, name)
        public = {m for m in vars(cls) if not m.startswith("_")}
        if issubclass(cls, BaseException) or issubclass(cls, int):
            continue
        assert public <= stubbed, (name, public - stubbed)
