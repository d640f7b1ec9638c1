"""Create, list, get, patch and delete a ConfigMap with the official Python client."""
from kubernetes import client

from client_setup import api_client, check

core = client.CoreV1Api(api_client())
name = "py-crud"
created = core.create_namespaced_config_map(
    "default",
    client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels={"app": "py"}),
                       data={"k": "v1"}))
check(created.metadata.uid, "created object has a uid")
check(created.metadata.resource_version, "created object has a resourceVersion")

listed = core.list_namespaced_config_map("default", label_selector="app=py")
check([cm.metadata.name for cm in listed.items] == [name], "list by label finds the object")
check(listed.metadata.resource_version, "list has a resourceVersion")

patched = core.patch_namespaced_config_map(name, "default", {"data": {"k": "v2"}})
check(patched.data == {"k": "v2"}, "merge patch changed data")
check(int(patched.metadata.resource_version) > int(created.metadata.resource_version),
      "patch bumped the resourceVersion")

got = core.read_namespaced_config_map(name, "default")
check(got.data == {"k": "v2"}, "read sees the patch")

core.delete_namespaced_config_map(name, "default")
try:
    core.read_namespaced_config_map(name, "default")
    raise SystemExit("check failed: object still readable after delete")
except client.ApiException as e:
    check(e.status == 404, "read after delete is 404, got %s" % e.status)
print("crud ok")
