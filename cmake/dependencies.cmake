# Libraries linked into cleave_lib beyond the ONNX/JSON/CLI core: kernels, MILP solver, topology.
pkg_check_modules(CBC REQUIRED IMPORTED_TARGET cbc)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
find_package(dnnl CONFIG REQUIRED)
find_package(OpenMP REQUIRED)
target_link_libraries(cleave_lib PUBLIC PkgConfig::CBC PkgConfig::HWLOC DNNL::dnnl OpenMP::OpenMP_CXX)
# MPI for running plans across processes and machines (src/distributed/).
find_package(MPI REQUIRED COMPONENTS CXX)
target_link_libraries(cleave_lib PUBLIC MPI::MPI_CXX)
