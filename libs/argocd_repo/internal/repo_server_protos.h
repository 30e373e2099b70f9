// repository.proto's messages at run time: the descriptor set protoc made at build time from the
// pinned Argo CD module (cmake/MmiArgoCdProtos.cmake), embedded in the library, loaded into a
// DescriptorPool, and messages made by a DynamicMessageFactory. No C++ is generated for Argo
// CD's or Kubernetes' generated.proto files (hundreds of thousands of lines to compile).
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mmi::argocd_repo::internal {

// The FileDescriptorSet (protoc --include_imports) of repository.proto; generated at build time.
std::string_view ArgoCdDescriptorSet();

// Thread-safe after construction (lookups and New() only).
class RepoServerProtos {
 public:
  // The process-wide instance, built on first use. Aborts when the embedded descriptor set does
  // not load or lacks a message used here: a broken build, not an input error.
  static const RepoServerProtos& Get();

  // A new message `full_name` ("repository.ManifestRequest") from `body`, protobuf's JSON form.
  // kInvalidArgument with the parser's words when `body` does not fit (an unknown field, a wrong
  // type): unknown fields are refused, never dropped.
  absl::StatusOr<std::unique_ptr<google::protobuf::Message>> FromJson(
      std::string_view full_name, const nlohmann::json& body) const;

  // A new, empty message `full_name` (to parse a response into).
  std::unique_ptr<google::protobuf::Message> New(std::string_view full_name) const;

  // `message` in protobuf's JSON form (tests and debug logs).
  std::string ToJson(const google::protobuf::Message& message) const;

  // The full gRPC method name, "/repository.RepoServerService/<method>". Aborts when the service
  // has no such method.
  std::string MethodPath(std::string_view method) const;

 private:
  RepoServerProtos();

  google::protobuf::DescriptorPool pool_;
  mutable google::protobuf::DynamicMessageFactory factory_;
};

}  // namespace mmi::argocd_repo::internal
