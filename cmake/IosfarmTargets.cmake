# Helpers that give every iosfarm target the same flags.

# iosfarm_library(NAME SOURCES ... [DEPS ...])
function(iosfarm_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${IOSFARM_WARNINGS}>)
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# iosfarm_test(NAME SOURCES ... [DEPS ...]): a GoogleTest binary under CTest.
function(iosfarm_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${IOSFARM_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES ENVIRONMENT "IOSFARM_SOURCE_DIR=${PROJECT_SOURCE_DIR}\\;IOSFARM_BINARY_DIR=${PROJECT_BINARY_DIR}")
endfunction()
