"""The official A2A definitions as validators: the 0.3 JSON schema and the 1.0 proto (tests/a2a_official/).

`valid_03(definition, obj)` validates a JSON object against a definition of the 0.3 schema;
`parse_10(message, obj)` parses one with the 1.0 proto strictly (protobuf's json_format,
unknown fields refused) into a descriptor pool compiled here from the official proto, and
returns what it prints back, so a caller can compare. See tests/a2a_official/SOURCE.md.
"""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "a2a_official"
SCHEMA_03 = HERE / "a2a-v0.3.0.schema.json"
PROTO_10 = HERE / "a2a-v1.0.1.proto"
PACKAGE_10 = "lf.a2a.v1"


@functools.cache
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_03.read_text("utf-8"))


def valid_03(definition: str, obj: Any) -> None:
    """Raise jsonschema.ValidationError unless `obj` is a valid 0.3 `definition`."""
    import jsonschema

    schema = {**_schema(), "$ref": f"#/definitions/{definition}"}
    jsonschema.Draft7Validator(schema).validate(obj)


@functools.cache
def _pool() -> Any:
    import grpc_tools
    from google.protobuf import descriptor_pb2, descriptor_pool
    from grpc_tools import protoc

    includes = [Path(grpc_tools.__file__).parent / "_proto"]
    import google.api

    includes.append(Path(google.api.__path__[0]).parent.parent)  # googleapis-common-protos: google/api, google/rpc
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "a2a.pb"
        args = ["protoc", f"-I{HERE}", *(f"-I{i}" for i in includes), "--include_imports", f"--descriptor_set_out={out}", PROTO_10.name, "google/rpc/error_details.proto"]
        if protoc.main(args) != 0:
            raise RuntimeError("protoc could not compile the official a2a.proto")
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return pool


def parse_10(message: str, obj: Any) -> dict[str, Any]:
    """Parse `obj` as the 1.0 `message` (e.g. "AgentCard"), strictly; what it prints back."""
    from google.protobuf import json_format, message_factory

    pool = _pool()
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE_10}.{message}"))
    msg = cls()
    json_format.Parse(json.dumps(obj), msg, ignore_unknown_fields=False, descriptor_pool=pool)
    return json_format.MessageToDict(msg, descriptor_pool=pool)


def parse_any_10(obj: Any) -> dict[str, Any]:
    """Parse `obj` as a ProtoJSON `google.protobuf.Any` whose `@type` the pool knows, strictly."""
    from google.protobuf import any_pb2, json_format

    pool = _pool()
    msg = any_pb2.Any()
    json_format.Parse(json.dumps(obj), msg, ignore_unknown_fields=False, descriptor_pool=pool)
    return json_format.MessageToDict(msg, descriptor_pool=pool)
