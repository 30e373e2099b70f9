# mmi_cc_library(NAME <name> [SRCS ...] [HDRS ...] [DEPS ...] [PRIVATE_DEPS ...] [TESTONLY])
#   Declares target mmi_<name> with alias mmi::<name>. Includes are rooted at the repository.
#   A library without SRCS is an INTERFACE (header-only) library. TESTONLY libraries (and every
#   mmi_cc_test) are not declared when MMI_BUILD_TESTS is OFF (the image's build).
# mmi_cc_test(NAME <name> SRCS ... [DEPS ...] [LABELS unit|integration|e2e] [TIMEOUT s] [COST s]
#             [RESOURCE_LOCK name...])
#   Declares a GoogleTest binary and registers it with ctest under the given label (default unit).
#   scripts/test runs each label with `ctest -j` (docs/ci.md): COST is the test's usual seconds in
#   CI, so that a fresh clone (no ctest cost data yet) starts the longest tests first; RESOURCE_LOCK
#   names what the test cannot share with another test running at the same time
#   (docs/ci.md lists the locks).
# mmi_link_allocator(<executable>)
#   Links the services' allocator (MMI_ALLOCATOR_USED, cmake/MmiDependencies.cmake) into an
#   executable: its malloc, free and operator new then serve the whole process. Not as-needed:
#   the executable need not name a jemalloc symbol for it to be loaded.
set(CMAKE_LINK_LIBRARY_USING_MMI_NO_AS_NEEDED
    "LINKER:--push-state,--no-as-needed" "<LINK_ITEM>" "LINKER:--pop-state")
set(CMAKE_LINK_LIBRARY_USING_MMI_NO_AS_NEEDED_SUPPORTED TRUE)
function(mmi_link_allocator target)
  if(MMI_ALLOCATOR_USED STREQUAL "jemalloc")
    # The library file itself: a link feature does not apply to an INTERFACE target.
    target_link_libraries(${target} PRIVATE
                          "$<LINK_LIBRARY:MMI_NO_AS_NEEDED,${JEMALLOC_LINK_LIBRARIES}>")
  endif()
endfunction()

function(mmi_cc_library)
  cmake_parse_arguments(MMI "TESTONLY" "NAME" "SRCS;HDRS;DEPS;PRIVATE_DEPS" ${ARGN})
  if(MMI_TESTONLY AND NOT MMI_BUILD_TESTS)
    return()
  endif()
  set(target mmi_${MMI_NAME})
  if(MMI_SRCS)
    add_library(${target} STATIC ${MMI_SRCS} ${MMI_HDRS})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
    target_link_libraries(${target} PUBLIC ${MMI_DEPS} PRIVATE ${MMI_PRIVATE_DEPS})
  else()
    add_library(${target} INTERFACE ${MMI_HDRS})
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
    target_link_libraries(${target} INTERFACE ${MMI_DEPS})
  endif()
  add_library(mmi::${MMI_NAME} ALIAS ${target})
endfunction()

function(mmi_cc_test)
  if(NOT MMI_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(MMI "" "NAME;TIMEOUT;COST" "SRCS;DEPS;LABELS;RESOURCE_LOCK" ${ARGN})
  if(NOT MMI_LABELS)
    set(MMI_LABELS unit)
  endif()
  if(NOT MMI_TIMEOUT)
    if(MMI_LABELS STREQUAL "unit")
      set(MMI_TIMEOUT 60)
    else()
      set(MMI_TIMEOUT 900)
    endif()
  endif()
  set(target ${MMI_NAME})
  add_executable(${target} ${MMI_SRCS})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_link_libraries(${target} PRIVATE ${MMI_DEPS} GTest::gmock GTest::gtest_main)
  add_test(NAME ${target} COMMAND ${target})
  set_tests_properties(${target} PROPERTIES LABELS "${MMI_LABELS}" TIMEOUT ${MMI_TIMEOUT})
  # Every peer a test starts is its own (free ports, a data dir per test and process), so tests
  # run side by side unless they declare a lock.
  if(MMI_COST)
    set_tests_properties(${target} PROPERTIES COST ${MMI_COST})
  endif()
  if(MMI_RESOURCE_LOCK)
    set_tests_properties(${target} PROPERTIES RESOURCE_LOCK "${MMI_RESOURCE_LOCK}")
  endif()
endfunction()
