"""Watch ConfigMaps from a resourceVersion: only later changes arrive, in order."""
from kubernetes import client, watch

from client_setup import api_client, check

core = client.CoreV1Api(api_client())


def make(name):
    return core.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name)))


first = make("before")
make("after-1")
make("after-2")
core.delete_namespaced_config_map("after-1", "default")

seen = []
stream = watch.Watch()
for event in stream.stream(core.list_namespaced_config_map, "default",
                           resource_version=first.metadata.resource_version, timeout_seconds=10):
    seen.append((event["type"], event["object"].metadata.name))
    if len(seen) == 3:
        stream.stop()
check(seen == [("ADDED", "after-1"), ("ADDED", "after-2"), ("DELETED", "after-1")],
      "events after the resourceVersion, got %r" % seen)
print("watch ok")
