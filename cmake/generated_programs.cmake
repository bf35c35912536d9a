# What the programs `cleave codegen --lang cpp` writes link: BUILD/cleave_codegen_runtime.cmake,
# which their CMakeLists.txt includes (src/codegen/cpp_templates.cc). It names cleave's archives
# in link order and the packages their objects use (the kernels' oneDNN, OpenMP and hwloc, and
# fmt), not the planners' CBC nor ONNX and protobuf: a static link takes only the objects a
# program calls, so an object reaching another package fails the generated build (the codegen
# tests build one of each kind). Rank programs add the distributed archive (MPI messages and
# sessions) and find MPI themselves.
if(NOT TARGET cleave_codegen_runtime)
  return()
endif()

# The areas whose objects generated code reaches, top first (the link order of static
# archives): not the planners (plan), whose objects the executor's code does not call.
set(CLEAVE_GENERATED_PROGRAM_AREAS codegen_runtime runtime ir support)
set(CLEAVE_GENERATED_RANK_AREAS codegen_runtime distributed runtime ir support)

set(cleave_generated_program_text [=[
# cleave's code-generation runtime, for the programs `cleave codegen --lang cpp` writes.
# Written by cleave's build (cmake/generated_programs.cmake); included by their CMakeLists.txt
# after it sets CLEAVE_ROOT (cleave's source folder, for the headers).
find_package(fmt REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
find_package(dnnl CONFIG REQUIRED)
find_package(OpenMP REQUIRED)
set(cleave_packages fmt::fmt nlohmann_json::nlohmann_json Threads::Threads PkgConfig::HWLOC
                    DNNL::dnnl OpenMP::OpenMP_CXX)
]=])
foreach(kind program rank)
  string(TOUPPER ${kind} upper)
  set(archives)
  foreach(area ${CLEAVE_GENERATED_${upper}_AREAS})
    if(TARGET cleave_${area})  # all of them, unless -DCLEAVE_ONLY left one out
      list(APPEND archives "$<TARGET_FILE:cleave_${area}>")
    endif()
  endforeach()
  string(APPEND cleave_generated_program_text "set(cleave_${kind}_archives \"${archives}\")\n")
endforeach()
string(APPEND cleave_generated_program_text [=[
foreach(archive IN LISTS cleave_program_archives cleave_rank_archives)
  if(NOT EXISTS "${archive}")
    message(FATAL_ERROR "no ${archive}: build cleave first "
                        "(cmake --build <cleave build> --target cleave_codegen_runtime)")
  endif()
endforeach()
# cleave_codegen_runtime: static and stream programs; cleave_rank_runtime: rank programs.
add_library(cleave_codegen_runtime INTERFACE IMPORTED)
set_target_properties(cleave_codegen_runtime PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${CLEAVE_ROOT}/src"
  INTERFACE_LINK_LIBRARIES "${cleave_program_archives};${cleave_packages}")
add_library(cleave_rank_runtime INTERFACE IMPORTED)
set_target_properties(cleave_rank_runtime PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${CLEAVE_ROOT}/src"
  INTERFACE_LINK_LIBRARIES "${cleave_rank_archives};${cleave_packages}")
]=])
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/cleave_codegen_runtime.cmake
     CONTENT "${cleave_generated_program_text}")
