"""Schema checks of rendered Kubernetes objects: the Kubernetes API's own objects against
its JSON schemas (kubernetes-validate, which bundles them, strict: an unknown field is an
error, as the API server's ``fieldValidation=Strict`` makes it), a KEDA ``ScaledObject``
against KEDA's CRD, and a KEDA Kafka trigger's metadata against the settings KEDA's
Kafka scaler declares."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import kubernetes_validate
import yaml

K8S_VERSION = "1.30"
"""The oldest Kubernetes the manifests are for (its schemas are the strictest test: no
field that came later)."""
CRD_FILES = {"ScaledObject": "keda.sh_scaledobjects.yaml"}
"""KEDA's CRDs by kind, in ``config/crd/bases`` of the ``github.com/kedacore/keda/v2``
module."""
KAFKA_SCALER = "pkg/scalers/kafka_scaler.go"
"""The source of KEDA's Kafka scaler, whose metadata struct tags declare its settings."""
TAG = re.compile(r'keda:"name=(?P<name>[A-Za-z]+),order=(?P<order>[^,"]+)(?P<rest>[^"]*)"')
"""``keda:"name=lagThreshold,order=triggerMetadata,default=10"``: KEDA's declarative
scaler config (``pkg/scalers/scalersconfig``)."""


def k8s_errors(obj: Mapping[str, Any], version: str = K8S_VERSION) -> list[str]:
    """Why ``obj`` does not validate against Kubernetes ``version``'s strict schema
    (``[]``: it does).

    Raises:
        kubernetes_validate.SchemaNotFoundError: no schema for its kind (not an object
            of the Kubernetes API itself, or a misspelled kind or apiVersion).
    """
    try:
        kubernetes_validate.validate(dict(obj), version, strict=True)
    except kubernetes_validate.ValidationError as e:
        where = ".".join(str(p) for p in e.path)
        return [f"{obj['kind']}/{obj['metadata']['name']}: {where}: {e.message}"]
    return []


def _strict(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object that lists its
    properties and neither says what else it takes nor keeps unknown fields
    (``x-kubernetes-preserve-unknown-fields``): the API server prunes or, strict,
    refuses such fields (Kubernetes, "CustomResourceDefinition", structural schemas)."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


@cache
def crd_validator(keda_dir: str, kind: str, version: str) -> jsonschema_rs.Validator:
    """A validator of ``kind``'s ``version`` (``v1alpha1``), from KEDA's own CRD, strict.

    Raises:
        KeyError: the CRD has no such version.
    """
    path = Path(keda_dir) / "config" / "crd" / "bases" / CRD_FILES[kind]
    crd = yaml.safe_load(path.read_text())
    schemas = {v["name"]: v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"]}
    schema = _strict(copy.deepcopy(schemas[version]))
    # metadata is the API server's ObjectMeta, not the CRD's to describe.
    schema["properties"]["metadata"] = {"type": "object"}
    return jsonschema_rs.Draft4Validator(schema)


def crd_errors(keda_dir: str, obj: Mapping[str, Any]) -> list[str]:
    """Why a KEDA object does not validate against its CRD (``[]``: it does)."""
    group_version = obj["apiVersion"].split("/")
    validator = crd_validator(keda_dir, obj["kind"], group_version[-1])
    return [f"{obj['kind']}/{obj['metadata']['name']}: {'.'.join(map(str, e.instance_path))}:"
            f" {e.message}" for e in validator.iter_errors(dict(obj))]


@cache
def kafka_trigger_settings(keda_dir: str) -> dict[str, tuple[str, ...]]:
    """The settings a Kafka trigger's ``metadata`` may hold: ``{name: allowed values}``
    (``()``: any), from the struct tags of KEDA's Kafka scaler. A setting read from the
    environment (``order=...resolvedEnv``) may also be given as ``<name>FromEnv``.

    Raises:
        ValueError: the source declares no setting (KEDA changed how it declares them).
    """
    source = (Path(keda_dir) / KAFKA_SCALER).read_text()
    found: dict[str, tuple[str, ...]] = {}
    for m in TAG.finditer(source):
        orders = m["order"].split(";")
        enum = re.search(r"enum=([^,]+)", m["rest"])
        allowed = tuple(enum[1].split(";")) if enum else ()
        if "triggerMetadata" in orders:
            found[m["name"]] = allowed
        if "resolvedEnv" in orders:
            found[f"{m['name']}FromEnv"] = ()
    if not found:
        raise ValueError(f"{KAFKA_SCALER}: no keda:\"name=...\" tags found")
    return found


def kafka_trigger_errors(keda_dir: str, metadata: Mapping[str, str]) -> list[str]:
    """Why a Kafka trigger's ``metadata`` is not what KEDA's Kafka scaler takes: unknown
    names, values outside a setting's enum, values that are not strings (``[]``: none)."""
    settings = kafka_trigger_settings(keda_dir)
    errors = []
    for name, value in metadata.items():
        if name not in settings:
            errors.append(f"{name}: not a setting of KEDA's Kafka scaler")
        elif not isinstance(value, str):
            errors.append(f"{name}: {value!r} is not a string")
        elif settings[name] and value not in settings[name]:
            errors.append(f"{name}: {value!r} is not one of {settings[name]}")
    return errors
