# Packages beyond the ONNX/JSON/CLI core: kernels, MILP solver, topology, MPI. Which areas link
# each one is cmake/layers.cmake's table (oneDNN, OpenMP and hwloc: runtime; CBC: plan; MPI:
# distributed and codegen_runtime).
pkg_check_modules(CBC REQUIRED IMPORTED_TARGET cbc)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
find_package(dnnl CONFIG REQUIRED)
find_package(OpenMP REQUIRED)
# MPI for running plans across processes and machines (src/distributed/). Only the files that
# reach <mpi.h> get its include path, so the rest of the library compiles with the same flags
# as without MPI (and a compiler cache keeps serving them).
find_package(MPI REQUIRED COMPONENTS CXX)
file(GLOB CLEAVE_MPI_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/distributed/*.cc
     ${PROJECT_SOURCE_DIR}/src/cli/run_command.cc ${PROJECT_SOURCE_DIR}/src/cli/run_split_command.cc
     ${PROJECT_SOURCE_DIR}/src/codegen_runtime/rank_program.cc
     ${PROJECT_SOURCE_DIR}/src/pipeline/rank_run.cc)
# As system headers, as a linked MPI::MPI_CXX would give them: OpenMPI's C++ bindings warn.
set(CLEAVE_MPI_INCLUDES)
foreach(dir ${MPI_CXX_INCLUDE_DIRS})
  list(APPEND CLEAVE_MPI_INCLUDES -isystem ${dir})
endforeach()
set_source_files_properties(${CLEAVE_MPI_SOURCES} PROPERTIES COMPILE_OPTIONS "${CLEAVE_MPI_INCLUDES}")
