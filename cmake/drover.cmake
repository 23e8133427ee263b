# drover_library(NAME DEPS <libs...> [TEST_DEPS <libs...>] [TESTS_RUN_BINARY])
#
# Builds every *.cc under the calling folder (recursively, tests excluded) into the static
# library drover_NAME, and every *_test.cc into the test program drover_NAME_test, whose
# GoogleTest cases are registered with CTest; it compiles with DROVER_TEST_COMPILE_OPTIONS. New
# files are picked up at the next build.
# TESTS_RUN_BINARY: the tests exec build/drover (given to them as DROVER_BINARY), so it is built
# first.
function(drover_library name)
  cmake_parse_arguments(ARG "TESTS_RUN_BINARY" "" "DEPS;TEST_DEPS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER sources EXCLUDE REGEX "_test\\.cc$")
  file(GLOB_RECURSE tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(sources)
    add_library(drover_${name} STATIC ${sources})
    target_include_directories(drover_${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(drover_${name} PUBLIC ${ARG_DEPS})
  else()
    add_library(drover_${name} INTERFACE)
    target_include_directories(drover_${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(drover_${name} INTERFACE ${ARG_DEPS})
  endif()
  if(tests)
    add_executable(drover_${name}_test ${tests})
    target_link_libraries(drover_${name}_test PRIVATE drover_${name} ${ARG_TEST_DEPS}
                          GTest::gmock GTest::gtest_main)
    target_compile_definitions(drover_${name}_test PRIVATE
        DROVER_SOURCE_DIR="${PROJECT_SOURCE_DIR}" DROVER_BINARY="$<TARGET_FILE:drover>")
    target_compile_options(drover_${name}_test PRIVATE ${DROVER_TEST_COMPILE_OPTIONS})
    if(ARG_TESTS_RUN_BINARY)
      add_dependencies(drover_${name}_test drover)
    endif()
    gtest_discover_tests(drover_${name}_test DISCOVERY_TIMEOUT 60
                         PROPERTIES TIMEOUT 300)
  endif()
endfunction()

# drover_static_cxx_runtime(TARGET)
#
# Links the C++ runtime (libstdc++, libgcc), fmt and yaml-cpp into executable TARGET, so that it
# needs no shared library but libc's: for `drover`, started at every command, more than a
# quarter of whose start went to ld.so relocating libstdc++ and the libraries over it
# (docs/benchmarks.md, "The client without libstdc++.so"), and drover-supervise, whose spawner
# forks a supervisor per worker. Such a binary must not load a C++ shared library either, or
# there would be two C++ runtimes in it: tests/integration/binaries_test.cc checks what it needs.
# Not under the sanitizers, whose runtime (libubsan.so) needs libstdc++.so itself.
function(drover_static_cxx_runtime target)
  if(DROVER_SANITIZE OR DROVER_FUZZ)
    return()
  endif()
  set_target_properties(${target} PROPERTIES DROVER_STATIC_CXX_RUNTIME ON)
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
endfunction()
