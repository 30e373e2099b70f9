// Test-only: loads the protocol test vectors of ../shared/spec/samples/ (MMI_SPEC_SAMPLES_DIR is a
// compile definition of the test target) and small shared fixtures.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace mmi::cloudevents::testing {

inline std::string ReadSample(std::string_view name) {
  const std::string path = std::string(MMI_SPEC_SAMPLES_DIR) + "/" + std::string(name);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read sample " << path;
    return {};
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// The CloudEvents among the samples (structured JSON format).
inline const std::vector<std::string>& EventSampleNames() {
  static const std::vector<std::string> names = {
      "cloudevents.agent.json", "cloudevents.grpcclient.json", "cloudevents.spec.maestro.json",
      "cloudevents.status.maestro.json"};
  return names;
}

// §2.8 of the spec: a delete request from the Go work client (no data, no datacontenttype).
inline constexpr std::string_view kDeleteRequestJson = R"json({
  "specversion": "1.0",
  "id": "0c6f3d8e-2a57-4f0e-9d53-5d2b7c1e9a10",
  "source": "app-work-client",
  "type": "io.open-cluster-management.works.v1alpha1.manifestbundles.spec.delete_request",
  "time": "2026-06-02T08:00:00.412399871Z",
  "clustername": "cluster1",
  "deletiontimestamp": "2026-06-02T08:00:00.412345678Z",
  "logtracing": "{}",
  "metadata": "{\"name\":\"openshift-gitops-guestbook-cluster1\",\"namespace\":\"cluster1\",\"uid\":\"278f3a61-efe5-56de-abba-6aedbfcce272\",\"resourceVersion\":\"1\",\"generation\":1,\"creationTimestamp\":\"2026-06-01T10:00:00Z\",\"deletionTimestamp\":\"2026-06-02T08:00:00Z\"}",
  "originalsource": "",
  "resourceid": "278f3a61-efe5-56de-abba-6aedbfcce272",
  "resourceversion": 1
})json";

// §2.8: status resync request a source sends to Maestro.
inline constexpr std::string_view kStatusResyncRequestJson = R"json({
  "specversion": "1.0",
  "id": "6a8c1f5e-1b2d-4c3e-8f90-a1b2c3d4e5f6",
  "source": "app-work-client",
  "type": "io.open-cluster-management.works.v1alpha1.manifestbundles.status.resync_request",
  "datacontenttype": "application/json",
  "time": "2026-06-02T09:00:00Z",
  "data": { "statusHashes": [ { "resourceID": "278f3a61-efe5-56de-abba-6aedbfcce272",
                                "statusHash": "dbf99aec0396d2c106981a0ca97a8915b37bfff4308fd9b8dbcde22b21fa9c9e" } ] },
  "clustername": "",
  "originalsource": ""
})json";

// §2.8: spec resync request an agent sends.
inline constexpr std::string_view kSpecResyncRequestJson = R"json({
  "specversion": "1.0",
  "id": "d2f0a9b4-7c1e-4b8a-9e3f-0a1b2c3d4e5f",
  "source": "cluster1-work-agent",
  "type": "io.open-cluster-management.works.v1alpha1.manifestbundles.spec.resync_request",
  "datacontenttype": "application/json",
  "time": "2026-06-02T09:00:00Z",
  "data": { "resourceVersions": [ { "resourceID": "278f3a61-efe5-56de-abba-6aedbfcce272", "resourceVersion": 1 } ] },
  "clustername": "cluster1",
  "originalsource": ""
})json";

}  // namespace mmi::cloudevents::testing
