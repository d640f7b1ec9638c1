"""API errors reach the Python client as ApiException with the Kubernetes status."""
import json

from kubernetes import client

from client_setup import api_client, check

core = client.CoreV1Api(api_client())
try:
    core.read_namespaced_config_map("missing", "default")
    raise SystemExit("check failed: reading a missing object succeeded")
except client.ApiException as e:
    check(e.status == 404, "missing object is 404, got %s" % e.status)
    check(json.loads(e.body)["reason"] == "NotFound", "reason NotFound")
print("errors ok")
