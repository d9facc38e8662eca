"""Keep a schema as it is before changing it: ``python tests/unit/headwater/
retire_schema.py NAME...`` writes ``schemas/avro/retired/<NAME>.<fingerprint>.avsc``, the
schema ``NAME`` as it is now, fully inlined (``codec.inline``), named by its CRC-64-AVRO
fingerprint, as ``codec`` reads retired schemas; then prints the file's name for the list
in ``test_codec_retired.py``. Run it before the edit, from the checkout whose schema it
keeps (it imports this checkout's ``headwater``, whatever the virtualenv installed)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

import orjson  # noqa: E402
from fastavro.schema import (  # noqa: E402
    fingerprint,
    parse_schema,
    to_parsing_canonical_form,
)

from headwater import codec  # noqa: E402


def retire(name: str) -> Path:
    """Write the retired copy of the schema ``name`` as it is now; return its path."""
    docs = {p.stem: orjson.loads(p.read_bytes())
            for p in sorted(codec.schema_dir().glob("*.avsc"))}
    if name not in docs:
        raise SystemExit(f"no schema {name!r} in {codec.schema_dir()}")
    whole = codec.inline(docs[name], docs)
    fp = fingerprint(to_parsing_canonical_form(parse_schema(whole)), "CRC-64-AVRO")
    path = codec.schema_dir() / "retired" / f"{name}.{fp}.avsc"
    path.write_bytes(orjson.dumps(whole, option=orjson.OPT_INDENT_2) + b"\n")
    return path


if __name__ == "__main__":
    for schema_name in sys.argv[1:] or sys.exit(__doc__):
        print(retire(schema_name).name)
