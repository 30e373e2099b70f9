#include "services/dispatcher/gitops/appset_resource_writer.h"

#include "absl/strings/str_cat.h"
#include "libs/common/status_macros.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/internal/controller_log.h"
#include "services/dispatcher/gitops/internal/hub_resources.h"

namespace mmi::dispatcher {
namespace {

using internal::Core;
using internal::Rbac;
using kube::Metadata;
using kube::StringAt;
using nlohmann::json;

}  // namespace

absl::Status AppSetResourceWriter::CreateIfAbsent(const kube::ResourceRef& ref,
                                                  const json& object) {
  const std::string name = StringAt(Metadata(object), "name");
  auto existing = client_.Get(ref, name);
  if (existing.ok()) {
    return absl::OkStatus();
  }
  if (!absl::IsNotFound(existing.status())) {
    return existing.status();
  }
  auto created = client_.Create(ref, object, {.field_manager = field_manager_});
  if (created.ok()) {
    internal::GitOpsClusterLog().Info(
        "created", {{"resource", absl::StrCat(ref.GroupResource(), " ", kube::ObjectKey(object))}});
    return absl::OkStatus();
  }
  return absl::IsAlreadyExists(created.status()) ? absl::OkStatus() : created.status();
}

absl::Status AppSetResourceWriter::Ensure(const std::string& argo_namespace) {
  for (const json& config_map : DuckTypeConfigMaps(argo_namespace)) {
    RETURN_IF_ERROR(CreateIfAbsent(Core("configmaps", argo_namespace), config_map));
  }
  RETURN_IF_ERROR(
      CreateIfAbsent(Rbac("roles", argo_namespace), AppSetPlacementRole(argo_namespace)));
  const kube::ResourceRef bindings = Rbac("rolebindings", argo_namespace);
  auto binding = client_.Get(bindings, AppSetPlacementRbacName(argo_namespace));
  if (binding.ok()) {
    return absl::OkStatus();
  }
  if (!absl::IsNotFound(binding.status())) {
    return binding.status();
  }
  auto accounts = kube::ListAll(client_, Core("serviceaccounts", argo_namespace), {});
  if (!accounts.ok()) {
    return accounts.status();
  }
  return CreateIfAbsent(
      bindings, AppSetPlacementRoleBinding(argo_namespace,
                                           PickAppSetControllerServiceAccount(accounts->items)));
}

}  // namespace mmi::dispatcher
