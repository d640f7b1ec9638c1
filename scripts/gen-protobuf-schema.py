#!/usr/bin/env python3
"""Writes apiserver/src/core/protobuf_schema.inc: the protobuf schema of the built-in kinds the
embedded API server decodes (message -> field number -> JSON name, type, nested message, flags).

The facts come from the Go struct tags of k8s.io/api and k8s.io/apimachinery (each field's
`protobuf:"<wire>,<number>,..."` and `json:"<name>,omitempty"` tags, and whether its Go type is a
pointer), which say everything the decoder needs, including when Go's JSON encoding omits a zero.

Usage: gen-protobuf-schema.py <k8s.io/api git dir> <k8s.io/apimachinery git dir> > FILE
(git dirs as the `fetch` tool or `git clone --bare` leave them; HEAD is read).
"""
import re
import subprocess
import sys

# The kinds decoded, by package; every message reachable from them is written.
ROOTS = {
    "core/v1": ["Pod", "ConfigMap", "Secret", "Service", "ServiceAccount", "Namespace", "Event",
                "ResourceQuota"],
    "apps/v1": ["Deployment", "ReplicaSet"],
    "batch/v1": ["Job", "CronJob"],
    "rbac/v1": ["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"],
    "networking/v1": ["Ingress"],
    "policy/v1": ["PodDisruptionBudget"],
    "scheduling/v1": ["PriorityClass"],
    "coordination/v1": ["Lease"],
    "events/v1": ["Event"],
    "admissionregistration/v1": ["MutatingWebhookConfiguration",
                                 "ValidatingWebhookConfiguration"],
}

# Types with their own wire form, decoded by hand (protobuf.cpp).
SPECIAL = {
    "meta/v1.Time": "Time",
    "meta/v1.MicroTime": "MicroTime",
    "meta/v1.Duration": "Duration",
    "meta/v1.FieldsV1": "RawJson",
    "resource.Quantity": "Quantity",
    "intstr.IntOrString": "IntOrString",
    "runtime.RawExtension": "RawJson",
}

IMPORTS = {
    "k8s.io/apimachinery/pkg/apis/meta/v1": "meta/v1",
    "k8s.io/apimachinery/pkg/api/resource": "resource",
    "k8s.io/apimachinery/pkg/util/intstr": "intstr",
    "k8s.io/apimachinery/pkg/runtime": "runtime",
    "k8s.io/apimachinery/pkg/types": "types",
}


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir=" + gitdir, *args], check=True,
                          capture_output=True, text=True).stdout


class Package:
    def __init__(self, key, sources):
        self.key = key
        self.structs = {}  # name -> [(go_name, go_type, json_tag, proto_tag)]
        self.named = {}    # name -> underlying type expression
        self.imports = {}  # alias -> package key
        for text in sources:
            self.parse(text)

    def parse(self, text):
        aliases = {}
        for alias, path in re.findall(r'^\s*(?:import\s+)?(\w+)?\s*"(k8s\.io/[^"]+)"', text, re.M):
            if path.startswith("k8s.io/api/"):
                key = path[len("k8s.io/api/"):]
            else:
                key = IMPORTS.get(path)
            if key:
                aliases[alias or path.rsplit("/", 1)[-1]] = key
        self.imports.update(aliases)
        for name, body in re.findall(r"^type (\w+) struct \{\n(.*?)^\}", text, re.M | re.S):
            fields = []
            for line in body.splitlines():
                m = re.match(r"^\t(?:(\w+)\s+)?([\w.\*\[\]]+)\s+`([^`]*)`", line)
                if not m:
                    continue
                tags = dict(re.findall(r'(\w+):"([^"]*)"', m.group(3)))
                if "protobuf" not in tags:
                    continue
                fields.append((m.group(1), m.group(2), tags.get("json", ""), tags["protobuf"]))
            self.structs[name] = fields
        for name, underlying in re.findall(r"^type (\w+) ([\w.\*\[\]]+)\s*$", text, re.M):
            self.named[name] = underlying


def load(gitdir, directory, key):
    names = git(gitdir, "ls-tree", "--name-only", "HEAD", directory + "/").split()
    sources = [git(gitdir, "show", "HEAD:" + n) for n in names
               if n.endswith(".go") and not n.endswith("_test.go")]
    return Package(key, sources)


def main():
    api, machinery = sys.argv[1], sys.argv[2]
    class Packages(dict):
        def __missing__(self, key):  # packages of k8s.io/api load when first referenced
            if key == "meta/v1":
                self[key] = load(machinery, "pkg/apis/meta/v1", "meta/v1")
            elif key in ("resource", "intstr", "runtime", "types"):
                return None
            else:
                self[key] = load(api, key, key)
            return self[key]

    packages = Packages()

    def resolve(pkg, expr):
        """Returns (kind, message) of a Go type expression without * or []."""
        if "." in expr:
            alias, name = expr.split(".", 1)
            key = pkg.imports.get(alias, alias)
        else:
            key, name = pkg.key, expr
        qualified = key + "." + name
        if qualified in SPECIAL:
            return SPECIAL[qualified], ""
        if key == "types":
            return "String", ""
        target = packages[key]
        if target is None:
            raise SystemExit(f"unknown package of {expr} in {pkg.key}")
        if name in target.structs:
            return "Message", qualified
        underlying = target.named.get(name)
        if underlying is not None and not underlying.startswith("map["):
            return scalar(target, underlying)
        if underlying is not None:
            return "Map", underlying
        return scalar(target, name)

    def scalar(pkg, expr):
        if expr in ("string",):
            return "String", ""
        if expr in ("int32", "int64", "int", "uint32", "uint64", "int16"):
            return "Int", ""
        if expr == "bool":
            return "Bool", ""
        if expr == "float64":
            return "Double", ""
        if expr == "[]byte":
            return "Bytes", ""
        if "." in expr or expr in pkg.structs or expr in pkg.named:
            return resolve(pkg, expr)
        raise SystemExit(f"unknown type {expr} in {pkg.key}")

    rows = {}
    queue = [f"{key}.{kind}" for key, kinds in ROOTS.items() for kind in kinds]
    while queue:
        qualified = queue.pop()
        if qualified in rows:
            continue
        key, name = qualified.rsplit(".", 1)
        pkg = packages[key]
        out = []
        for go_name, go_type, json_tag, proto_tag in pkg.structs[name]:
            parts = json_tag.split(",")
            json_name, options = parts[0], parts[1:]
            number = int(proto_tag.split(",")[1])
            flags = []
            expr = go_type
            pointer = expr.startswith("*")
            expr = expr.lstrip("*")
            if expr.startswith("[]") and expr != "[]byte":
                flags.append("kRepeated")
                expr = expr[2:].lstrip("*")
            kind, message = (scalar(pkg, expr) if not expr.startswith("map[") else ("Map", expr))
            if kind == "Map":
                value = re.sub(r"^map\[[^\]]+\]", "", message)
                flags.append("kMap")
                kind, message = scalar(pkg, value.lstrip("*"))
            if json_name == "":  # an embedded struct: Go's JSON lifts its fields
                flags.append("kInline")
            if pointer or "omitempty" not in options:
                flags.append("kKeepZero")
            if json_name == "-":
                continue
            out.append((number, json_name, kind, message, flags))
            if message:
                queue.append(message)
        rows[qualified] = out

    api_head = git(api, "rev-parse", "HEAD").strip()
    machinery_head = git(machinery, "rev-parse", "HEAD").strip()
    print("// Generated by scripts/gen-protobuf-schema.py from the Go struct tags of")
    print(f"// k8s.io/api {api_head} and")
    print(f"// k8s.io/apimachinery {machinery_head}; do not edit.")
    print("// {message, field number, JSON name, type, nested message, flags}")
    for qualified in sorted(rows):
        for number, json_name, kind, message, flags in sorted(rows[qualified]):
            flag_text = " | ".join(flags) if flags else "0"
            print(f'{{"{qualified}", {number}, "{json_name}", T::{kind}, "{message}", '
                  f"{flag_text}}},")


if __name__ == "__main__":
    main()
