# Every third-party dependency is found here, once. All come from Debian 12 packages that
# scripts/bootstrap installs; libpqxx and librdkafka ship only pkg-config files.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(nlohmann_json 3.11 CONFIG REQUIRED)
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
pkg_check_modules(PQXX REQUIRED IMPORTED_TARGET libpqxx)
# simdjson (Debian libsimdjson-dev) indexes status payloads for the status sink's one-pass decoder.
find_package(simdjson REQUIRED)

if(MMI_WITH_GRPC)
  find_package(Protobuf CONFIG QUIET)
  if(NOT Protobuf_FOUND)
    find_package(Protobuf REQUIRED)
  endif()
  find_package(gRPC CONFIG REQUIRED)
  find_program(MMI_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
endif()
if(MMI_WITH_MQTT)
  pkg_check_modules(MOSQUITTO REQUIRED IMPORTED_TARGET libmosquitto)  # libmosquitto-dev
endif()
if(MMI_WITH_KAFKA)
  pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka++ rdkafka)
endif()

# The services' allocator (MMI_ALLOCATOR; see mmi_link_allocator in MmiHelpers.cmake).
if(MMI_SANITIZE OR MMI_FUZZ)
  set(MMI_ALLOCATOR_USED system)
elseif(MMI_ALLOCATOR STREQUAL "jemalloc")
  pkg_check_modules(JEMALLOC REQUIRED jemalloc)  # libjemalloc-dev; JEMALLOC_LINK_LIBRARIES
  set(MMI_ALLOCATOR_USED jemalloc)
elseif(MMI_ALLOCATOR STREQUAL "system")
  set(MMI_ALLOCATOR_USED system)
else()
  message(FATAL_ERROR "MMI_ALLOCATOR must be 'jemalloc' or 'system', not '${MMI_ALLOCATOR}'")
endif()
message(STATUS "Allocator of the services: ${MMI_ALLOCATOR_USED}")

if(MMI_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
  find_package(benchmark CONFIG QUIET)
endif()
