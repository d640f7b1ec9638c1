"""How the Python-client test scripts connect: the kubeconfig in $KUBECONFIG, or (for
client-certificate tests) $KOPF_TEST_HOST with $KOPF_TEST_CA, $KOPF_TEST_CERT, $KOPF_TEST_KEY."""
import os

from kubernetes import client, config


def api_client():
    if os.environ.get("KOPF_TEST_CERT"):
        configuration = client.Configuration()
        configuration.host = os.environ["KOPF_TEST_HOST"]
        configuration.ssl_ca_cert = os.environ["KOPF_TEST_CA"]
        configuration.cert_file = os.environ["KOPF_TEST_CERT"]
        configuration.key_file = os.environ["KOPF_TEST_KEY"]
        return client.ApiClient(configuration)
    return config.new_client_from_config(config_file=os.environ["KUBECONFIG"])


def check(condition, message):
    if not condition:
        raise SystemExit("check failed: " + message)
