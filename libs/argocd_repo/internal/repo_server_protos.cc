#include "libs/argocd_repo/internal/repo_server_protos.h"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace mmi::argocd_repo::internal {
namespace {

constexpr char kService[] = "repository.RepoServerService";

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "argocd_repo: embedded Argo CD descriptor set: %s\n", what.c_str());
  std::abort();
}

}  // namespace

const RepoServerProtos& RepoServerProtos::Get() {
  static const RepoServerProtos* const protos = new RepoServerProtos();
  return *protos;
}

RepoServerProtos::RepoServerProtos() : factory_(&pool_) {
  google::protobuf::FileDescriptorSet set;
  const std::string_view bytes = ArgoCdDescriptorSet();
  if (!set.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    Die("does not parse");
  }
  // --include_imports lists every file after the files it imports.
  for (const google::protobuf::FileDescriptorProto& file : set.file()) {
    if (pool_.BuildFile(file) == nullptr) {
      Die(absl::StrCat("cannot load ", file.name()));
    }
  }
  if (pool_.FindServiceByName(kService) == nullptr) {
    Die(absl::StrCat("has no service ", kService));
  }
}

std::unique_ptr<google::protobuf::Message> RepoServerProtos::New(std::string_view full_name) const {
  const google::protobuf::Descriptor* descriptor =
      pool_.FindMessageTypeByName(std::string(full_name));
  if (descriptor == nullptr) {
    Die(absl::StrCat("has no message ", std::string(full_name)));
  }
  // GetPrototype is thread-safe (the factory locks); the prototype lives as long as the factory.
  return std::unique_ptr<google::protobuf::Message>(factory_.GetPrototype(descriptor)->New());
}

absl::StatusOr<std::unique_ptr<google::protobuf::Message>> RepoServerProtos::FromJson(
    std::string_view full_name, const nlohmann::json& body) const {
  std::unique_ptr<google::protobuf::Message> message = New(full_name);
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status =
      google::protobuf::util::JsonStringToMessage(body.dump(), message.get(), options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", std::string(full_name),
                     " does not fit Argo CD's repository.proto: ", status.message().as_string()));
  }
  return message;
}

std::string RepoServerProtos::ToJson(const google::protobuf::Message& message) const {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  const auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) {
    return absl::StrCat("{\"error\":\"", status.message().as_string(), "\"}");
  }
  return out;
}

std::string RepoServerProtos::MethodPath(std::string_view method) const {
  const google::protobuf::ServiceDescriptor* service = pool_.FindServiceByName(kService);
  if (service->FindMethodByName(std::string(method)) == nullptr) {
    Die(absl::StrCat(kService, " has no method ", std::string(method)));
  }
  return absl::StrCat("/", kService, "/", std::string(method));
}

}  // namespace mmi::argocd_repo::internal
