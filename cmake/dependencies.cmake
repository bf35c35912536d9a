# Libraries linked into cleave_lib beyond the ONNX/JSON/CLI core: kernels, MILP solver, topology.
pkg_check_modules(CBC REQUIRED IMPORTED_TARGET cbc)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
find_package(dnnl CONFIG REQUIRED)
find_package(OpenMP REQUIRED)
target_link_libraries(cleave_lib PUBLIC PkgConfig::CBC PkgConfig::HWLOC DNNL::dnnl OpenMP::OpenMP_CXX)
# MPI for running plans across processes and machines (src/distributed/). Only the files that
# reach <mpi.h> get its include path, so the rest of the library compiles with the same flags
# as without MPI (and a compiler cache keeps serving them); everything links against it.
find_package(MPI REQUIRED COMPONENTS CXX)
file(GLOB CLEAVE_MPI_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/distributed/*.cc
     ${PROJECT_SOURCE_DIR}/src/cli/run_command.cc ${PROJECT_SOURCE_DIR}/src/cli/run_split_command.cc
     ${PROJECT_SOURCE_DIR}/src/codegen/rank_program.cc)
# As system headers, as a linked MPI::MPI_CXX would give them: OpenMPI's C++ bindings warn.
set(CLEAVE_MPI_INCLUDES)
foreach(dir ${MPI_CXX_INCLUDE_DIRS})
  list(APPEND CLEAVE_MPI_INCLUDES -isystem ${dir})
endforeach()
set_source_files_properties(${CLEAVE_MPI_SOURCES} PROPERTIES COMPILE_OPTIONS "${CLEAVE_MPI_INCLUDES}")
target_link_libraries(cleave_lib PUBLIC ${MPI_CXX_LIBRARIES})
