"""Generate spec/vectors/a2a.json: one bundle as A2A Artifacts and Messages, and artifacts every reader refuses.

The bundle is made the way `generate.py` makes the bundle vectors (fixed seeds, a fixed
created time and nonce, deterministic Ed25519), reusing its helpers, so running this
again gives the same bytes. The A2A shapes are written out here by hand from the format
(every file a bytes part, the manifest first, the gage metadata object of strings under
the extension URI), not by calling gage's exporter: the tests then hold gage's export
against these objects, so the vectors check the code rather than copy it.

    python spec/vectors/generate_a2a.py          # rewrite a2a.json
    python spec/vectors/generate_a2a.py --check  # exit 1 if the file is out of date
"""

from __future__ import annotations

import base64
import copy
import hashlib
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "a2a.json"


def _load_base() -> ModuleType:
    """generate.py by path: spec/vectors is not a package, and putting it on sys.path
    would let its module name shadow another `generate`."""
    spec = importlib.util.spec_from_file_location("gage_vectors_generate", HERE / "generate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


base = _load_base()

EXTENSION_URI = "urn:gage:a2a:bundle:v1"
MANIFEST_PART = "manifest.json"
SIGNATURE_PART = "manifest.sig"
MANIFEST_MEDIA_TYPE = "application/vnd.gage.manifest+json"
SIGNATURE_MEDIA_TYPE = "application/vnd.gage.signature"
# The fixed table's entries this bundle needs; everything else is application/octet-stream.
MEDIA_TYPES = {".txt": "text/plain", ".md": "text/markdown"}
NONCE = "a2a0a2a0a2a0a2a0a2a0a2a0a2a0a2a0"
MESSAGE_ID = "gage-vector-message-1"

# An empty file, a file holding every byte value (its base64 has '+', '/' and '=='
# padding, which the base64 refusals below need), a nested folder and a non-ASCII name
# (written with escapes, so it is NFC whatever the editor does).
FILES: list[tuple[str, bytes]] = [
    ("hello.txt", b"hello, bob\n"),
    ("docs/empty.bin", b""),
    ("docs/deeper/notes.md", b"# Notes\n\nline two\n"),
    ("data/every-byte.bin", bytes(range(256))),
    ("Gr\u00fc\u00dfe/\u00fcn\u00efc\u00f6d\u00e9 \u2713.txt", "Gr\u00fc\u00dfe \u2713\n".encode()),
]


def media_type(path: str) -> str:
    suffix = path[path.rfind(".") :].lower() if "." in path.rsplit("/", 1)[-1] else ""
    return MEDIA_TYPES.get(suffix, "application/octet-stream")


def the_bundle() -> dict[str, Any]:
    alice, bob = base.signing_key("alice"), base.signing_key("bob")
    obj = base.manifest_obj(
        alice, "alice", FILES, to=[{"key": base.key_text(bob), "name": "bob"}], subject="over A2A", nonce=NONCE
    )
    raw = base.canonical(obj)
    sig = base.sign(alice, raw)
    bid = hashlib.sha256(base.ID_CONTEXT + raw).hexdigest()
    listed = [f["path"] for f in obj["files"]]  # the manifest's own order: the order of the parts
    contents = dict(FILES)
    return {
        "id": bid,
        "sender_seed_label": "alice",
        "sender_key": base.key_text(alice),
        "manifest_b64": base.b64(raw),
        "signature_b64": base.b64(sig),
        "files": [{"path": p, "content_b64": base.b64(contents[p])} for p in listed],
    }


def _files_of(bundle: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(part filename, media type, base64), the manifest first, then the signature, then the payload in manifest order."""
    out = [
        (MANIFEST_PART, MANIFEST_MEDIA_TYPE, bundle["manifest_b64"]),
        (SIGNATURE_PART, SIGNATURE_MEDIA_TYPE, bundle["signature_b64"]),
    ]
    out += [("payload/" + f["path"], media_type(f["path"]), f["content_b64"]) for f in bundle["files"]]
    return out


def parts(bundle: dict[str, Any], protocol: str) -> list[dict[str, Any]]:
    if protocol == "1.0":
        return [{"raw": data, "filename": name, "mediaType": mt} for name, mt, data in _files_of(bundle)]
    return [{"kind": "file", "file": {"bytes": data, "name": name, "mimeType": mt}} for name, mt, data in _files_of(bundle)]


def gage_meta(bundle: dict[str, Any], claims: dict[str, str] | None = None) -> dict[str, str]:
    meta = {"version": "1", "kind": "bundle", "bundle": bundle["id"], "manifest": MANIFEST_PART, "signature": SIGNATURE_PART}
    meta.update(claims or {})
    return meta


def artifact(bundle: dict[str, Any], protocol: str) -> dict[str, Any]:
    return {
        "artifactId": bundle["id"],
        "name": f"gage bundle {bundle['id'][:12]}",
        "description": (
            "A signed gage bundle (share). Its manifest, signature and files are bytes parts; "
            "verify it with gage: nothing in this artifact is trusted because of how it arrived."
        ),
        "parts": parts(bundle, protocol),
        "metadata": {EXTENSION_URI: gage_meta(bundle)},
        "extensions": [EXTENSION_URI],
    }


def claims(bundle: dict[str, Any]) -> dict[str, str]:
    return {"from_name": "alice", "from_key": bundle["sender_key"]}


def message(bundle: dict[str, Any], protocol: str) -> dict[str, Any]:
    msg: dict[str, Any] = {"kind": "message"} if protocol == "0.3" else {}
    msg.update(
        {
            "messageId": MESSAGE_ID,
            "role": "ROLE_USER" if protocol == "1.0" else "user",
            "parts": parts(bundle, protocol),
            "metadata": {EXTENSION_URI: gage_meta(bundle, claims(bundle))},
            "extensions": [EXTENSION_URI],
        }
    )
    return msg


# --- refused artifacts -----------------------------------------------------------------


def _index(art: dict[str, Any], name: str, protocol: str) -> int:
    for i, p in enumerate(art["parts"]):
        got = p.get("filename") if protocol == "1.0" else p.get("file", {}).get("name")
        if got == name:
            return i
    raise KeyError(name)


def _set_b64(art: dict[str, Any], i: int, protocol: str, text: str) -> None:
    if protocol == "1.0":
        art["parts"][i]["raw"] = text
    else:
        art["parts"][i]["file"]["bytes"] = text


def _b64_field(i: int, protocol: str) -> str:
    return f"(top).parts[{i}].raw" if protocol == "1.0" else f"(top).parts[{i}].file.bytes"


def noncanonical_b64(text: str) -> str:
    """The same bytes with non-zero spare bits: flip the lowest bit of the last data character."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    stripped = text.rstrip("=")
    assert len(stripped) < len(text), "needs a padded encoding"
    last = alphabet[alphabet.index(stripped[-1]) ^ 1]
    return stripped[:-1] + last + text[len(stripped) :]


def refused(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    every = "payload/data/every-byte.bin"
    empty = "payload/docs/empty.bin"
    notes = "payload/docs/deeper/notes.md"
    raw_manifest = base64.b64decode(bundle["manifest_b64"])
    order = [MANIFEST_PART, SIGNATURE_PART] + ["payload/" + f["path"] for f in bundle["files"]]
    notes_text = b"# Notes\n\nline two\n".decode()

    def add(
        name: str,
        description: str,
        protocol: str | None,
        change: Callable[[dict[str, Any], str], Any],
        stage: str,
        field: str | None,
        *,
        start: str = "1.0",
        max_bytes: int | None = None,
    ) -> None:
        art = copy.deepcopy(artifact(bundle, start))
        replaced = change(art, start)
        case: dict[str, Any] = {
            "name": name,
            "description": description,
            "protocol": protocol,
            "artifact": art if replaced is None else replaced,
            "error": {"stage": stage, "field": field},
        }
        if max_bytes is not None:
            case["max_bytes"] = max_bytes
        cases.append(case)

    def both(name: str, description: str, change: Callable[[dict[str, Any], str], Any], stage: str, field: Callable[[str], str | None]) -> None:
        for protocol in ("1.0", "0.3"):
            add(f"{name}-{protocol}", description, protocol, change, stage, field(protocol), start=protocol)

    # What a part may be.
    def manifest_as_data(art: dict[str, Any], p: str) -> None:
        value = json.loads(raw_manifest)
        art["parts"][0] = {"data": value, "filename": MANIFEST_PART} if p == "1.0" else {"kind": "data", "data": value}

    both("manifest-data-part", "the manifest as a data part (parsed JSON a hop may re-serialise)", manifest_as_data, "refused", lambda p: "(top).parts[0]")

    def manifest_as_text(art: dict[str, Any], p: str) -> None:
        text = raw_manifest.decode()
        art["parts"][0] = {"text": text, "filename": MANIFEST_PART, "mediaType": MANIFEST_MEDIA_TYPE} if p == "1.0" else {"kind": "text", "text": text}

    both("manifest-text-part", "the manifest as a text part", manifest_as_text, "refused", lambda p: "(top).parts[0]")

    def payload_as_text(art: dict[str, Any], p: str) -> None:
        i = _index(art, notes, p)
        art["parts"][i] = {"text": notes_text, "filename": notes, "mediaType": "text/markdown"} if p == "1.0" else {"kind": "text", "text": notes_text}

    both("payload-text-part", "a payload file as a text part", payload_as_text, "refused", lambda p: f"(top).parts[{order.index(notes)}]")

    def url_part(art: dict[str, Any], p: str) -> None:
        i = _index(art, notes, p)
        url = "http://127.0.0.1:9/notes.md"
        art["parts"][i] = {"url": url, "filename": notes, "mediaType": "text/markdown"} if p == "1.0" else {"kind": "file", "file": {"uri": url, "name": notes}}

    both(
        "url-part",
        "a payload file by reference (1.0 url, 0.3 file.uri): refused, never fetched",
        url_part,
        "refused",
        lambda p: f"(top).parts[{order.index(notes)}]" + ("" if p == "1.0" else ".file"),
    )

    # Which parts there are.
    def drop(name: str) -> Callable[[dict[str, Any], str], None]:
        def change(art: dict[str, Any], p: str) -> None:
            del art["parts"][_index(art, name, p)]

        return change

    add("missing-manifest", "no manifest.json part", "1.0", drop(MANIFEST_PART), "malformed", "(top).parts")
    add("missing-signature", "no manifest.sig part", "1.0", drop(SIGNATURE_PART), "malformed", "(top).parts")
    add("missing-payload", "no part for a file the manifest lists", "1.0", drop(notes), "malformed", "(top).parts")

    def duplicate(art: dict[str, Any], p: str) -> None:
        art["parts"].append(copy.deepcopy(art["parts"][_index(art, notes, p)]))

    add("duplicate-part", "the same file twice", "1.0", duplicate, "malformed", f"(top).parts[{len(order)}]")

    def extra(name: str) -> Callable[[dict[str, Any], str], None]:
        def change(art: dict[str, Any], p: str) -> None:
            art["parts"].append({"raw": base.b64(b"x\n"), "filename": name, "mediaType": "text/plain"})

        return change

    add("unknown-part", "a part the manifest does not list", "1.0", extra("payload/extra.txt"), "malformed", "(top).parts")
    for label, name in (
        ("dotdot-payload", "payload/../x"),
        ("dotdot-manifest", "../manifest.json"),
        ("absolute", "/etc/passwd"),
        ("dotdot-nested", "payload/a/../../b"),
    ):
        add(f"escape-{label}", f"a part named {name!r}, which would leave the bundle", "1.0", extra(name), "malformed", "(top).parts")

    # Base64.
    def b64_change(fn: Callable[[str], str], target: str = every) -> Callable[[dict[str, Any], str], None]:
        def change(art: dict[str, Any], p: str) -> None:
            i = _index(art, target, p)
            text = art["parts"][i]["raw"] if p == "1.0" else art["parts"][i]["file"]["bytes"]
            _set_b64(art, i, p, fn(text))

        return change

    every_index = order.index(every)
    for label, description, fn in (
        ("base64-urlsafe", "the URL-safe alphabet ('-' and '_' for '+' and '/')", lambda t: t.replace("+", "-").replace("/", "_")),
        ("base64-unpadded", "base64 without its '=' padding", lambda t: t.rstrip("=")),
        ("base64-newline", "base64 broken by a newline", lambda t: t[:76] + "\n" + t[76:]),
        ("base64-noncanonical", "base64 with non-zero spare bits (decodes to the same bytes in lenient decoders)", noncanonical_b64),
    ):
        both(label, description, b64_change(fn), "malformed", lambda p, i=every_index: _b64_field(i, p))

    # The gage metadata object.
    def meta(fn: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any], str], None]:
        def change(art: dict[str, Any], p: str) -> None:
            fn(art["metadata"][EXTENSION_URI])

        return change

    add("meta-version", "format version '2'", "1.0", meta(lambda m: m.update(version="2")), "refused", "(top).metadata[gage].version")
    add("meta-kind", "object kind 'tree'", "1.0", meta(lambda m: m.update(kind="tree")), "refused", "(top).metadata[gage].kind")
    add("meta-number", "a number where a string belongs (A2A carries metadata as a protobuf Struct: numbers become doubles)", "1.0", meta(lambda m: m.update(version=1)), "malformed", "(top).metadata[gage].version")
    add("meta-unknown-field", "a field version 1 does not define", "1.0", meta(lambda m: m.update(trust="yes")), "malformed", "(top).metadata[gage]")

    def no_extension(art: dict[str, Any], p: str) -> None:
        art["extensions"] = []

    add("meta-without-extension", "gage metadata, but the extension URI is not listed", "1.0", no_extension, "malformed", "(top).extensions")

    def no_meta(art: dict[str, Any], p: str) -> None:
        del art["metadata"][EXTENSION_URI]

    add("extension-without-meta", "the extension URI listed, but no gage metadata", "1.0", no_meta, "malformed", "(top).metadata")

    # Sizes.
    add(
        "part-over-declared-size",
        "a part longer than the size the manifest declares for it",
        "1.0",
        b64_change(lambda t: base.b64(b"x"), target=empty),
        "refused",
        "(top).parts",
    )
    total = len(raw_manifest) + len(base64.b64decode(bundle["signature_b64"])) + sum(len(base64.b64decode(f["content_b64"])) for f in bundle["files"])
    add(
        "over-max-bytes",
        "a receiver whose limit (max_bytes) is one byte under what the artifact carries",
        "1.0",
        lambda art, p: None,
        "refused",
        None,
        max_bytes=total - 1,
    )

    # Shapes.
    def mixed(art: dict[str, Any], p: str) -> None:
        part = art["parts"][1]
        art["parts"][1] = {"kind": "file", "file": {"bytes": part["raw"], "name": part["filename"], "mimeType": part["mediaType"]}}

    add("mixed-protocols", "a 1.0 artifact with one 0.3 part", None, mixed, "malformed", "(top)")
    add("not-a2a", "an object that is no Artifact, Message or Task", None, lambda art, p: {"bundle": bundle["id"]}, "malformed", "(top)")

    def not_a_manifest(art: dict[str, Any], p: str) -> None:
        _set_b64(art, 0, p, base.b64(b'{"hello": "world"}'))

    add("manifest-not-gage", "a manifest.json part that is not a gage manifest", "1.0", not_a_manifest, "malformed", "(top).parts")
    return cases


def build() -> dict[str, Any]:
    bundle = the_bundle()
    return {
        "about": (
            "A gage bundle carried over A2A (protocol 1.0 and 0.3), and artifacts every reader must refuse. "
            "Every bundle file travels as a bytes part (1.0 raw, 0.3 file.bytes) named by its path in the bundle "
            f"(manifest.json, manifest.sig, payload/...), in standard padded canonical base64; metadata[{EXTENSION_URI!r}] "
            "is a closed object of strings (version, kind, bundle, manifest, signature; from_name, from_key, from_card "
            "as transport claims) and extensions lists the URI. The bundle id comes from the manifest bytes, never from "
            "the metadata. A refused case's error.stage is the error class (malformed or refused); error.field is the "
            "field gage's error names, or null where it depends on the reader; max_bytes, when given, is the receiver's limit. "
            "Seeds, created time and sorting are as in bundles.json."
        ),
        "extension_uri": EXTENSION_URI,
        "bundle": bundle,
        "artifact": {p: artifact(bundle, p) for p in ("1.0", "0.3")},
        "message": {
            "message_id": MESSAGE_ID,
            "claims": claims(bundle),
            "1.0": message(bundle, "1.0"),
            "0.3": message(bundle, "0.3"),
        },
        "refused": refused(bundle),
    }


def render() -> str:
    return json.dumps(build(), indent=2, ensure_ascii=True) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if OUT.read_text("utf-8") != text:
            print(f"{OUT} is out of date: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, "utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
