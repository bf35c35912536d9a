#!/usr/bin/python3
"""Every area of src/ includes exactly the areas its library links, all of them below it.

cmake/layers.cmake declares the areas bottom layer first, each with the areas and packages it
links, and writes that table to BUILD/cleave_layers.txt (`area: linked areas | packages`, one
line per area, in declaration order). This reads every `#include "AREA/..."` and every
package header of src/ (outside raw string literals: the code generators' templates hold the
generated programs' includes) and fails
- when an area includes one above it (a back arrow: the layer order would have to change);
- when it includes one below it that it does not link (the include works only because some
  other area links it);
- when it links an area it includes nothing of (a link the code does not need);
- when it includes a package's header (oneDNN, CBC, hwloc, MPI, OpenMP, ONNX, protobuf,
  CLI11) that neither it nor an area it links (directly or not) links;
- when a folder of src/ is in no layer.

Usage: /usr/bin/python3 tests/support/include_layers.py SRC_DIR LAYERS_TXT
Prints one line per failure and closes with "N areas, M includes, K failures"; exits 1 on any.
"""

import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([A-Za-z0-9_]+)/[^"]*"', re.MULTILINE)
RAW_STRING = re.compile(r'R"([^()\\ ]{0,16})\((.*?)\)\1"', re.DOTALL)
SYSTEM_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]+<([^>]+)>", re.MULTILINE)
# Header prefix -> the CMake target of its package, as cmake/layers.cmake names it.
PACKAGE_HEADERS = {
    "oneapi/dnnl/": "DNNL::dnnl",
    "coin/": "PkgConfig::CBC",
    "hwloc": "PkgConfig::HWLOC",
    "mpi.h": "cleave_mpi",
    "omp.h": "OpenMP::OpenMP_CXX",
    "onnx/": "onnx",
    "google/protobuf/": "protobuf::libprotobuf",
    "CLI/": "CLI11::CLI11",
}


def read_layers(path: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The table in declaration order: area -> the areas it links, area -> its packages."""
    layers: dict[str, list[str]] = {}
    packages: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            area, _, rest = line.partition(":")
            links, _, own = rest.partition("|")
            layers[area.strip()] = links.split()
            packages[area.strip()] = own.split()
    return layers, packages


def reachable_packages(area: str, layers: dict[str, list[str]],
                       packages: dict[str, list[str]]) -> set[str]:
    """The packages of the area and of every area it links, directly or not."""
    seen, todo, found = set(), [area], set()
    while todo:
        current = todo.pop()
        if current in seen or current not in layers:
            continue
        seen.add(current)
        found.update(packages[current])
        todo.extend(layers[current])
    return found


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def main() -> int:
    src, table = Path(sys.argv[1]), Path(sys.argv[2])
    layers, packages = read_layers(table)
    order = {area: index for index, area in enumerate(layers)}
    failures: list[str] = []
    includes = 0
    used: dict[str, set[str]] = {area: set() for area in layers}
    for folder in sorted(p for p in src.iterdir() if p.is_dir()):
        area = folder.name
        if area not in layers:
            failures.append(f"src/{area}: in no layer of cmake/layers.cmake")
            continue
        for path in sorted(folder.rglob("*")):
            if path.suffix not in (".h", ".cc"):
                continue
            # Blank the raw strings but keep their newlines, so line numbers stay right.
            text = RAW_STRING.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text())
            for match in SYSTEM_INCLUDE.finditer(text):
                header = match.group(1)
                package = next((p for prefix, p in PACKAGE_HEADERS.items()
                                if header.startswith(prefix)), None)
                if package and package not in reachable_packages(area, layers, packages):
                    where = f"{path.relative_to(src.parent)}:{line_of(text, match.start())}"
                    failures.append(f"{where}: includes <{header}>, but neither {area} nor an "
                                    f"area it links links {package}")
            for match in INCLUDE.finditer(text):
                target = match.group(1)
                if not (src / target).is_dir() or target == area:
                    continue
                includes += 1
                used[area].add(target)
                where = f"{path.relative_to(src.parent)}:{line_of(text, match.start())}"
                header = match.group(0).split('"')[1]
                if target not in layers:
                    failures.append(f"{where}: includes {header}, from src/{target}, which is in no layer")
                elif order[target] > order[area]:
                    failures.append(f"{where}: includes {header}, but {target} is a layer above "
                                    f"{area} (a back arrow: move the code it needs down)")
                elif target not in layers[area]:
                    failures.append(f"{where}: includes {header}, but {area} does not link "
                                    f"{target} (add it to {area}'s line in cmake/layers.cmake)")
    for area, links in layers.items():
        if (src / area).is_dir():
            for target in links:
                if target not in used[area]:
                    failures.append(f"cmake/layers.cmake: {area} links {target}, but no file of "
                                    f"src/{area} includes it")
    for failure in failures:
        print(failure)
    print(f"{len(layers)} areas, {includes} includes, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
