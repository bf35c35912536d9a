# The areas of src/ as one static library each, declared bottom layer first, and the checks that
# keep each library to the areas below it (docs/architecture.md draws the graph).
#
# cleave_<area> links (PUBLIC) exactly the areas its files include and the packages they use.
# Two checks enforce it, both run by ctest:
# - Layers.EveryIncludeIsALinkedArea (tests/support/include_layers.py): every `#include "A/..."`
#   of src/<area> names an area <area> links, every area it links is included, and a package
#   header (oneDNN, CBC, hwloc, MPI, OpenMP, ONNX, protobuf, CLI11) is included only where the
#   area or one it links links that package;
# - Layers.EachAreaLinksAlone (target cleave_layers): each library, whole, links into an
#   executable with only the libraries it names, so a call into an area above it is an
#   undefined reference.

# Areas, in declaration order; CLEAVE_AREA_LINKS_<area>: the areas each one links.
set(CLEAVE_DECLARED_AREAS)

# cleave_area(NAME [AREAS below...] [PACKAGES targets...]): the library cleave_NAME of every
# src/NAME/**.cc. An area may link only areas declared before it, so this table is the layer
# order. An area missing from CLEAVE_AREAS (-DCLEAVE_ONLY) is not built, and the areas above it
# link without it (as the one library did), so only their layer check is skipped.
function(cleave_area name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "AREAS;PACKAGES")
  foreach(below ${arg_AREAS})
    if(NOT below IN_LIST CLEAVE_DECLARED_AREAS)
      message(FATAL_ERROR "cmake/layers.cmake: area ${name} links ${below}, which is not declared "
                          "below it (an area links only the layers under it)")
    endif()
  endforeach()
  set(CLEAVE_DECLARED_AREAS ${CLEAVE_DECLARED_AREAS} ${name} PARENT_SCOPE)
  set(CLEAVE_AREA_LINKS_${name} ${arg_AREAS} PARENT_SCOPE)
  set(CLEAVE_AREA_PACKAGES_${name} ${arg_PACKAGES} PARENT_SCOPE)
  if(NOT name IN_LIST CLEAVE_AREAS)
    return()
  endif()
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cc)
  list(FILTER sources EXCLUDE REGEX ".*/src/cli/main\\.cc$")
  # The drivers of a run on ranks hold the session (pipeline/) but need distributed/: a build
  # without it (the sanitizer's) leaves them out, so that no test links one in merely because
  # it is the first object of the archive to define a library template it happens to use.
  if(NOT "distributed" IN_LIST CLEAVE_AREAS)
    list(REMOVE_ITEM sources ${PROJECT_SOURCE_DIR}/src/pipeline/rank_run.cc
         ${PROJECT_SOURCE_DIR}/src/pipeline/split_run.cc
         ${PROJECT_SOURCE_DIR}/src/pipeline/model_run_ranks.cc)
  endif()
  add_library(cleave_${name} STATIC ${sources})
  target_include_directories(cleave_${name} PRIVATE ${CMAKE_BINARY_DIR}/generated)
  target_include_directories(cleave_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(cleave_${name} PRIVATE ${CLEAVE_WARNINGS})
  # Every area compiles with the one set of flags all the packages' headers (and the build's
  # generated headers) need, as the one library did, so that the compiler cache serves each
  # object to every build configuration and worktree whatever its area's links. What an area links is its own line below, and the checks
  # hold it to that (the include check also to the packages whose headers it includes).
  foreach(package ${CLEAVE_HEADER_PACKAGES})
    target_compile_definitions(cleave_${name} PRIVATE
      $<TARGET_PROPERTY:${package},INTERFACE_COMPILE_DEFINITIONS>)
    target_include_directories(cleave_${name} SYSTEM PRIVATE
      $<TARGET_PROPERTY:${package},INTERFACE_INCLUDE_DIRECTORIES>)
    target_compile_options(cleave_${name} PRIVATE
      $<TARGET_PROPERTY:${package},INTERFACE_COMPILE_OPTIONS>)
  endforeach()
  target_link_libraries(cleave_${name} PUBLIC ${arg_PACKAGES})
  set(complete TRUE)
  foreach(below ${arg_AREAS})
    if(TARGET cleave_${below})
      target_link_libraries(cleave_${name} PUBLIC cleave_${below})
    else()
      set(complete FALSE)
    endif()
  endforeach()
  target_link_libraries(cleave_lib INTERFACE cleave_${name})
  if(complete)
    # The whole library and, after it, only what it links: a symbol it takes from any other
    # area is undefined here.
    add_executable(cleave_layer_check_${name} EXCLUDE_FROM_ALL
                   ${PROJECT_SOURCE_DIR}/cmake/layer_check_main.cc)
    target_link_libraries(cleave_layer_check_${name} PRIVATE
      -Wl,--whole-archive $<TARGET_FILE:cleave_${name}> -Wl,--no-whole-archive cleave_${name})
    add_dependencies(cleave_layers cleave_layer_check_${name})
  endif()
endfunction()

# The packages whose headers every area compiles with, in the one library's order.
set(CLEAVE_HEADER_PACKAGES onnx onnx_proto protobuf::libprotobuf nlohmann_json::nlohmann_json
    CLI11::CLI11 fmt::fmt Threads::Threads PkgConfig::CBC PkgConfig::HWLOC DNNL::dnnl
    OpenMP::OpenMP_CXX)

add_library(cleave_lib INTERFACE)
add_custom_target(cleave_layers)

# MPI's libraries go on the areas that call it; its headers on the files that include <mpi.h>
# (cmake/dependencies.cmake).
add_library(cleave_mpi INTERFACE)
target_link_libraries(cleave_mpi INTERFACE ${MPI_CXX_LIBRARIES})

cleave_area(support PACKAGES fmt::fmt nlohmann_json::nlohmann_json Threads::Threads)
cleave_area(ir AREAS support)
cleave_area(onnx AREAS ir support PACKAGES onnx onnx_proto protobuf::libprotobuf)
cleave_area(analysis AREAS ir support)
cleave_area(machine AREAS ir support)
cleave_area(modelgen AREAS ir support)
cleave_area(plan AREAS ir machine support PACKAGES PkgConfig::CBC)
cleave_area(viz AREAS ir plan support)
cleave_area(runtime AREAS ir plan support
            PACKAGES DNNL::dnnl OpenMP::OpenMP_CXX PkgConfig::HWLOC)
cleave_area(passes AREAS ir runtime)
cleave_area(cost AREAS analysis ir machine runtime support)
cleave_area(conformance AREAS ir onnx passes runtime support)
cleave_area(frontend AREAS cost ir machine onnx passes plan runtime support)
cleave_area(spatial AREAS cost frontend ir machine onnx plan runtime support)
cleave_area(stream AREAS analysis frontend ir plan runtime support)
cleave_area(distributed AREAS cost frontend ir onnx plan runtime support
            PACKAGES cleave_mpi)
cleave_area(codegen_runtime AREAS distributed ir runtime support PACKAGES cleave_mpi)
cleave_area(pipeline
            AREAS analysis cost distributed frontend ir machine passes plan runtime spatial stream
                  support viz)
cleave_area(codegen
            AREAS codegen_runtime frontend ir onnx runtime spatial stream support)
cleave_area(cli
            AREAS analysis codegen conformance cost distributed frontend ir machine modelgen onnx
                  passes pipeline plan runtime stream support viz
            PACKAGES CLI11::CLI11)

file(GLOB CLEAVE_SOURCE_AREAS LIST_DIRECTORIES true RELATIVE ${PROJECT_SOURCE_DIR}/src
     ${PROJECT_SOURCE_DIR}/src/*)
foreach(area ${CLEAVE_SOURCE_AREAS} ${CLEAVE_AREAS})
  if(NOT area IN_LIST CLEAVE_DECLARED_AREAS)
    message(FATAL_ERROR "cmake/layers.cmake: src/${area} is in no layer: declare it with "
                        "cleave_area() above the areas it includes")
  endif()
endforeach()

# The table for the include check, one line per area: `area: linked areas | packages`.
set(CLEAVE_LAYER_TABLE "")
foreach(area ${CLEAVE_DECLARED_AREAS})
  string(REPLACE ";" " " links "${CLEAVE_AREA_LINKS_${area}}")
  string(REPLACE ";" " " packages "${CLEAVE_AREA_PACKAGES_${area}}")
  string(APPEND CLEAVE_LAYER_TABLE "${area}: ${links} | ${packages}\n")
endforeach()
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/cleave_layers.txt CONTENT "${CLEAVE_LAYER_TABLE}")
