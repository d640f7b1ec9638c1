"""A wrong token is answered with 401 and the Unauthorized Status body."""
import json
import os

from kubernetes import client

from client_setup import api_client, check

api = api_client()
api.configuration.api_key = {"authorization": "Bearer wrong-token"}
core = client.CoreV1Api(api)
try:
    core.list_namespaced_config_map("default")
    raise SystemExit("check failed: a wrong token was accepted")
except client.ApiException as e:
    check(e.status == 401, "wrong token is 401, got %s" % e.status)
    check(json.loads(e.body)["message"] == "Unauthorized", "message Unauthorized")
print("unauthorized ok")
