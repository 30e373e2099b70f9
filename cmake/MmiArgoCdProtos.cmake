# Finds the .proto files of Argo CD's repo-server API in the Go module cache, at the versions the
# Argo CD test peer pins (tests/peers/argocd/go.mod): they are never copied into the tree.
#   repository.proto (github.com/argoproj/argo-cd/v3/reposerver/repository) imports Argo CD's
#   v1alpha1/generated.proto, which imports k8s.io/api, k8s.io/apimachinery and
#   k8s.io/apiextensions-apiserver generated.proto files.
# Sets:
#   MMI_ARGOCD_REPO_BUILT   whether libs/argocd_repo is built (MMI_WITH_ARGOCD_REPO ON or AUTO,
#                           gRPC on, and for AUTO the protos found);
#   MMI_ARGOCD_PROTO_PATHS  protoc --proto_path arguments mapping each Go import path onto its
#                           module folder (VIRTUAL=DISK), so the imports resolve as written;
#   MMI_ARGOCD_REPOSITORY_PROTO  the import path of repository.proto;
#   MMI_ARGOCD_PROTO_FILES  the files on disk (dependencies of the generating command).
# MMI_GO_MODCACHE overrides `go env GOMODCACHE`.
set(MMI_ARGOCD_REPO_BUILT OFF)
string(TOUPPER "${MMI_WITH_ARGOCD_REPO}" mmi_argocd_mode)
if(mmi_argocd_mode STREQUAL "OFF" OR NOT mmi_argocd_mode)
  return()
endif()
if(NOT mmi_argocd_mode MATCHES "^(ON|AUTO)$")
  message(FATAL_ERROR "MMI_WITH_ARGOCD_REPO must be ON, AUTO or OFF, not '${MMI_WITH_ARGOCD_REPO}'")
endif()
if(NOT MMI_WITH_GRPC)
  if(mmi_argocd_mode STREQUAL "ON")
    message(FATAL_ERROR "MMI_WITH_ARGOCD_REPO=ON needs MMI_WITH_GRPC=ON")
  endif()
  return()
endif()

# ON: a fatal error; AUTO: a warning, and the library is left out. The arguments are concatenated.
macro(mmi_argocd_protos_missing)
  string(CONCAT mmi_argocd_text ${ARGV})
  if(mmi_argocd_mode STREQUAL "ON")
    message(FATAL_ERROR "MMI_WITH_ARGOCD_REPO: ${mmi_argocd_text}")
  endif()
  message(WARNING
    "MMI_WITH_ARGOCD_REPO=AUTO: libs/argocd_repo and its tests are left out: ${mmi_argocd_text}")
  return()
endmacro()

set(MMI_GO_MODCACHE "" CACHE PATH "Go module cache holding the Argo CD protos (default: go env GOMODCACHE)")

set(mmi_argocd_go_mod "${PROJECT_SOURCE_DIR}/tests/peers/argocd/go.mod")
file(READ "${mmi_argocd_go_mod}" mmi_go_mod_text)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${mmi_argocd_go_mod}")

# The version of `module` that go.mod pins: its replace line wins over its require line.
function(mmi_go_mod_version module out)
  string(REPLACE "." "\\." pattern "${module}")
  if(mmi_go_mod_text MATCHES "${pattern} => ${pattern} (v[^ \t\r\n]+)")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  elseif(mmi_go_mod_text MATCHES "[\t ]${pattern} (v[^ \t\r\n]+)")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  else()
    message(FATAL_ERROR "${mmi_argocd_go_mod} pins no version of ${module}")
  endif()
endfunction()

if(NOT MMI_GO_MODCACHE)
  find_program(MMI_GO go HINTS /usr/local/go/bin)
  if(MMI_GO)
    execute_process(COMMAND ${MMI_GO} env GOMODCACHE OUTPUT_VARIABLE mmi_modcache
                    OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE mmi_go_result)
  endif()
  if(NOT MMI_GO OR NOT mmi_go_result EQUAL 0 OR NOT mmi_modcache)
    mmi_argocd_protos_missing(
      "cannot find the Go module cache (no `go`, or `go env GOMODCACHE` failed). Install Go "
      "(scripts/bootstrap), pass -DMMI_GO_MODCACHE=<dir>, or configure with "
      "-DMMI_WITH_ARGOCD_REPO=OFF.")
  endif()
  set(MMI_GO_MODCACHE "${mmi_modcache}")
endif()

# Module path -> the file each needs, as imported.
set(mmi_argocd_modules
  "github.com/argoproj/argo-cd/v3|reposerver/repository/repository.proto"
  "github.com/argoproj/argo-cd/v3|pkg/apis/application/v1alpha1/generated.proto"
  "k8s.io/api|core/v1/generated.proto"
  "k8s.io/apimachinery|pkg/apis/meta/v1/generated.proto"
  "k8s.io/apiextensions-apiserver|pkg/apis/apiextensions/v1/generated.proto")
set(MMI_ARGOCD_PROTO_PATHS)
set(MMI_ARGOCD_PROTO_FILES)
set(mmi_missing)
set(mmi_seen_modules)
foreach(entry IN LISTS mmi_argocd_modules)
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 module)
  list(GET parts 1 file)
  mmi_go_mod_version(${module} version)
  # The module cache escapes upper-case letters in paths as !<lower> (none of ours has any).
  set(dir "${MMI_GO_MODCACHE}/${module}@${version}")
  if(NOT module IN_LIST mmi_seen_modules)
    list(APPEND mmi_seen_modules ${module})
    list(APPEND MMI_ARGOCD_PROTO_PATHS "--proto_path=${module}=${dir}")
  endif()
  if(EXISTS "${dir}/${file}")
    list(APPEND MMI_ARGOCD_PROTO_FILES "${dir}/${file}")
  else()
    list(APPEND mmi_missing "${dir}/${file}")
  endif()
endforeach()
if(mmi_missing)
  list(JOIN mmi_missing "\n  " mmi_missing_text)
  mmi_argocd_protos_missing(
    "the Argo CD repo-server protos are not in the Go module cache:\n  "
    "${mmi_missing_text}\n"
    "Download the pinned modules with:\n"
    "  cd tests/peers/argocd && GOFLAGS=-mod=mod go mod download\n"
    "(tests/peers/build/argocd.sh does it), or configure with -DMMI_WITH_ARGOCD_REPO=OFF.")
endif()
set(MMI_ARGOCD_REPOSITORY_PROTO "github.com/argoproj/argo-cd/v3/reposerver/repository/repository.proto")
set(MMI_ARGOCD_REPO_BUILT ON)
message(STATUS "Argo CD repo-server protos: ${MMI_GO_MODCACHE}")
